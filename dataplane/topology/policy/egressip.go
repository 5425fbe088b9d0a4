package policy

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// EgressIP's priorities, marks and object names (pkg/types/const.go,
// pkg/ovn/egressip.go, addresssetmanager, egressservice, udnenabledsvc).
const (
	NoReroutePriority = 102 // types.DefaultNoRereoutePriority
	ReplyQoSPriority  = 103 // types.EgressIPRerouteQoSRulePriority
	// ReplyTrafficMark marks reply traffic of EgressIP pods
	// (types.EgressIPReplyTrafficConnectionMark).
	ReplyTrafficMark = 42
	// NodeConnectionMark is the pkt_mark of pod traffic to nodes
	// (types.EgressIPNodeConnectionMark).
	NodeConnectionMark = "1008"

	NoReroutePodToJoin   = "EIP-No-Reroute-Pod-To-Join"
	NoReroutePodToNode   = "EIP-No-Reroute-Pod-To-Node"
	NoReroutePodToCDNSvc = "EIP-No-Reroute-Pod-To-CDN-Svc"
	replyTrafficQoS      = "EgressIP-Mark-Reply-Traffic"

	egressIPServedPods      = "egressip-served-pods"
	egressServiceServedPods = "egresssvc-served-pods"
	clusterNodeIPs          = "node-ips"
	udnEnabledServiceIPs    = "udn-enabled-svc-cluster-ips"
)

// addressSetFamily is an address set's ip-family value ("v4", "v6").
func addressSetFamily(v6 bool) string {
	if v6 {
		return "v6"
	}
	return "v4"
}

// policyIDs are the IDs of one of EgressIP's policies or QoS rules on a
// network (getEgressIPLRPNoReRouteDbIDs, getEgressIPQoSRuleDbIDs): name is
// NoReroutePodToJoin, ..., family "ip4", "ip6" or "ip" (both). The Layer2
// and Layer3 topologies write the Pod-To-Pod and reply-traffic policies
// with ovnk.EgressIPNoRerouteIDs, the same IDs.
func policyIDs(network, name, family string, priority int) objectIDs {
	return ids(DefaultController, ownerEgressIP, kv(ovnk.ExternalIDPriority, strconv.Itoa(priority)),
		kv(ovnk.ExternalIDObjectName, name), kv(ovnk.ExternalIDIPFamily, family), kv(ovnk.ExternalIDObjectNetwork, network))
}

// egressIPServedPodsIDs is a network's address set of EgressIP pods of a
// family (getEgressIPAddrSetDbIDs).
func egressIPServedPodsIDs(network string, v6 bool) objectIDs {
	return ids(DefaultController, ownerEgressIP, kv(ovnk.ExternalIDObjectName, egressIPServedPods),
		kv(ovnk.ExternalIDIPFamily, addressSetFamily(v6)), kv(ovnk.ExternalIDObjectNetwork, network))
}

// The zone's address sets of a family: the cluster's node IPs
// (addresssetmanager getClusterNodeIPsAddrSetDbIDs), the egress services'
// pods (egressservice GetEgressServiceAddrSetDbIDs) and the UDN-enabled
// services' ClusterIPs (udnenabledsvc GetAddressSetDBIDs).
func clusterNodeIPsIDs(v6 bool) objectIDs {
	return ids(DefaultController, ownerClusterNodeIPs, kv(ovnk.ExternalIDObjectName, clusterNodeIPs), kv(ovnk.ExternalIDIPFamily, addressSetFamily(v6)))
}

func egressServiceIDs(v6 bool) objectIDs {
	return ids(DefaultController, ownerEgressService, kv(ovnk.ExternalIDObjectName, egressServiceServedPods), kv(ovnk.ExternalIDIPFamily, addressSetFamily(v6)))
}

func udnEnabledServiceIDs(v6 bool) objectIDs {
	return ids(udnEnabledServiceController, ownerUDNEnabledService, kv(ovnk.ExternalIDObjectName, udnEnabledServiceIPs),
		kv(ovnk.ExternalIDIPFamily, addressSetFamily(v6)))
}

// EgressIPDefaults is what upstream's EgressIP controller writes for a
// network in a zone with EgressIP on (egressip.go
// ensureRouterPoliciesForNetwork, ensureSwitchPoliciesForNode), but the
// Pod-To-Pod and reply-traffic policies the network's topology writes:
//   - on the network's cluster router (Layer3; shared as the Layer3
//     topology's) or transit router (Layer2; referenced), priority-102
//     allow policies of the network's pods to the join subnet
//     (createDefaultNoRerouteServicePolicies), to nodes with pkt_mark 1008
//     (ensureDefaultNoRerouteNodePolicies, the cluster's families) and to
//     UDN-enabled services (ensureDefaultNoRerouteUDNEnabledSvcPolicies,
//     the network's families);
//   - the network's egressip-served-pods address sets (empty without
//     EgressIPs; the cluster's families);
//   - on each local switch, the priority-103 QoS rule marking the reply
//     traffic of those pods (createDefaultReRouteQoSRuleOps).
//
// The zone's address sets these name are EgressIPShared's and
// EgressIPDefaultNetworkSets'.
func EgressIPDefaults(net Network, c Cluster) (*rows.Desired, error) {
	if err := net.validate(); err != nil {
		return nil, err
	}
	if len(c.families()) == 0 {
		return nil, fmt.Errorf("cluster: neither IPv4 nor IPv6 mode")
	}
	names := ovnk.NamesFor(net.Name)
	router := rows.Router{Row: nbdb.LogicalRouter{Name: names.TransitRouter()}, Ref: true}
	if net.Topology == base.TopologyLayer3 {
		router = rows.Router{Row: base.Layer3ClusterRouter(net.Name), Shared: true, Copp: base.DefaultCOPP()}
	}
	d := &rows.Desired{Owner: rows.Owner{Network: net.Name, Topology: net.Topology, Piece: base.PieceEgressIPDefaults}}
	for _, v6 := range []bool{false, true} {
		f := base.FamilyOf(v6)
		join, ok := ovnk.FamilyOf(c.JoinSubnets, v6)
		for _, s := range net.Subnets {
			if s.Addr().Is6() != v6 {
				continue
			}
			if !ok {
				return nil, fmt.Errorf("cluster.joinSubnets: no %s join subnet for network subnet %s", f, s)
			}
			router.Policies = append(router.Policies, allowPolicy(net.Name, NoReroutePodToJoin, f,
				fmt.Sprintf("%s.src == %s && %s.dst == %s", f, s.Masked(), f, join.Masked()), nil))
		}
	}
	for _, v6 := range c.families() {
		router.Policies = append(router.Policies, allowPolicy(net.Name, NoReroutePodToNode, base.FamilyOf(v6),
			servedPodsMatch(net.Name, v6, clusterNodeIPsIDs(v6)), map[string]string{"pkt_mark": NodeConnectionMark}))
	}
	for _, v6 := range []bool{false, true} {
		if slices.ContainsFunc(net.Subnets, func(s netip.Prefix) bool { return s.Addr().Is6() == v6 }) {
			router.Policies = append(router.Policies, allowPolicy(net.Name, NoReroutePodToCDNSvc, base.FamilyOf(v6),
				servedPodsMatch(net.Name, v6, udnEnabledServiceIDs(v6)), nil))
		}
	}
	d.Routers = []rows.Router{router}
	var qos []nbdb.QoS
	for _, v6 := range c.families() {
		set := egressIPServedPodsIDs(net.Name, v6)
		d.AddressSets = append(d.AddressSets, nbdb.AddressSet{Name: set.hashName(), ExternalIDs: set.externalIDs()})
		f := base.FamilyOf(v6)
		qos = append(qos, nbdb.QoS{
			Priority: ReplyQoSPriority, Direction: nbdb.QoSDirectionFromLport,
			Action:      map[string]int{"mark": ReplyTrafficMark},
			Match:       fmt.Sprintf("%s.src == $%s && ct.trk && ct.rpl", f, set.hashName()),
			ExternalIDs: policyIDs(net.Name, replyTrafficQoS, f, ReplyQoSPriority).externalIDs(),
		})
	}
	for _, n := range net.Nodes {
		if !slices.ContainsFunc(d.Switches, func(s rows.Switch) bool { return s.Row.Name == n.Switch }) {
			d.Switches = append(d.Switches, rows.Switch{Row: nbdb.LogicalSwitch{Name: n.Switch}, Ref: true, QoS: slices.Clone(qos)})
		}
	}
	return d, nil
}

// allowPolicy is createEgressIPLogicalRouterPolicy's policy.
func allowPolicy(network, name, family, match string, options map[string]string) nbdb.LogicalRouterPolicy {
	return nbdb.LogicalRouterPolicy{Priority: NoReroutePriority, Action: nbdb.LogicalRouterPolicyActionAllow,
		Match: match, Options: options, ExternalIDs: policyIDs(network, name, family, NoReroutePriority).externalIDs()}
}

// servedPodsMatch: from the network's EgressIP pods or the egress
// services' pods to the addresses of dst.
func servedPodsMatch(network string, v6 bool, dst objectIDs) string {
	f := base.FamilyOf(v6)
	return fmt.Sprintf("(%s.src == $%s || %s.src == $%s) && %s.dst == $%s",
		f, egressIPServedPodsIDs(network, v6).hashName(), f, egressServiceIDs(v6).hashName(), f, dst.hashName())
}

// EgressIPShared is the zone's address sets of the UDN-enabled default
// services' ClusterIPs (serviceIPs), for the cluster's families, which
// every network's Pod-To-CDN-Svc policies name. Upstream's udnenabledsvc
// controller writes them only with network segmentation on, so beside an
// OVN-Kubernetes that keeps only the default network they are udnkit's.
func EgressIPShared(c Cluster, serviceIPs []netip.Addr) (*rows.Desired, error) {
	return zoneSets(c, base.PieceEgressIPShared, func(v6 bool) []zoneSet {
		return []zoneSet{{udnEnabledServiceIDs(v6), serviceIPs}}
	})
}

// EgressIPDefaultNetworkSets is the zone's address sets of the cluster's
// node IPs (nodeIPs: every node's k8s.ovn.org/host-cidrs addresses) and of
// the egress services' pods (empty: udnkit runs no egress service), for
// the cluster's families, which every network's Pod-To-Node policies name.
// OVN-Kubernetes' EgressIP writes the same rows for the default network
// (addresssetmanager, InitClusterEgressPolicies), so this piece is
// udnkit's only where that does not run first.
func EgressIPDefaultNetworkSets(c Cluster, nodeIPs []netip.Addr) (*rows.Desired, error) {
	return zoneSets(c, base.PieceEgressIPDefaultSets, func(v6 bool) []zoneSet {
		return []zoneSet{{clusterNodeIPsIDs(v6), nodeIPs}, {egressServiceIDs(v6), nil}}
	})
}

// zoneSet is one of the zone's address sets with the addresses to hold
// (those of its family).
type zoneSet struct {
	ids   objectIDs
	addrs []netip.Addr
}

// zoneSets is a zone piece of the sets of each of the cluster's families.
func zoneSets(c Cluster, piece string, sets func(v6 bool) []zoneSet) (*rows.Desired, error) {
	if len(c.families()) == 0 {
		return nil, fmt.Errorf("cluster: neither IPv4 nor IPv6 mode")
	}
	d := &rows.Desired{Owner: rows.Owner{Network: ZoneNetwork, Topology: base.TopologyZone, Piece: piece}}
	for _, v6 := range c.families() {
		for _, set := range sets(v6) {
			d.AddressSets = append(d.AddressSets, nbdb.AddressSet{Name: set.ids.hashName(), ExternalIDs: set.ids.externalIDs(),
				Addresses: familyAddrs(set.addrs, v6)})
		}
	}
	return d, nil
}

// familyAddrs are the distinct valid addresses of a family, sorted.
func familyAddrs(addrs []netip.Addr, v6 bool) []string {
	var out []string
	for _, a := range addrs {
		if a.IsValid() && a.Unmap().Is6() == v6 {
			out = append(out, a.Unmap().String())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
