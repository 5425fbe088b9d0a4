package dataplane

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	svctopo "github.com/udnkit/udnkit/dataplane/topology/services"
	"github.com/udnkit/udnkit/ovnk"
)

// partService is ClusterIP Service ns1/name on ip, TCP port.
func partService(name, ip string, port int32) svctopo.Service {
	return svctopo.Service{Service: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip},
			Ports: []corev1.ServicePort{{Name: "http", Port: port, Protocol: corev1.ProtocolTCP}}}}}
}

// lbField is one column of a load balancer, by name, as ovn-nbctl shows it.
func (e *env) lbField(name, column string) string {
	e.t.Helper()
	return strings.TrimSpace(e.nbctl("--bare", "--columns="+column, "find", "Load_Balancer", "name=\""+name+"\""))
}

// One Service's part of a network's services piece (rows.Owner.Only by
// k8s.ovn.org/owner) changes and removes that Service's load balancer and
// its membership in the cluster-wide group only: the other Service's row
// keeps its UUID and its place in the group; the rows a part writes are
// the whole piece's (the whole piece's next Apply sends nothing); the
// whole piece's removal still takes every Service's; a part holding a row
// without its pair is refused before anything is sent.
func TestRealServicePartTouchesOneService(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	e.apply(mustLayer2(t, net, nodes))
	snet := svctopo.Network{Name: net.Name, Topology: base.TopologyLayer2, Subnets: net.Subnets,
		ServiceCIDRs: []netip.Prefix{pfx("10.96.0.0/16")}}
	nodesOf := []svctopo.Node{{Name: "node1", Switch: ovnk.NamesFor(net.Name).Switch()}}
	web, db := partService("web", "10.96.0.50", 80), partService("db", "10.96.0.60", 5432)
	whole := func(svcs ...svctopo.Service) *rows.Desired {
		d, err := svctopo.LoadBalancers(snet, nodesOf, svcs)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	part := func(name string, s *svctopo.Service) *rows.Desired {
		d, err := svctopo.ServiceLoadBalancers(snet, nodesOf, "ns1", name, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	names := ovnk.NamesFor(net.Name)
	webLB, dbLB := names.ServiceLoadBalancer("ns1", "web", "TCP", "cluster"), names.ServiceLoadBalancer("ns1", "db", "TCP", "cluster")
	group := func() string {
		return strings.TrimSpace(e.nbctl("--bare", "--columns=load_balancer", "list", "Load_Balancer_Group", names.ClusterLBGroup()))
	}
	e.apply(whole(web, db))
	dbUUID, dbIDs := e.lbField(dbLB, "_uuid"), e.lbField(dbLB, "external_ids")

	// samePlan: the part's plan, which reads only its rows from the index
	// (index.ScanPart), is the full diff's.
	samePlan := func(what string, d *rows.Desired) {
		t.Helper()
		e.settle()
		fp, err := e.c.eng.FullPlan(d)
		if err != nil {
			t.Fatal(err)
		}
		p, err := e.c.eng.NewPlan(d)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := canonical(t, p.Ops), canonical(t, fp.Ops); got != want || len(fp.Ops) == 0 {
			t.Errorf("%s: the part's plan differs from the full diff (or is empty):\n%s\nwant:\n%s", what, got, want)
		}
	}
	moved := partService("web", "10.96.0.50", 8080)
	samePlan("web's new port", part("web", &moved))
	if n := e.apply(part("web", &moved)); n != 1 {
		t.Errorf("web's part sent %d operations for web's new port, want 1 (its row's update)", n)
	}
	if got := e.lbField(webLB, "vips"); got != "10.96.0.50:8080=" {
		t.Errorf("web's vips %s, want its new port", got)
	}
	if got := e.lbField(dbLB, "_uuid"); got != dbUUID {
		t.Errorf("db's load balancer is %s, was %s: web's part replaced it", got, dbUUID)
	}
	if n := e.apply(whole(moved, db)); n != 0 {
		t.Errorf("the whole piece after web's part sent %d operations, want 0 (the same rows)", n)
	}

	if n := e.apply(part("web", nil)); n == 0 {
		t.Error("web's empty part sent nothing")
	}
	if got := e.lbField(webLB, "name"); got != "" {
		t.Errorf("web's load balancer left after its part's removal: %s", got)
	}
	if got := group(); got != dbUUID {
		t.Errorf("%s holds %q after web's removal, want db's %s only", names.ClusterLBGroup(), got, dbUUID)
	}
	if got := e.lbField(dbLB, "external_ids"); got != dbIDs {
		t.Errorf("db's external_ids %s, were %s", got, dbIDs)
	}
	if got := len(strings.Fields(e.nbctl("--bare", "--columns=name", "list", "Load_Balancer_Group"))); got != 3 {
		t.Errorf("%d load balancer groups after a part's removal, want the network's 3", got)
	}

	bad := part("db", &db)
	bad.LoadBalancers = append(bad.LoadBalancers, nbdb.LoadBalancer{Name: "foreign", ExternalIDs: map[string]string{ovnk.ExternalIDLoadBalancerOwner: "ns1/web"}})
	if _, err := e.c.Apply(e.ctx, bad); err == nil || !strings.Contains(err.Error(), "without the pair") {
		t.Errorf("a part holding another Service's row: %v, want a refusal", err)
	}
	if _, err := svctopo.ServiceLoadBalancers(snet, nodesOf, "ns1", "web", &db); err == nil {
		t.Error("web's part built from db: no error")
	}

	// Another client marks db's row as web's: web's part now owns it.
	e.nbctl("set", "Load_Balancer", dbUUID, `external_ids:"`+ovnk.ExternalIDLoadBalancerOwner+`"="ns1/web"`)
	samePlan("db's row marked as web's", part("web", nil))

	e.apply(&rows.Desired{Owner: whole(db).Owner})
	if got := e.nbctl("--bare", "--columns=name", "list", "Load_Balancer"); got != "" {
		t.Errorf("load balancers left after the whole piece's removal: %s", got)
	}
}
