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
// Services' load balancers. They are the network's by name (the table has
// no external_ids): the plan of the network's last piece that goes away
// deletes them (package plan), as upstream's cleanupLoadBalancerGroups.
func loadBalancerGroups(names ovnk.Layer2Names) []rows.LoadBalancerGroup {
	var out []rows.LoadBalancerGroup
	for _, n := range names.LoadBalancerGroups() {
		out = append(out, rows.LoadBalancerGroup{Row: nbdb.LoadBalancerGroup{Name: n}})
	}
	return out
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
