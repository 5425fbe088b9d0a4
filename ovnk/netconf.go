// Package netconf renders a UserDefinedNetwork's or ClusterUserDefinedNetwork's
// spec as the OVN-Kubernetes CNI NetConf JSON that goes into a
// NetworkAttachmentDefinition's spec.config, field for field what
// ovn-kubernetes nodes parse.
package ovnk

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
)

const (
	// CNIVersion is the CNI spec version of the rendered config.
	CNIVersion = "1.0.0"
	// PluginType is the OVN-Kubernetes CNI plugin for secondary and UDN networks.
	PluginType = "ovn-k8s-cni-overlay"
)

// NetConf is OVN-Kubernetes' CNI network configuration (ovncnitypes.NetConf),
// limited to what UDNs set.
type NetConf struct {
	CNIVersion            string `json:"cniVersion"`
	Type                  string `json:"type"`
	Name                  string `json:"name"`
	NADName               string `json:"netAttachDefName"`
	Topology              string `json:"topology"`
	Role                  string `json:"role"`
	MTU                   int32  `json:"mtu,omitempty"`
	Subnets               string `json:"subnets,omitempty"`
	JoinSubnet            string `json:"joinSubnet,omitempty"`
	TransitSubnet         string `json:"transitSubnet,omitempty"`
	AllowPersistentIPs    bool   `json:"allowPersistentIPs,omitempty"`
	ExcludeSubnets        string `json:"excludeSubnets,omitempty"`
	PhysicalNetworkName   string `json:"physicalNetworkName,omitempty"`
	VLANID                int32  `json:"vlanID,omitempty"`
	ReservedSubnets       string `json:"reservedSubnets,omitempty"`
	InfrastructureSubnets string `json:"infrastructureSubnets,omitempty"`
	DefaultGatewayIPs     string `json:"defaultGatewayIPs,omitempty"`
}

// Options are the parts of the NetConf that do not come from the spec.
type Options struct {
	// NetworkName is `<namespace>_<name>` for a UDN, `cluster_udn_<name>` for a CUDN.
	NetworkName string
	// NADName is the NAD's `<namespace>/<name>`.
	NADName string
	// DefaultJoinSubnets are used for Primary networks without joinSubnets,
	// filtered to the IP families of the network's subnets.
	DefaultJoinSubnets []netip.Prefix
	// TransitSubnets of a Primary Layer2 network (ovnk.TransitSubnets).
	TransitSubnets []netip.Prefix
	// PredefinedAddresses renders reservedSubnets, infrastructureSubnets and
	// defaultGatewayIPs (feature preconfigured-udn-addresses-enable).
	PredefinedAddresses bool
}

// UDNNetworkName is the OVN network name of a UserDefinedNetwork.
func UDNNetworkName(namespace, name string) string { return namespace + "_" + name }

// CUDNNetworkName is the OVN network name of a ClusterUserDefinedNetwork.
func CUDNNetworkName(name string) string { return "cluster_udn_" + name }

// Build returns the NetConf of spec.
func Build(spec udnv1.NetworkSpec, o Options) (*NetConf, error) {
	if o.NetworkName == "" || o.NADName == "" {
		return nil, fmt.Errorf("network name and NAD name are required")
	}
	nc := &NetConf{
		CNIVersion: CNIVersion, Type: PluginType, Name: o.NetworkName, NADName: o.NADName,
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
			nc.TransitSubnet = joinPrefixes(o.TransitSubnets)
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
	if primary {
		join := spec.JoinSubnetCIDRs()
		if len(join) == 0 {
			fams := Families(spec)
			for _, p := range o.DefaultJoinSubnets {
				if (p.Addr().Is4() && fams.IPv4) || (p.Addr().Is6() && fams.IPv6) {
					join = append(join, p.String())
				}
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

// FamilySet says which IP families a network's subnets use.
type FamilySet struct{ IPv4, IPv6 bool }

// Families returns the IP families of the network's subnets.
func Families(spec udnv1.NetworkSpec) FamilySet {
	var f FamilySet
	for _, c := range spec.SubnetCIDRs() {
		if p, err := netip.ParsePrefix(c); err == nil {
			if p.Addr().Is4() {
				f.IPv4 = true
			} else {
				f.IPv6 = true
			}
		}
	}
	return f
}

func joinCIDRs[T ~string](in []T) string {
	out := make([]string, 0, len(in))
	for _, c := range in {
		out = append(out, string(c))
	}
	return strings.Join(out, ",")
}

func joinPrefixes(in []netip.Prefix) string {
	out := make([]string, 0, len(in))
	for _, p := range in {
		out = append(out, p.String())
	}
	return strings.Join(out, ",")
}
