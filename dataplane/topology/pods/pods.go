package pods

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// Piece is the pod ports' piece of a network's rows.
const Piece = "pods"

// Network is a network as its pod ports see it.
type Network struct {
	// Name is the network's k8s.ovn.org/network.
	Name string
	// Topology is "layer2", "layer3" or "localnet".
	Topology string
}

// Pod is one pod's attachment to the network through one NAD.
type Pod struct {
	// NAD is the NAD key ("namespace/name") the pod attaches through.
	NAD string
	// Namespace, Name and UID are the pod's.
	Namespace, Name, UID string
	// Node runs the pod; Chassis is the node's k8s.ovn.org/node-chassis-id.
	Node, Chassis string
	// Local says the node is in this zone; MultiVTEP that the node has
	// several encap IPs (OKEP-5535), whose pods' ports in other zones the
	// multi-VTEP piece writes.
	Local, MultiVTEP bool
	// MAC and IPs are the pod's entry of k8s.ovn.org/pod-networks (IPs may
	// be empty on a network without subnets); TunnelID its tunnel_id.
	MAC      net.HardwareAddr
	IPs      []netip.Prefix
	TunnelID int
	// Gateways are the entry's gateway_ips (a VM's DHCP router).
	Gateways []netip.Addr
	// VM is the KubeVirt VM the pod runs (kubevirt.VMNameOf; "": none).
	VM string
	// Enabled is nil but for a live migration's pods: false for the target
	// until its domain is ready and for the source once it is (upstream's
	// LiveMigrationStatus), true for the target once ready.
	Enabled *bool
}

// PortName is the pod's logical switch port name.
func (p Pod) PortName() string { return ovnk.PodPortName(p.NAD, p.Namespace, p.Name) }

// Ports builds the network's pod ports in this zone, one Desired of the
// network's Piece: each pod's port on its switch (SwitchOf), in the order
// of pods sorted by port name. A pod of another zone's node has a port on
// Layer2 only (type remote), unless the node is multi-VTEP. A port that cannot be built fails the whole
// call, naming the pod: the caller drops pods it could not read first.
func Ports(n Network, pods []Pod) (*rows.Desired, error) {
	if n.Name == "" {
		return nil, fmt.Errorf("network.name: must not be empty")
	}
	d := &rows.Desired{Owner: rows.Owner{Network: n.Name, Topology: n.Topology, Piece: Piece}}
	ports := map[string][]nbdb.LogicalSwitchPort{}
	for _, p := range slices.SortedFunc(slices.Values(pods), func(a, b Pod) int { return cmp.Compare(a.PortName(), b.PortName()) }) {
		if !p.Local && (n.Topology != base.TopologyLayer2 || p.MultiVTEP) {
			continue
		}
		sw, err := SwitchOf(n, p.Node)
		if err != nil {
			return nil, err
		}
		lsp, err := Port(n, p)
		if err != nil {
			return nil, err
		}
		ports[sw] = append(ports[sw], lsp)
	}
	for _, sw := range slices.Sorted(maps.Keys(ports)) {
		d.Switches = append(d.Switches, rows.Switch{Row: nbdb.LogicalSwitch{Name: sw}, Ref: true, Ports: ports[sw]})
	}
	return d, nil
}

// SwitchOf is the switch a pod on node has its port on
// (getExpectedSwitchName).
func SwitchOf(n Network, node string) (string, error) {
	names := ovnk.NamesFor(n.Name)
	switch n.Topology {
	case base.TopologyLayer2:
		return names.Switch(), nil
	case base.TopologyLayer3:
		if node == "" {
			return "", fmt.Errorf("a Layer3 pod's port needs its node")
		}
		return names.Layer3NodeSwitch(node), nil
	case ovnk.TopologyLocalnet:
		return names.LocalnetSwitch(), nil
	}
	return "", fmt.Errorf("network.topology: %q is not layer2, layer3 or localnet", n.Topology)
}

// Port is a pod's logical switch port as addLogicalPortToNetwork writes it:
// addresses and port_security "MAC IP..." (no addresses while disabled),
// iface-id-ver the pod's UID, requested-chassis its node's chassis,
// external_ids namespace, pod, network, NAD and topology; on Layer2 (an
// interconnected network) requested-tnl-key the pod's tunnel ID and, for a
// pod of another zone's node, type remote.
func Port(n Network, p Pod) (nbdb.LogicalSwitchPort, error) {
	field := fmt.Sprintf("pod %s/%s (NAD %s)", p.Namespace, p.Name, p.NAD)
	switch {
	case p.NAD == "" || p.Namespace == "" || p.Name == "" || p.UID == "":
		return nbdb.LogicalSwitchPort{}, fmt.Errorf("%s: NAD, namespace, name and UID are required", field)
	case p.Node == "" || p.Chassis == "":
		return nbdb.LogicalSwitchPort{}, fmt.Errorf("%s: the node and its chassis are required", field)
	case len(p.MAC) != 6:
		return nbdb.LogicalSwitchPort{}, fmt.Errorf("%s: mac %q is not an EUI-48 address", field, p.MAC)
	}
	addr := []string{p.MAC.String()}
	for i, ip := range p.IPs {
		if !ip.IsValid() {
			return nbdb.LogicalSwitchPort{}, fmt.Errorf("%s: ips[%d] is not a valid prefix", field, i)
		}
		addr = append(addr, ip.Addr().String())
	}
	addresses := []string{strings.Join(addr, " ")}
	lsp := nbdb.LogicalSwitchPort{
		Name:         p.PortName(),
		Addresses:    addresses,
		PortSecurity: addresses,
		Enabled:      p.Enabled,
		Options:      map[string]string{"iface-id-ver": p.UID, "requested-chassis": p.Chassis},
		ExternalIDs: map[string]string{
			ovnk.ExternalIDPodNamespace: p.Namespace, ovnk.ExternalIDPod: "true",
			ovnk.ExternalIDNetwork: n.Name, ovnk.ExternalIDNAD: p.NAD, ovnk.ExternalIDTopology: n.Topology,
		},
	}
	if p.Enabled != nil && !*p.Enabled {
		lsp.Addresses = nil
	}
	if n.Topology == base.TopologyLayer2 {
		if p.TunnelID <= 0 {
			return nbdb.LogicalSwitchPort{}, fmt.Errorf("%s: a Layer2 port needs the pod's tunnel_id", field)
		}
		lsp.Options["requested-tnl-key"] = strconv.Itoa(p.TunnelID)
		if !p.Local {
			lsp.Type = "remote"
		}
	}
	return lsp, nil
}
