package multivtep

import (
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

// VTEPNode is a node with its encapsulation IPs (k8s.ovn.org/node-encap-ips)
// and one transit switch port tunnel ID per encap IP
// (k8s.ovn.org/node-transit-switch-port-tunnel-ids).
type VTEPNode struct {
	Name string
	// Chassis is the node's OVN chassis (k8s.ovn.org/node-chassis-id): the
	// requested-chassis of its remote ports; required for a remote node.
	Chassis   string
	Local     bool
	EncapIPs  []netip.Addr
	TunnelIDs []int
	// Subnets are the node's subnets on this network (k8s.ovn.org/node-subnets).
	Subnets []netip.Prefix
}

// MultiVTEP says whether the node has more than one encap IP: only such a
// node gets OKEP-5535's ports; the others keep their topology's.
func (n VTEPNode) MultiVTEP() bool { return len(n.EncapIPs) > 1 }

// VTEPPod is a pod with the encap IP of its interface (pod-networks "encap_ip").
type VTEPPod struct {
	Namespace, Name string
	Node            string
	IPs             []netip.Prefix
	EncapIP         netip.Addr
}

// MultiVTEPPorts computes the OKEP-5535 transit switch ports of a Layer3
// network for its multi-VTEP nodes, created on demand: for each encap IP used
// by at least one pod, the port tstor-<node> (first encap IP) or
// tstor-<node>_encapN with the encap IP's tunnel ID and the address at that
// tunnel ID in the transit subnet; local nodes get the rtots- router port and a
// router-type switch port, remote nodes a remote port. For remote nodes the
// node-subnet route goes via the lowest-indexed used port and pods on other
// VTEPs get /32 (/128) routes. Single-VTEP nodes are left to the Layer3
// topology (their behaviour is unchanged); a port or route goes with its last pod.
// The cluster router and the transit switch are the Layer3 topology's (or
// OVN-Kubernetes'): only referenced (Ref), never created, so their columns
// have one writer; while they are missing the Apply fails with
// rows.MissingRowError and the caller waits.
func MultiVTEPPorts(network string, transit netip.Prefix, nodes []VTEPNode, pods []VTEPPod) (*rows.Desired, error) {
	return MultiVTEPPortsDual(network, []netip.Prefix{transit}, nodes, pods)
}

// MultiVTEPPortsDual is MultiVTEPPorts with one transit subnet per IP family
// (--transit-subnets): a node's ports get the address at their tunnel ID in
// the transit subnet of each family of the node's subnets (every given
// family when the node lists none), their MAC from the first such address,
// and each route its own family's next hop, as upstream's dual-stack
// transit switch ports (100.88.0.6/16 and fd97::6/64) do.
func MultiVTEPPortsDual(network string, transits []netip.Prefix, nodes []VTEPNode, pods []VTEPPod) (*rows.Desired, error) {
	if len(transits) == 0 {
		return nil, fmt.Errorf("transit subnets: at least one is required")
	}
	if network == "" {
		return nil, fmt.Errorf("network.name: must not be empty")
	}
	byNode, err := vtepNodeIndex(nodes)
	if err != nil {
		return nil, err
	}
	used, err := podsByVTEP(nodes, byNode, pods)
	if err != nil {
		return nil, err
	}
	b := vtepBuild{names: ovnk.NamesFor(network), transits: transits}
	b.cr = rows.Router{Row: base.Layer3ClusterRouter(network), Ref: true}
	b.ts = rows.Switch{Row: nbdb.LogicalSwitch{Name: b.names.TransitSwitch()}, Ref: true}
	for _, ni := range slices.Sorted(maps.Keys(used)) {
		for k, idx := range slices.Sorted(maps.Keys(used[ni])) {
			if err := b.port(ni, nodes[ni], k, idx, used[ni][idx]); err != nil {
				return nil, err
			}
		}
	}
	d := &rows.Desired{Owner: rows.Owner{Network: network, Topology: base.TopologyLayer3, Piece: base.PieceMultiVTEP}}
	// Without pods on multi-VTEP nodes nothing is wanted, not even a
	// reference to the router or switch (which may not exist).
	if len(b.cr.Ports)+len(b.cr.Routes) > 0 {
		d.Routers = []rows.Router{b.cr}
	}
	if len(b.ts.Ports) > 0 {
		d.Switches = []rows.Switch{b.ts}
	}
	return d, nil
}

// vtepNodeIndex checks the nodes and indexes them by name.
func vtepNodeIndex(nodes []VTEPNode) (map[string]int, error) {
	byNode := map[string]int{}
	for i, n := range nodes {
		if n.Name == "" {
			return nil, fmt.Errorf("nodes[%d].name: must not be empty", i)
		}
		if !n.Local && n.Chassis == "" {
			return nil, fmt.Errorf("nodes[%d] (%s).chassis: a remote node needs its OVN chassis (%s)", i, n.Name, ovnk.AnnotationNodeChassisID)
		}
		if len(n.TunnelIDs) != len(n.EncapIPs) {
			return nil, fmt.Errorf("nodes[%d] (%s): %s lists %d tunnel IDs for %d encap IPs; they must match one to one",
				i, n.Name, "k8s.ovn.org/node-transit-switch-port-tunnel-ids", len(n.TunnelIDs), len(n.EncapIPs))
		}
		byNode[n.Name] = i
	}
	return byNode, nil
}

// podsByVTEP lists the pods on each VTEP of the multi-VTEP nodes:
// [node index][encap index] → pods.
func podsByVTEP(nodes []VTEPNode, byNode map[string]int, pods []VTEPPod) (map[int]map[int][]VTEPPod, error) {
	used := map[int]map[int][]VTEPPod{}
	for i, p := range pods {
		ni, ok := byNode[p.Node]
		if !ok {
			return nil, fmt.Errorf("pods[%d] (%s/%s).node: node %q is not known", i, p.Namespace, p.Name, p.Node)
		}
		n := nodes[ni]
		if !n.MultiVTEP() {
			continue
		}
		idx := -1
		for j, e := range n.EncapIPs {
			if e == p.EncapIP {
				idx = j
			}
		}
		if idx < 0 {
			return nil, fmt.Errorf("pods[%d] (%s/%s).encapIP: %s is not one of node %s's encap IPs %v",
				i, p.Namespace, p.Name, p.EncapIP, n.Name, n.EncapIPs)
		}
		if used[ni] == nil {
			used[ni] = map[int][]VTEPPod{}
		}
		used[ni][idx] = append(used[ni][idx], p)
	}
	return used, nil
}

// vtepBuild collects the multi-VTEP piece's rows on the referenced cluster
// router and transit switch.
type vtepBuild struct {
	names    ovnk.Layer2Names
	transits []netip.Prefix
	cr       rows.Router
	ts       rows.Switch
}

// port adds the rows of VTEP idx of node n (index ni), the k-th of its
// used VTEPs, with its pods: a local node's router port and router-type
// switch port, a remote node's remote port and its routes (the node's
// subnets via its first used VTEP, each pod's address via the others).
func (b *vtepBuild) port(ni int, n VTEPNode, k, idx int, pods []VTEPPod) error {
	suffix := strings.TrimPrefix(b.names.TransitSwitchPort(n.Name, idx), b.names.TransitSwitchPort(n.Name, 0))
	tsps, err := b.addrs(ni, n, idx)
	if err != nil {
		return err
	}
	nets := make([]string, len(tsps))
	for i, t := range tsps {
		nets[i] = t.String()
	}
	// hop is the port's address of a family (invalid without one).
	hop := func(is4 bool) netip.Addr {
		for _, t := range tsps {
			if t.Addr().Is4() == is4 {
				return t.Addr()
			}
		}
		return netip.Addr{}
	}
	mac := ovnk.MACFromIP(tsps[0].Addr()).String()
	// As upstream's createLocalZoneNodeResources and
	// createRemoteZoneNodeResources: the node's name in external_ids:node,
	// multicast flooded through the router port.
	lsp := nbdb.LogicalSwitchPort{
		Name:        b.names.TransitSwitchToRouter(n.Name) + suffix,
		Options:     map[string]string{"requested-tnl-key": strconv.Itoa(n.TunnelIDs[idx])},
		ExternalIDs: map[string]string{"node": n.Name},
	}
	if n.Local {
		rtots := b.names.RouterToTransitSwitch(n.Name) + suffix
		b.cr.Ports = append(b.cr.Ports, nbdb.LogicalRouterPort{Name: rtots, MAC: mac, Networks: nets,
			Options: map[string]string{"mcast_flood": "true"}})
		lsp.Type, lsp.Addresses = "router", []string{"router"}
		lsp.Options["router-port"] = rtots
		b.ts.Ports = append(b.ts.Ports, lsp)
		return nil
	}
	lsp.Type, lsp.Addresses = "remote", []string{mac + " " + strings.Join(nets, " ")}
	lsp.Options["requested-chassis"] = n.Chassis
	b.ts.Ports = append(b.ts.Ports, lsp)
	var dests []netip.Prefix
	if k == 0 {
		for _, s := range n.Subnets {
			dests = append(dests, s.Masked())
		}
	} else {
		for _, p := range pods {
			for _, pip := range p.IPs {
				dests = append(dests, netip.PrefixFrom(pip.Addr(), pip.Addr().BitLen()))
			}
		}
	}
	for _, dst := range dests {
		if ip := hop(dst.Addr().Is4()); ip.IsValid() {
			b.cr.Routes = append(b.cr.Routes, base.StaticRoute(dst.String(), ip.String(), "", nil))
		}
	}
	return nil
}

// addrs are the addresses of VTEP idx of node n (index ni): at its tunnel
// ID in the transit subnet of each family of the node's subnets (every
// given family when it lists none).
func (b *vtepBuild) addrs(ni int, n VTEPNode, idx int) ([]netip.Prefix, error) {
	var tsps []netip.Prefix
	for _, transit := range b.transits {
		if len(n.Subnets) > 0 && !slices.ContainsFunc(n.Subnets, func(s netip.Prefix) bool { return s.Addr().Is4() == transit.Addr().Is4() }) {
			continue
		}
		ip, err := ovnk.AddrAt(transit, uint64(n.TunnelIDs[idx]))
		if err != nil {
			return nil, fmt.Errorf("nodes[%d] (%s): tunnel ID %d: %w", ni, n.Name, n.TunnelIDs[idx], err)
		}
		tsps = append(tsps, netip.PrefixFrom(ip, transit.Bits()))
	}
	if len(tsps) == 0 {
		return nil, fmt.Errorf("nodes[%d] (%s): no transit subnet of the families of its subnets %v", ni, n.Name, n.Subnets)
	}
	return tsps, nil
}

// PortEncap is the node (its chassis name) and encap IP a port's traffic tunnels to.
type PortEncap struct {
	Chassis string
	EncapIP string
}

// Layer2PodPort is a pod of a Layer2 network as its remote port needs it.
type Layer2PodPort struct {
	VTEPPod
	// NAD is the pod's NetworkAttachmentDefinition key ("namespace/name").
	NAD string
	// MAC is the pod's mac_address in k8s.ovn.org/pod-networks.
	MAC string
	// TunnelID is the pod's tunnel_id (0: none); a remote port requests it as
	// its tunnel key, as OVN-Kubernetes does for remote Layer2 pods, so the
	// key agrees with the pod's local port in its own zone.
	TunnelID int
}

// Layer2MultiVTEPPorts is OKEP-5535's Layer2 solution: every pod that runs on
// a remote multi-VTEP node gets a remote port on the network's layer2 switch
// (owned by the transit-router topology, referenced by name) with its MAC and
// IPs and requested-chassis, and the returned encaps say which Encap row of
// its node each port's Southbound Port_Binding must point at (SetPortEncaps).
// A port appears with its pod and goes with it. Local pods (their ports and
// encaps are the CNI's) and pods on single-VTEP nodes (today's behaviour) get
// none. Invalid input yields an error naming the field; nothing is computed.
func Layer2MultiVTEPPorts(network string, nodes []VTEPNode, pods []Layer2PodPort) (*rows.Desired, map[string]PortEncap, error) {
	if network == "" {
		return nil, nil, fmt.Errorf("network.name: must not be empty")
	}
	byNode := map[string]VTEPNode{}
	for i, n := range nodes {
		if n.Name == "" {
			return nil, nil, fmt.Errorf("nodes[%d].name: must not be empty", i)
		}
		if !n.Local && n.Chassis == "" {
			return nil, nil, fmt.Errorf("nodes[%d] (%s).chassis: a remote node needs its OVN chassis (%s)", i, n.Name, ovnk.AnnotationNodeChassisID)
		}
		byNode[n.Name] = n
	}
	names := ovnk.NamesFor(network)
	sw := rows.Switch{Row: nbdb.LogicalSwitch{Name: names.Switch()}, Ref: true}
	encaps := map[string]PortEncap{}
	for i, p := range pods {
		field := fmt.Sprintf("pods[%d] (%s/%s)", i, p.Namespace, p.Name)
		n, ok := byNode[p.Node]
		if !ok {
			return nil, nil, fmt.Errorf("%s.node: node %q is not known", field, p.Node)
		}
		if n.Local || !n.MultiVTEP() {
			continue
		}
		if !slices.Contains(n.EncapIPs, p.EncapIP) {
			return nil, nil, fmt.Errorf("%s.encapIP: %s is not one of node %s's encap IPs %v", field, p.EncapIP, n.Name, n.EncapIPs)
		}
		if p.NAD == "" || p.Namespace == "" || p.Name == "" {
			return nil, nil, fmt.Errorf("%s: nad, namespace and name are required", field)
		}
		mac, err := net.ParseMAC(p.MAC)
		if err != nil || len(p.IPs) == 0 {
			return nil, nil, fmt.Errorf("%s: a remote pod port needs the pod's MAC and IPs, got mac %q and %d IPs", field, p.MAC, len(p.IPs))
		}
		addrs := []string{mac.String()}
		for _, ip := range p.IPs {
			addrs = append(addrs, ip.Addr().String())
		}
		name := ovnk.PodPortName(p.NAD, p.Namespace, p.Name)
		opts := map[string]string{"requested-chassis": n.Chassis}
		if p.TunnelID > 0 {
			opts["requested-tnl-key"] = strconv.Itoa(p.TunnelID)
		}
		sw.Ports = append(sw.Ports, nbdb.LogicalSwitchPort{
			Name: name, Type: "remote", Addresses: []string{strings.Join(addrs, " ")}, Options: opts,
		})
		encaps[name] = PortEncap{Chassis: n.Chassis, EncapIP: p.EncapIP.String()}
	}
	d := &rows.Desired{Owner: rows.Owner{Network: network, Topology: base.TopologyLayer2, Piece: base.PieceMultiVTEP}}
	if len(sw.Ports) > 0 {
		// Without ports the switch is not needed: cleanup works before the topology exists.
		d.Switches = []rows.Switch{sw}
	}
	return d, encaps, nil
}
