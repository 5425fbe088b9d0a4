package ovnk

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
)

// The names of a Layer3 network's rows (upstream's
// GetNetworkScopedSwitchName, GetNetworkScopedRouterToSwitchPortName,
// GetNetworkScopedSwitchToRouterPortName, GetNetworkScopedJoinSwitchName and
// types' GWRouterToJoinSwitchPrefix and JoinSwitchToGWRouterPrefix).

// NodeSwitch is a Layer3 network's switch of one node: <prefix><node>.
func (n Layer2Names) NodeSwitch(node string) string { return n.prefix + node }

// RouterToNodeSwitch is the cluster router's port to a node's switch.
func (n Layer2Names) RouterToNodeSwitch(node string) string { return "rtos-" + n.NodeSwitch(node) }

// NodeSwitchToRouter is the node switch's router port, peer of RouterToNodeSwitch.
func (n Layer2Names) NodeSwitchToRouter(node string) string { return "stor-" + n.NodeSwitch(node) }

// JoinSwitch connects a Layer3 network's cluster router to its gateway routers.
func (n Layer2Names) JoinSwitch() string { return n.prefix + "join" }

// RouterToJoin is a router's port on the join switch (the cluster router's
// or a gateway router's): rtoj-<router>.
func RouterToJoin(router string) string { return "rtoj-" + router }

// JoinToRouter is the join switch's router port, peer of RouterToJoin: jtor-<router>.
func JoinToRouter(router string) string { return "jtor-" + router }

// GatewayChassisName names a router port's Gateway_Chassis row on a chassis
// as upstream's syncNodeClusterRouterPort does: "<port>-<chassis>".
func GatewayChassisName(port, chassis string) string { return port + "-" + chassis }

type transitPortAddrs struct {
	IPv4 string `json:"ipv4,omitempty"`
	IPv6 string `json:"ipv6,omitempty"`
}

// DecodeNodeTransitSwitchPortAddrs reads
// k8s.ovn.org/node-transit-switch-port-ifaddr ({"ipv4":"100.88.0.2/16",
// "ipv6":"fd97::2/64"}), IPv4 first: ok is false when the node has none; a
// value that is not that object of CIDRs of their families is an error.
func DecodeNodeTransitSwitchPortAddrs(annotations map[string]string) (addrs []netip.Prefix, ok bool, err error) {
	v, found := annotations[AnnotationNodeTransitSwitchPortIfAddr]
	if !found {
		return nil, false, nil
	}
	var raw transitPortAddrs
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return nil, false, fmt.Errorf("annotation %s=%q is not a JSON object of ipv4 and ipv6 CIDRs", AnnotationNodeTransitSwitchPortIfAddr, v)
	}
	for _, f := range []struct {
		s  string
		v6 bool
	}{{raw.IPv4, false}, {raw.IPv6, true}} {
		if f.s == "" {
			continue
		}
		p, err := netip.ParsePrefix(f.s)
		if err != nil || p.Addr().Is6() != f.v6 {
			return nil, false, fmt.Errorf("annotation %s: %q is not an IPv%d CIDR", AnnotationNodeTransitSwitchPortIfAddr, f.s, map[bool]int{false: 4, true: 6}[f.v6])
		}
		addrs = append(addrs, p)
	}
	if len(addrs) == 0 {
		return nil, false, fmt.Errorf("annotation %s=%q holds no address", AnnotationNodeTransitSwitchPortIfAddr, v)
	}
	return addrs, true, nil
}

// EncodeNodeTransitSwitchPortAddrs is the annotation's value for addrs, as
// upstream's cluster manager writes it (keys ipv4 and ipv6, compact JSON).
func EncodeNodeTransitSwitchPortAddrs(addrs []netip.Prefix) string {
	var raw transitPortAddrs
	for _, a := range addrs {
		if a.Addr().Is4() {
			raw.IPv4 = a.String()
		} else {
			raw.IPv6 = a.String()
		}
	}
	b, _ := json.Marshal(raw)
	return string(b)
}

// TransitSwitchPortAddr is a node's address on the Layer3 transit switches in
// one transit subnet, as upstream's cluster manager allocates it: the address
// at offset nodeID, with the transit subnet's length (node ID 2 in
// 100.88.0.0/16: 100.88.0.2/16).
func TransitSwitchPortAddr(transit netip.Prefix, nodeID int) (netip.Prefix, error) {
	a, err := AddrAt(transit.Masked(), uint64(nodeID))
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("transit switch port address of node ID %d: %w", nodeID, err)
	}
	return netip.PrefixFrom(a, transit.Bits()), nil
}

// ExternalIDInterconnectNode marks a cluster router's route to another
// zone's node through the transit switch with the node's name (upstream's
// zone_ic_handler.go writes the bare key "ic-node").
const ExternalIDInterconnectNode = "ic-node"

// The values upstream's EgressIP controller gives its default no-reroute
// policies (egressip.go's getEgressIPLRPNoReRouteDbIDs, written through
// libovsdbops.DbObjectIDs; the keys are in externalids.go).
const (
	// EgressIPOwnerType and EgressIPController own the no-reroute policies:
	// upstream's EgressIP controller runs in the default network's controller
	// for every network.
	EgressIPOwnerType  = "EgressIP"
	EgressIPController = "default-network-controller"
	// EgressIPNoReroutePodToPod and EgressIPNoRerouteReplyTraffic name the
	// priority-102 pod-to-pod policies and the reply-traffic (pkt.mark)
	// policy (upstream's NoReRoutePodToPod and ReplyTrafficNoReroute).
	EgressIPNoReroutePodToPod     = "EIP-No-Reroute-Pod-To-Pod"
	EgressIPNoRerouteReplyTraffic = "EIP-No-Reroute-reply-traffic"
	// EgressIPFamilyBoth is the ip-family of a policy of both families.
	EgressIPFamilyBoth = "ip"
)

// EgressIPNoRerouteIDs are the external IDs of one of upstream's default
// no-reroute policies of a network: its name, priority and IP family ("ip4",
// "ip6" or EgressIPFamilyBoth).
func EgressIPNoRerouteIDs(network, name string, priority int, family string) map[string]string {
	prio := strconv.Itoa(priority)
	return map[string]string{
		ExternalIDOwnerType:       EgressIPOwnerType,
		ExternalIDOwnerController: EgressIPController,
		ExternalIDObjectName:      name,
		ExternalIDObjectID:        EgressIPController + ":" + EgressIPOwnerType + ":" + prio + ":" + name + ":" + family + ":" + network,
		ExternalIDPriority:        prio,
		ExternalIDIPFamily:        family,
		ExternalIDObjectNetwork:   network,
	}
}
