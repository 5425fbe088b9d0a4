package topology

import (
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// loadBalancerGroups are a primary network's three load balancer groups,
// as upstream's initLoadBalancerGroups creates them for a user-defined
// network (base_network_controller_user_defined.go): the topology declares
// them empty, created when missing; the services piece (package
// topology/services) fills the cluster-wide one with the network's
// Services' load balancers.
func loadBalancerGroups(names ovnk.Layer2Names) []rows.LoadBalancerGroup {
	return []rows.LoadBalancerGroup{
		{Row: nbdb.LoadBalancerGroup{Name: names.ClusterLBGroup()}},
		{Row: nbdb.LoadBalancerGroup{Name: names.ClusterSwitchLBGroup()}},
		{Row: nbdb.LoadBalancerGroup{Name: names.ClusterRouterLBGroup()}},
	}
}

// switchLBGroups are the groups on a network's layer2 or node switch:
// the cluster-wide and the switch group (initializeLogicalSwitch and
// createNodeLogicalSwitch).
func switchLBGroups(names ovnk.Layer2Names) []string {
	return []string{names.ClusterLBGroup(), names.ClusterSwitchLBGroup()}
}

// gatewayRouterLBGroups are the groups on a node's gateway router
// (gateway.go: createGWRouter): the cluster-wide group, and the router
// group when the node's l3-gateway-config enables node ports.
func gatewayRouterLBGroups(names ovnk.Layer2Names, gw *ovnk.L3GatewayConfig) []string {
	if gw != nil && gw.NodePortEnable {
		return []string{names.ClusterLBGroup(), names.ClusterRouterLBGroup()}
	}
	return []string{names.ClusterLBGroup()}
}
