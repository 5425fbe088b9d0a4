package dataplane

import (
	"slices"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/dataplane/topology/base"
)

// Rows udnkit does not own survive every apply, including the old Layer2
// topology's rows OVN-Kubernetes created (byte for byte); owned rows that are
// no longer desired go, and with --adopt-legacy-layer2 so do exactly those
// legacy rows: the GR-to-switch port, GR route and NAT.
func TestLayer2StaleRowsGoForeignRowsStay(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	d := mustLayer2(t, net, nodes)
	e.apply(d)

	// Someone else's rows: a router, a route on our transit router, a port on our switch.
	e.nbctl("lr-add", "foreign-router", "--", "lr-route-add", "foreign-router", "10.0.0.0/8", "10.1.1.1")
	e.nbctl("lr-route-add", tr, "192.0.2.0/24", "100.88.0.5")
	e.nbctl("lsp-add", sw, "pod-a")
	// The old Layer2 topology's rows on the GR, marked with the network and
	// topology only (no piece): the GR-to-switch port, the GR's pod route and the
	// management-port SNAT, which now lives on the transit router.
	legacyNet, legacyTopo := `external_ids:"k8s.ovn.org/network"=test12_namespace-scoped`, `external_ids:"k8s.ovn.org/topology"=layer2`
	e.nbctl("--", "--id=@p", "create", "Logical_Router_Port", "name=rtos-"+sw+"-old", `mac="0a:58:64:41:00:02"`,
		`networks="203.203.0.1/24"`, legacyNet, legacyTopo, "--", "add", "Logical_Router", gr1, "ports", "@p")
	e.nbctl("--", "--id=@r", "create", "Logical_Router_Static_Route", `ip_prefix="203.203.0.0/24"`, `nexthop="203.203.0.2"`,
		legacyNet, legacyTopo, "--", "add", "Logical_Router", gr1, "static_routes", "@r")
	e.nbctl("--", "--id=@n", "create", "NAT", "type=snat", `logical_ip="203.203.0.0/24"`, `external_ip="169.254.0.12"`,
		legacyNet, legacyTopo, "--", "add", "Logical_Router", gr1, "nat", "@n")

	// Without --adopt-legacy-layer2 those rows are OVN-Kubernetes': every
	// apply leaves them byte for byte.
	legacyRows := func() string {
		var out []string
		for table, cols := range map[string]string{"Logical_Router_Port": "_uuid,name,mac,networks,external_ids",
			"Logical_Router_Static_Route": "_uuid,ip_prefix,nexthop,external_ids", "NAT": "_uuid,type,logical_ip,external_ip,external_ids"} {
			for _, line := range strings.Split(e.nbctl("--format=csv", "--no-headings", "--columns="+cols, "find", table,
				`external_ids:"k8s.ovn.org/network"=test12_namespace-scoped`), "\n") {
				if !strings.Contains(line, "udnkit-piece") {
					out = append(out, line)
				}
			}
		}
		slices.Sort(out)
		return strings.Join(out, "\n")
	}
	before := legacyRows()
	if !strings.Contains(before, "rtos-"+sw+"-old") || !strings.Contains(before, "169.254.0.12") {
		t.Fatalf("fixture: the legacy rows are not there:\n%s", before)
	}
	for i := 0; i < 3; i++ {
		e.apply(mustLayer2(t, net, nodes[:2+i%2]))
		if after := legacyRows(); after != before {
			t.Fatalf("apply %d changed OVN-Kubernetes' rows without --adopt-legacy-layer2:\nbefore:\n%s\nafter:\n%s", i, before, after)
		}
	}

	// node3 leaves the cluster, and the migration option is on: the old
	// topology's rows go.
	net.AdoptLegacy = true
	e.apply(mustLayer2(t, net, nodes))
	d = mustLayer2(t, net, nodes[:2])
	if ops := e.apply(d); ops == 0 {
		t.Fatal("removing a node sent no operations")
	}
	ports := e.rows("Logical_Router_Port")
	if _, ok := ports["trtor-"+gr3]; ok {
		t.Error("node3's trtor port survived its removal")
	}
	if _, ok := ports["rtos-"+sw+"-old"]; ok {
		t.Error("the old topology's GR-to-switch port survived")
	}
	if _, ok := ports["trtor-"+gr2]; !ok {
		t.Error("node2's trtor port went away")
	}
	wantLines(t, "transit router routes", e.nbctl("lr-route-list", tr),
		"IPv4 Routes", "Route Table <main>:",
		"100.65.0.2 100.88.0.5 dst-ip",
		"100.65.0.3 100.88.0.7 dst-ip",
		"192.0.2.0/24 100.88.0.5 dst-ip",
		"203.203.0.0/24 100.88.0.5 src-ip",
	)
	wantLines(t, "gateway router routes", e.nbctl("lr-route-list", gr1),
		"IPv4 Routes", "Route Table <main>:",
		"203.203.0.0/24 100.88.0.4 dst-ip rtotr-"+gr1,
	)
	if got := e.nbctl("lr-nat-list", gr1); got != "" {
		t.Errorf("the old GR SNAT survived: %s", got)
	}
	if got := e.nbctl("lr-route-list", "foreign-router"); !strings.Contains(got, "10.0.0.0/8") {
		t.Errorf("foreign router's route was touched: %s", got)
	}
	if got := e.nbctl("lsp-list", sw); !strings.Contains(got, "pod-a") {
		t.Errorf("foreign switch port was removed: %s", got)
	}
	if ops := e.apply(d); ops != 0 {
		t.Errorf("second apply sent %d operations, want 0", ops)
	}

	// The network goes away: its routers and switch go, the foreign router stays.
	if ops := e.apply(&rows.Desired{Owner: d.Owner}); ops == 0 {
		t.Fatal("deleting the network sent no operations")
	}
	wantLines(t, "routers left", e.nbctl("--columns=name", "--data=bare", "--no-headings", "list", "Logical_Router"), "foreign-router")
	if got := e.nbctl("--columns=name", "--data=bare", "--no-headings", "list", "Logical_Switch"); got != "" {
		t.Errorf("switch left after deleting the network: %s", got)
	}
}

// A router with a desired name that udnkit does not own is refused, and the
// whole transaction is not sent: nothing else is written either.
func TestApplyRefusesForeignRowWithDesiredName(t *testing.T) {
	e := newEnv(t)
	e.nbctl("lr-add", tr)
	e.settle()
	net, nodes := exampleV4()
	d, err := topology.Layer2Topology(net, nodes)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.c.Apply(e.ctx, d)
	want := `logical router "` + tr + `" exists but is not owned by network "test12_namespace-scoped"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
	wantLines(t, "routers", e.nbctl("--columns=name", "--data=bare", "--no-headings", "list", "Logical_Router"), tr)
	if got := e.nbctl("--columns=name", "--data=bare", "--no-headings", "list", "Logical_Switch"); got != "" {
		t.Errorf("a refused apply created a switch: %s", got)
	}
	if got := e.nbctl("lr-route-list", tr); got != "" {
		t.Errorf("a refused apply touched the foreign router: %s", got)
	}
}

// Two desired rows with one identity would never converge: refused up front.
func TestApplyRejectsDuplicateDesiredRows(t *testing.T) {
	e := newEnv(t)
	route := dstIPRoute("10.0.0.0/8", "10.1.1.1")
	d := &rows.Desired{
		Owner:   rows.Owner{Network: "n", Topology: base.TopologyLayer2, Piece: base.PieceTransitRouter},
		Routers: []rows.Router{{Row: nbdb.LogicalRouter{Name: "r"}, Routes: []nbdb.LogicalRouterStaticRoute{route, route}}},
	}
	_, err := e.c.Apply(e.ctx, d)
	if err == nil || !strings.Contains(err.Error(), `two Logical_Router_Static_Route rows with the same identity "|10.0.0.0/8|10.1.1.1|dst-ip|"`) {
		t.Fatalf("err = %v", err)
	}
	if got := e.nbctl("show"); got != "" {
		t.Errorf("a refused apply wrote: %s", got)
	}
	// The same with the router and a route there, planned through the
	// column's memo (a key already held, and a new key twice).
	other := dstIPRoute("10.2.0.0/16", "10.1.1.1")
	d.Routers[0].Routes = []nbdb.LogicalRouterStaticRoute{route}
	e.apply(d) // creates the router
	e.apply(d) // its first plan of the router's routes
	e.apply(d) // the second: builds the column's memo
	before := e.nbctl("lr-route-list", "r")
	hits := e.c.eng.Memos.Get(d.Owner).ColHits
	for name, routes := range map[string][]nbdb.LogicalRouterStaticRoute{
		"held key twice": {route, other, route},
		"new key twice":  {route, other, other},
	} {
		d.Routers[0].Routes = routes
		_, err := e.c.Apply(e.ctx, d)
		if err == nil || !strings.Contains(err.Error(), "rows with the same identity") {
			t.Errorf("%s: err = %v", name, err)
		}
		if got := e.nbctl("lr-route-list", "r"); got != before {
			t.Errorf("%s: a refused apply changed the routes:\n%s\nwas:\n%s", name, got, before)
		}
	}
	if e.c.eng.Memos.Get(d.Owner).ColHits == hits {
		t.Error("the refused plans did not go through the column's memo")
	}
	d.Routers[0].Routes = []nbdb.LogicalRouterStaticRoute{route, route}
	d.Owner.Piece = ""
	if _, err := e.c.Apply(e.ctx, d); err == nil || !strings.Contains(err.Error(), "owner needs network, topology and piece") {
		t.Errorf("owner without piece: err = %v", err)
	}
}

// Two owned routes with one identity (a racing writer's leftovers) heal to one.
func TestApplyHealsDuplicateOwnedRows(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	d := mustLayer2(t, net, nodes)
	e.apply(d)
	e.nbctl("--", "--id=@r", "create", "Logical_Router_Static_Route", `ip_prefix="100.65.0.3"`, `nexthop="100.88.0.7"`,
		`external_ids:"k8s.ovn.org/node"=node2`, `external_ids:"k8s.ovn.org/network"=test12_namespace-scoped`, `external_ids:"k8s.ovn.org/topology"=layer2`,
		`external_ids:"k8s.ovn.org/udnkit-piece"=transit-router`, "--", "add", "Logical_Router", tr, "static_routes", "@r")
	if got := strings.Count(strings.Join(lines(e.nbctl("lr-route-list", tr)), "\n"), "100.65.0.3 100.88.0.7 dst-ip"); got != 2 {
		t.Fatalf("setup: %d copies of the route", got)
	}
	if ops := e.apply(d); ops != 1 {
		t.Errorf("healing sent %d operations, want 1 (one mutate of the router)", ops)
	}
	if got := strings.Count(strings.Join(lines(e.nbctl("lr-route-list", tr)), "\n"), "100.65.0.3 100.88.0.7 dst-ip"); got != 1 {
		t.Errorf("%d copies of the route after healing, want 1", got)
	}
}

// A second owned router with a wanted name (Logical_Router has no name index)
// is removed with its children; the first one stays.
func TestApplyRemovesSecondOwnedRouterWithWantedName(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	d := mustLayer2(t, net, nodes)
	e.apply(d)
	e.nbctl("--", "create", "Logical_Router", "name="+tr, `external_ids:"k8s.ovn.org/network"=test12_namespace-scoped`,
		`external_ids:"k8s.ovn.org/topology"=layer2`, `external_ids:"k8s.ovn.org/udnkit-piece"=transit-router`)
	if ops := e.apply(d); ops != 1 {
		t.Errorf("removing the second router sent %d operations, want 1", ops)
	}
	names := lines(e.nbctl("--columns=name", "--data=bare", "--no-headings", "list", "Logical_Router"))
	if strings.Join(names, " ") != gr1+" "+tr {
		t.Errorf("routers = %v, want one GR and one transit router", names)
	}
	if !strings.Contains(e.nbctl("show", tr), "trtor-"+gr3) {
		t.Error("the surviving transit router lost its ports")
	}
}
