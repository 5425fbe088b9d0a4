package controllers

import (
	"slices"
	"strings"
	"testing"
)

// A load balancer group left behind by a network no NAD names any more
// (here written by hand: an unreferenced, empty ns9_gone_ group, as an
// interrupted removal or another writer's gateway router outliving every
// piece leaves it) goes with the next sweep, which a NAD's deletion
// starts. The groups that stay: the default network's (no network
// prefix), one a router names (ns8_kept_), and the live network's.
func TestOrphanedLoadBalancerGroupsAreSwept(t *testing.T) {
	s, greenNAD := policyStack(t, false)
	s.eventually("blue's load balancer groups", func() bool {
		return slices.Contains(s.column("Load_Balancer_Group", "name"), blueGroup)
	})
	s.nbctl("create", "Load_Balancer_Group", "name=ns9_gone_clusterLBGroup")
	s.nbctl("create", "Load_Balancer_Group", "name=clusterLBGroup")
	s.nbctl("--id=@g", "create", "Load_Balancer_Group", "name=ns8_kept_clusterSwitchLBGroup", "--",
		"lr-add", "GR_ns8_kept", "--", "set", "Logical_Router", "GR_ns8_kept", "load_balancer_group=@g")

	if err := s.c.Delete(s.ctx, greenNAD); err != nil {
		t.Fatal(err)
	}
	s.eventually("the orphaned group and green's gone", func() bool {
		return !slices.ContainsFunc(s.column("Load_Balancer_Group", "name"), func(n string) bool {
			return strings.HasPrefix(n, "ns9_") || strings.HasPrefix(n, "ns2_")
		})
	})
	got := s.column("Load_Balancer_Group", "name")
	for _, want := range []string{"clusterLBGroup", "ns8_kept_clusterSwitchLBGroup", blueGroup,
		"ns1_tenant.blue_clusterSwitchLBGroup", "ns1_tenant.blue_clusterRouterLBGroup"} {
		if !slices.Contains(got, want) {
			t.Errorf("the sweep took %s (groups left: %v)", want, got)
		}
	}
}
