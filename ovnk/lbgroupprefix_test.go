package ovnk

import "testing"

// A user-defined network's three group names give back its prefix; the
// default network's groups (no prefix) and other names give none.
func TestLoadBalancerGroupPrefix(t *testing.T) {
	for _, g := range NamesFor("tenant-blue/blue").LoadBalancerGroups() {
		if p, ok := LoadBalancerGroupPrefix(g); !ok || p != NetworkPrefix("tenant-blue/blue") {
			t.Errorf("%s: prefix %q, %v; want %q", g, p, ok, NetworkPrefix("tenant-blue/blue"))
		}
	}
	for _, g := range []string{"clusterLBGroup", "clusterSwitchLBGroup", "_clusterRouterLBGroup", "ns1_blue_ovn_layer2_switch", "xclusterLBGroup"} {
		if p, ok := LoadBalancerGroupPrefix(g); ok {
			t.Errorf("%s: prefix %q, want none", g, p)
		}
	}
}
