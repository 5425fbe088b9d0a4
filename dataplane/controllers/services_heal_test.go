package controllers

import (
	"slices"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// A Service's load balancers, applied by its own request, heal as the
// network's whole piece does: another client's edit of the vips goes back,
// and a Northbound database emptied under the manager gets the load
// balancer back, in the network's cluster-wide group.
func TestServiceLoadBalancersHeal(t *testing.T) {
	s, _ := policyStack(t, false)
	s.create(lbService("ns1", "web", "10.0.0.100", "fd00:10:96::100"),
		mirroredSlice("ns1", "web-v4", "web", blueNet, discoveryv1.AddressTypeIPv4, "node-a", "203.203.0.5"))
	want := "tcp 10.0.0.100:80 203.203.0.5:8080\ntcp [fd00:10:96::100]:80"
	s.eventually("ns1/web's load balancer", func() bool { return s.lbList(blueWebLB) == want })

	s.nbctl("set", "Load_Balancer", blueWebLB, `vips={"10.0.0.100:80"="10.9.9.9:8080"}`)
	s.eventually("the edited vips back", func() bool { return s.lbList(blueWebLB) == want })

	if err := s.db.NB.Recreate(s.ctx); err != nil {
		t.Fatal(err)
	}
	s.eventually("the load balancer back in the emptied database, in its group", func() bool {
		if s.lbList(blueWebLB) != want {
			return false
		}
		lb := strings.TrimSpace(s.nbctl("--bare", "--columns=_uuid", "find", "Load_Balancer", "name=\""+blueWebLB+"\""))
		return slices.Equal(s.column("Load_Balancer_Group", "load_balancer", "name="+blueGroup), []string{lb})
	})
}
