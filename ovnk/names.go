package ovnk

import (
	"hash/fnv"
	"strconv"
	"strings"
)

// UDNNetworkName is the OVN network name of a UserDefinedNetwork.
func UDNNetworkName(namespace, name string) string { return namespace + "_" + name }

// CUDNNetworkName is the OVN network name of a ClusterUserDefinedNetwork.
func CUDNNetworkName(name string) string { return cudnNetworkPrefix + name }

// NetworkPrefix is the prefix of every OVN object of a user-defined network,
// upstream's util.GetUserDefinedNetworkPrefix: the network name with "-" and
// "/" replaced by ".", then "_". Two networks whose names differ only there
// (CUDNs col-x and col.x) share their OVN names.
func NetworkPrefix(network string) string {
	return strings.NewReplacer("-", ".", "/", ".").Replace(network) + "_"
}

// Layer2Names are the names OKEP-5094 gives the rows of one network.
type Layer2Names struct{ prefix string }

// NamesFor returns the row names of a network, under NetworkPrefix.
func NamesFor(network string) Layer2Names {
	return Layer2Names{prefix: NetworkPrefix(network)}
}

func (n Layer2Names) Switch() string        { return n.prefix + "ovn_layer2_switch" }
func (n Layer2Names) TransitRouter() string { return n.prefix + "transit_router" }
func (n Layer2Names) ClusterRouter() string { return n.prefix + "ovn_cluster_router" }
func (n Layer2Names) GatewayRouter(node string) string {
	return "GR_" + n.prefix + node
}
func (n Layer2Names) RouterToSwitch() string         { return "trtos-" + n.Switch() }
func (n Layer2Names) SwitchToRouter() string         { return "stotr-" + n.Switch() }
func (n Layer2Names) TransitToGR(node string) string { return "trtor-" + n.GatewayRouter(node) }
func (n Layer2Names) GRToTransit(node string) string { return "rtotr-" + n.GatewayRouter(node) }
func (n Layer2Names) SwitchToGR(node string) string  { return "stor-" + n.Switch() + "_" + node }
func (n Layer2Names) GRToSwitch() string             { return "rtos-" + n.Switch() }
func (n Layer2Names) UpgradeSwitchPort() string      { return "stotr-" + n.Switch() + "-upgrade" }
func (n Layer2Names) UpgradeRouterPort() string      { return "trtos-" + n.Switch() + "-upgrade" }

// RouterToSwitchGatewayChassis names the trtos- port's Gateway_Chassis row
// on a chassis (its k8s.ovn.org/node-chassis-id), as upstream's
// syncNodeClusterRouterPort does: "<port>-<chassis>".
func (n Layer2Names) RouterToSwitchGatewayChassis(chassis string) string {
	return n.RouterToSwitch() + "-" + chassis
}

// PodPortName is OVN-Kubernetes' logical switch port name of a pod on a
// user-defined network (util.GetUserDefinedNetworkLogicalPortName): the NAD
// key's NetworkPrefix, then "<pod namespace>_<pod name>"
// (ns1/tenant-blue, ns1/pod-a -> ns1.tenant.blue_ns1_pod-a).
func PodPortName(nad, namespace, pod string) string {
	return NetworkPrefix(nad) + DefaultNetworkPodPortName(namespace, pod)
}

// DefaultNetworkPodPortName is OVN-Kubernetes' logical switch port name of
// a pod on the default network (util.GetLogicalPortName), on its node's
// switch: "<pod namespace>_<pod name>".
func DefaultNetworkPodPortName(namespace, pod string) string { return namespace + "_" + pod }

// TransitSwitchPort is OKEP-5535's name of a node's transit switch port for
// its encap IP at index idx: tstor-<node> for the first, tstor-<node>_encapN
// for the others (with the network's prefix).
func (n Layer2Names) TransitSwitchPort(node string, idx int) string {
	if idx == 0 {
		return n.prefix + "tstor-" + node
	}
	return n.prefix + "tstor-" + node + "_encap" + strconv.Itoa(idx)
}

// TransitSwitch is a Layer3 network's transit switch.
func (n Layer2Names) TransitSwitch() string { return n.prefix + "transit_switch" }

// TransitSwitchToRouter is a node's port on the transit switch (OKEP-5535's tstor-<node>).
func (n Layer2Names) TransitSwitchToRouter(node string) string { return n.prefix + "tstor-" + node }

// RouterToTransitSwitch is the cluster router's port to the transit switch of a node.
func (n Layer2Names) RouterToTransitSwitch(node string) string { return n.prefix + "rtots-" + node }

// HashForOVN is upstream's util.HashForOVN: "a" and the decimal FNV-1a
// 64-bit hash of s. OVN-Kubernetes names its Address_Set rows so, because a
// set's name must be an OVN identifier in matches ($name) and network names
// hold characters that are not.
func HashForOVN(s string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return "a" + strconv.FormatUint(h.Sum64(), 10)
}

// SubnetsAddressSet is the Address_Set holding a Layer3 network's cluster
// subnets of one family ("ip4" or "ip6"), which its priority-102 allow
// policy matches as "ip4.src == $set && ip4.dst == $set". The hashed name
// is unique per network and family; the set is udnkit's (upstream writes one
// policy per subnet pair instead).
func (n Layer2Names) SubnetsAddressSet(family string) string {
	return HashForOVN("udnkit:" + n.prefix + "cluster_subnets:" + family)
}

// The load balancer groups of a primary user-defined network (upstream's
// types.ClusterLBGroupName, ClusterSwitchLBGroupName and
// ClusterRouterLBGroupName under GetNetworkScopedLoadBalancerGroupName):
// the cluster-wide group on the network's switches and gateway routers,
// the switch group on its switches, the router group on the gateway
// routers of nodes with node ports enabled.
func (n Layer2Names) ClusterLBGroup() string       { return n.prefix + "clusterLBGroup" }
func (n Layer2Names) ClusterSwitchLBGroup() string { return n.prefix + "clusterSwitchLBGroup" }
func (n Layer2Names) ClusterRouterLBGroup() string { return n.prefix + "clusterRouterLBGroup" }

// LoadBalancerGroups are the network's three load balancer groups: by
// these names upstream finds a removed network's groups to delete them
// (cleanupLoadBalancerGroups), as the table has no external_ids.
func (n Layer2Names) LoadBalancerGroups() []string {
	return []string{n.ClusterLBGroup(), n.ClusterSwitchLBGroup(), n.ClusterRouterLBGroup()}
}

// LoadBalancerGroupPrefix is the network prefix (NetworkPrefix) a
// user-defined network's load balancer group's name starts with; ok is
// false for any other name, the default network's groups (no prefix)
// among them. A sweep finds a removed network's groups so.
func LoadBalancerGroupPrefix(group string) (prefix string, ok bool) {
	for _, g := range (Layer2Names{}).LoadBalancerGroups() {
		if p, found := strings.CutSuffix(group, g); found && len(p) > 1 && strings.HasSuffix(p, "_") {
			return p, true
		}
	}
	return "", false
}

// ServiceLoadBalancer is the name of a Service's load balancer on the
// network (upstream's makeLBName under GetNetworkScopedLoadBalancerName):
// "<prefix>Service_<namespace>/<name>_<protocol>_<scope>", scope "cluster"
// for the cluster-wide one ("TCP", not "tcp": the Service's protocol).
func (n Layer2Names) ServiceLoadBalancer(namespace, name, protocol, scope string) string {
	return n.prefix + "Service_" + namespace + "/" + name + "_" + protocol + "_" + scope
}
