package dataplane

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	svctopo "github.com/udnkit/udnkit/dataplane/topology/services"
	"github.com/udnkit/udnkit/ovnk"
)

// lbGroups lists the Load_Balancer_Group rows' names as ovn-nbctl shows
// them, sorted.
func (e *env) lbGroups() []string {
	e.t.Helper()
	out := strings.Fields(e.nbctl("--data=bare", "--no-headings", "--columns=name", "list", "Load_Balancer_Group"))
	slices.Sort(out)
	return out
}

// groupsOf are a network's three load balancer groups, sorted.
func groupsOf(network string) []string {
	g := ovnk.NamesFor(network).LoadBalancerGroups()
	slices.Sort(g)
	return g
}

// webServices is the services piece of a Layer2 network with one
// ClusterIP Service (ns1/web, TCP 80) and the network's switch on node1:
// a cluster-wide load balancer in the network's cluster group and a
// per-node one on the switch.
func webServices(t *testing.T, net topology.Layer2Network) *rows.Desired {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.50", ClusterIPs: []string{"10.96.0.50"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	d, err := svctopo.LoadBalancers(svctopo.Network{Name: net.Name, Topology: base.TopologyLayer2, Subnets: net.Subnets,
		ServiceCIDRs: []netip.Prefix{pfx("10.96.0.0/16")}},
		[]svctopo.Node{{Name: "node1", Switch: ovnk.NamesFor(net.Name).Switch()}}, []svctopo.Service{{Service: svc}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A removed network leaves no load balancer group behind, whichever of its
// pieces goes last, as upstream's Cleanup deletes a user-defined network's
// groups (base_network_controller_user_defined.go:
// cleanupLoadBalancerGroups, called from layer2_ and
// layer3_user_defined_network_controller.go's Cleanup): the topology's
// removal takes the groups no Service's load balancer holds, the services
// piece's removal the group its load balancers were in. Also when the
// removal is split into several transactions (a group goes after the
// switch and routers that named it).
func TestRealNetworkRemovalTakesItsLoadBalancerGroups(t *testing.T) {
	for _, tc := range []struct {
		name          string
		topologyFirst bool
	}{{"topology first", true}, {"services first", false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			net, nodes := exampleV4()
			topo, svcs := mustLayer2(t, net, nodes), webServices(t, net)
			e.apply(topo)
			e.apply(svcs)
			cluster := ovnk.NamesFor(net.Name).ClusterLBGroup()
			if got := e.lbGroups(); !slices.Equal(got, groupsOf(net.Name)) {
				t.Fatalf("groups before the removal: %v, want %v", got, groupsOf(net.Name))
			}
			if got := e.nbctl("--data=bare", "--no-headings", "--columns=load_balancer", "list", "Load_Balancer_Group", cluster); got == "" {
				t.Fatalf("%s holds no load balancer: the Service's should be in it", cluster)
			}

			e.c.eng.MaxTransactionOps = 4
			first, second := topo, svcs
			if !tc.topologyFirst {
				first, second = svcs, topo
			}
			e.apply(&rows.Desired{Owner: first.Owner})
			want := groupsOf(net.Name) // the switch and routers still name them
			if tc.topologyFirst {
				want = []string{cluster} // the Service's load balancer is in it
			}
			if got := e.lbGroups(); !slices.Equal(got, want) {
				t.Errorf("groups once the %s piece is gone: %v, want %v", first.Owner.Piece, got, want)
			}
			e.apply(&rows.Desired{Owner: second.Owner})
			if got := e.nbctl("list", "Load_Balancer_Group"); got != "" {
				t.Errorf("ovn-nbctl list Load_Balancer_Group after the network's removal:\n%s", got)
			}
			if got := e.nbctl("--data=bare", "--no-headings", "--columns=name", "list", "Load_Balancer"); got != "" {
				t.Errorf("load balancers left: %s", got)
			}
		})
	}
}

// Two networks' groups are independent: removing one network takes its
// three groups only; the other's stay, named by its switch as before, and
// its next Apply sends nothing.
func TestRealLoadBalancerGroupsOfTwoNetworks(t *testing.T) {
	e := newEnv(t)
	blue, nodes := exampleV4()
	green := blue
	green.Name, green.SwitchTunnelKey, green.TransitRouterTunnelKey = "test12_green", 16711686, 16715781
	green.Subnets = []netip.Prefix{pfx("203.204.0.0/24")}
	blueTopo, greenTopo := mustLayer2(t, blue, nodes), mustLayer2(t, green, nodes)
	e.apply(blueTopo)
	e.apply(greenTopo)
	both := append(groupsOf(blue.Name), groupsOf(green.Name)...)
	slices.Sort(both)
	if got := e.lbGroups(); !slices.Equal(got, both) {
		t.Fatalf("groups of two networks: %v, want %v", got, both)
	}
	greenSwitch := ovnk.NamesFor(green.Name).Switch()
	before := e.nbctl("get", "Logical_Switch", greenSwitch, "load_balancer_group")

	e.apply(&rows.Desired{Owner: blueTopo.Owner})
	if got := e.lbGroups(); !slices.Equal(got, groupsOf(green.Name)) {
		t.Errorf("groups once blue is removed: %v, want green's %v", got, groupsOf(green.Name))
	}
	if got := e.nbctl("get", "Logical_Switch", greenSwitch, "load_balancer_group"); got != before {
		t.Errorf("green's switch names groups %s, was %s", got, before)
	}
	if n := e.apply(greenTopo); n != 0 {
		t.Errorf("green's next Apply sent %d operations, want 0", n)
	}
	e.apply(&rows.Desired{Owner: greenTopo.Owner})
	if got := e.lbGroups(); len(got) != 0 {
		t.Errorf("groups once both are removed: %v", got)
	}
}
