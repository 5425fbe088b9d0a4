// Package netconf is the NetworkAttachmentDefinition udnkit writes for a
// UserDefinedNetwork or ClusterUserDefinedNetwork: the OVN-Kubernetes CNI
// NetConf its spec.config carries (Build and Render write it, Parse reads
// it), the one NAD renderer (NewNAD) and the ovn-kubernetes/default NAD
// stub's config. The names, IDs and ranges it renders are ovnk's.
package netconf

// This file renders a UserDefinedNetwork's or ClusterUserDefinedNetwork's
// spec as the OVN-Kubernetes CNI NetConf JSON that goes into a
// NetworkAttachmentDefinition's spec.config, field for field what
// ovn-kubernetes nodes parse.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
)

const (
	// CNIVersion is upstream's config.CNISpecVersion.
	CNIVersion = "1.1.0"
	// localnetMTUOverhead: a Localnet network without mtu gets the cluster
	// MTU plus the overlay's 100 bytes, since its underlay is not the overlay
	// (upstream's localnetMTU: 1500 by default).
	localnetMTUOverhead = 100
)

// NetConf is OVN-Kubernetes' CNI network configuration (ovncnitypes.NetConf),
// limited to what UDNs set. Upstream renders it from a map, so its keys come
// out sorted: the fields here are in the alphabetical order of their JSON
// keys, and json.Marshal writes the same bytes.
type NetConf struct {
	AllowPersistentIPs    bool   `json:"allowPersistentIPs,omitempty"`
	CNIVersion            string `json:"cniVersion"`
	DefaultGatewayIPs     string `json:"defaultGatewayIPs,omitempty"`
	EVPN                  *EVPN  `json:"evpn,omitempty"`
	ExcludeSubnets        string `json:"excludeSubnets,omitempty"`
	InfrastructureSubnets string `json:"infrastructureSubnets,omitempty"`
	JoinSubnet            string `json:"joinSubnet,omitempty"`
	MTU                   int32  `json:"mtu,omitempty"`
	Name                  string `json:"name"`
	NADName               string `json:"netAttachDefName"`
	OutboundSNAT          string `json:"outboundSNAT,omitempty"`
	PhysicalNetworkName   string `json:"physicalNetworkName,omitempty"`
	ReservedSubnets       string `json:"reservedSubnets,omitempty"`
	Role                  string `json:"role"`
	Subnets               string `json:"subnets,omitempty"`
	Topology              string `json:"topology"`
	TransitSubnet         string `json:"transitSubnet,omitempty"`
	Transport             string `json:"transport,omitempty"`
	Type                  string `json:"type"`
	Uplink                string `json:"uplink,omitempty"`
	VLANID                int32  `json:"vlanID,omitempty"`

	// mtuGiven says the config Parse read has an mtu key, 0 included.
	mtuGiven bool
}

// NetworkMTU is the network's MTU as upstream's NetInfo.MTU() has it: the
// config's mtu when it has the key, an explicit 0 included (the network then
// has no MTU: no ipv6_ra_configs mtu), else clusterMTU, since upstream's
// config/cni.go (parseNetConfSingle, parseNetConfList) unmarshals every NAD
// config over one that starts with the cluster's --mtu. Build writes mtu
// only when it is set, so a rendered config read back gives what it wrote.
func (nc *NetConf) NetworkMTU(clusterMTU int32) int32 {
	if nc.mtuGiven || nc.MTU != 0 {
		return nc.MTU
	}
	return clusterMTU
}

// EVPN is the NetConf's evpn object (upstream's cni types EVPNConfig); the
// VRFs' VIDs, which upstream's cluster manager allocates, are not rendered:
// udnkit does not implement EVPN (the network's TransportAccepted condition
// says so).
type EVPN struct {
	VTEP   string `json:"vtep"`
	MACVRF *VRF   `json:"macVRF,omitempty"`
	IPVRF  *VRF   `json:"ipVRF,omitempty"`
}

// VRF is one EVPN VRF of the NetConf.
type VRF struct {
	VNI         int32  `json:"vni"`
	RouteTarget string `json:"routeTarget,omitempty"`
}

// Transport values of the NetConf (upstream's types.NetworkTransport*).
const (
	TransportNoOverlay = "no-overlay"
	TransportEVPN      = "evpn"
)

// Options are the parts of the NetConf that do not come from the spec.
type Options struct {
	// NetworkName is `<namespace>_<name>` for a UDN, `cluster_udn_<name>` for a CUDN.
	NetworkName string
	// NADName is the NAD's `<namespace>/<name>`.
	NADName string
	// DefaultJoinSubnets are used for Primary networks without joinSubnets,
	// both families whatever the network's (as upstream renders them).
	DefaultJoinSubnets []netip.Prefix
	// ClusterMTU is the cluster's overlay MTU; 0 means DefaultMTU.
	ClusterMTU int32
	// TransitSubnets of a Primary Layer2 network (ovnk.TransitSubnets).
	TransitSubnets []netip.Prefix
	// Uplink is a CUDN's spec.uplinks[0].
	Uplink string
	// PredefinedAddresses renders reservedSubnets, infrastructureSubnets and
	// defaultGatewayIPs (feature preconfigured-udn-addresses-enable).
	PredefinedAddresses bool
}

// Build returns the NetConf of spec.
func Build(spec udnv1.NetworkSpec, o Options) (*NetConf, error) {
	if o.NetworkName == "" || o.NADName == "" {
		return nil, fmt.Errorf("network name and NAD name are required")
	}
	nc := &NetConf{
		CNIVersion: CNIVersion, Type: ovnk.PluginType, Name: o.NetworkName, NADName: o.NADName,
		Topology: strings.ToLower(string(spec.Topology)), Role: strings.ToLower(string(spec.Role())),
	}
	primary := spec.IsPrimary()
	switch spec.Topology {
	case udnv1.NetworkTopologyLayer3:
		c := spec.Layer3
		if c == nil {
			return nil, fmt.Errorf("spec.layer3 is required when topology is Layer3")
		}
		nc.MTU = c.MTU
		var subnets []string
		for _, s := range c.Subnets {
			if s.HostSubnet > 0 {
				subnets = append(subnets, fmt.Sprintf("%s/%d", s.CIDR, s.HostSubnet))
			} else {
				subnets = append(subnets, string(s.CIDR))
			}
		}
		nc.Subnets = strings.Join(subnets, ",")
	case udnv1.NetworkTopologyLayer2:
		c := spec.Layer2
		if c == nil {
			return nil, fmt.Errorf("spec.layer2 is required when topology is Layer2")
		}
		nc.MTU = c.MTU
		nc.Subnets = joinCIDRs(c.Subnets)
		nc.AllowPersistentIPs = c.IPAM != nil && c.IPAM.Lifecycle == udnv1.IPAMLifecyclePersistent
		if primary {
			nc.TransitSubnet = ovnk.JoinPrefixes(o.TransitSubnets)
		}
		if primary && o.PredefinedAddresses {
			nc.ReservedSubnets = joinCIDRs(c.ReservedSubnets)
			nc.InfrastructureSubnets = joinCIDRs(c.InfrastructureSubnets)
			var gws []string
			for _, ip := range c.DefaultGatewayIPs {
				gws = append(gws, string(ip))
			}
			nc.DefaultGatewayIPs = strings.Join(gws, ",")
		}
	case udnv1.NetworkTopologyLocalnet:
		c := spec.Localnet
		if c == nil {
			return nil, fmt.Errorf("spec.localnet is required when topology is Localnet")
		}
		nc.MTU = c.MTU
		if nc.MTU == 0 {
			nc.MTU = cmp.Or(o.ClusterMTU, ovnk.DefaultMTU) + localnetMTUOverhead
		}
		nc.Subnets = joinCIDRs(c.Subnets)
		nc.ExcludeSubnets = joinCIDRs(c.ExcludeSubnets)
		nc.PhysicalNetworkName = c.PhysicalNetworkName
		nc.AllowPersistentIPs = c.IPAM != nil && c.IPAM.Lifecycle == udnv1.IPAMLifecyclePersistent
		if c.VLAN != nil && c.VLAN.Mode == udnv1.VLANModeAccess && c.VLAN.Access != nil {
			nc.VLANID = c.VLAN.Access.ID
		}
	default:
		return nil, fmt.Errorf("spec topology %q is not one of Layer2, Layer3, Localnet", spec.Topology)
	}
	switch spec.Transport {
	case udnv1.TransportOptionNoOverlay:
		nc.Transport = TransportNoOverlay
		if spec.NoOverlay != nil {
			nc.OutboundSNAT = strings.ToLower(string(spec.NoOverlay.OutboundSNAT))
		}
	case udnv1.TransportOptionEVPN:
		nc.Transport = TransportEVPN
		if e := spec.EVPN; e != nil {
			nc.EVPN = &EVPN{VTEP: e.VTEP, MACVRF: vrf(e.MACVRF), IPVRF: vrf(e.IPVRF)}
		}
	}
	nc.Uplink = o.Uplink
	if primary {
		join := spec.JoinSubnetCIDRs()
		if len(join) == 0 {
			for _, p := range o.DefaultJoinSubnets {
				join = append(join, p.String())
			}
		}
		nc.JoinSubnet = strings.Join(join, ",")
	}
	return nc, nil
}

// Render returns the NetConf of spec as JSON.
func Render(spec udnv1.NetworkSpec, o Options) (string, error) {
	nc, err := Build(spec, o)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(nc)
	return string(b), err
}

func joinCIDRs[T ~string](in []T) string {
	out := make([]string, 0, len(in))
	for _, c := range in {
		out = append(out, string(c))
	}
	return strings.Join(out, ",")
}

func vrf(v *udnv1.VRFConfig) *VRF {
	if v == nil {
		return nil
	}
	return &VRF{VNI: v.VNI, RouteTarget: string(v.RouteTarget)}
}
