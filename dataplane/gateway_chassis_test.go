package dataplane

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// gatewayChassis lists every Gateway_Chassis row as
// "name chassis_name priority piece" (piece: its udnkit piece, "-" none),
// sorted.
func (e *env) gatewayChassis() []string {
	e.t.Helper()
	var rows []string
	for _, uuid := range lines(e.nbctl("--data=bare", "--no-headings", "--columns=_uuid", "list", "Gateway_Chassis")) {
		row := e.nbctl("--data=bare", "--no-headings", "--columns=name,chassis_name,priority", "list", "Gateway_Chassis", uuid)
		piece := "-"
		if ids := e.nbctl("get", "Gateway_Chassis", uuid, "external_ids"); strings.Contains(ids, ovnk.ExternalIDPiece) {
			piece = e.nbctl("get", "Gateway_Chassis", uuid, "external_ids:\""+ovnk.ExternalIDPiece+"\"")
		}
		rows = append(rows, strings.Join(append(strings.Fields(row), piece), " "))
	}
	slices.Sort(rows)
	return rows
}

// The transit router's trtos- port holds a Gateway_Chassis on the zone's
// node's chassis, as upstream's syncNodeClusterRouterPort writes it, for as
// long as the network does: it follows the node's chassis (the old row goes
// with the same transaction), an Apply of the same rows sends nothing, a
// row another client put on the port is left alone while the port is there,
// and removing the network leaves no Gateway_Chassis row behind. udnkit's
// own removals start no resync (the rows the server garbage-collects with
// their port are the Apply's own).
func TestTransitRouterSwitchPortGatewayChassis(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	names := ovnk.NamesFor(net.Name)
	port := names.RouterToSwitch()
	before := resyncCounts()

	e.apply(mustLayer2(t, net, nodes))
	chassis := chassisOf("node1")
	wantLines(t, "gateway chassis", strings.Join(e.gatewayChassis(), "\n"),
		port+"-"+chassis+" "+chassis+" 1 "+base.PieceTransitRouter)
	wantLines(t, "lrp-get-gateway-chassis", e.nbctl("lrp-get-gateway-chassis", port), port+"-"+chassis+" 1")
	if ops, err := e.c.eng.Plan(mustLayer2(t, net, nodes)); err != nil || len(ops) != 0 {
		t.Fatalf("a second plan of the same rows: %d operations (%v)", len(ops), err)
	}

	// ovnkube-node re-registers the node with a new chassis ID.
	nodes[0].Chassis = "7c0ffee0-node1"
	e.apply(mustLayer2(t, net, nodes))
	wantLines(t, "gateway chassis after the chassis changed", strings.Join(e.gatewayChassis(), "\n"),
		port+"-7c0ffee0-node1 7c0ffee0-node1 1 "+base.PieceTransitRouter)
	wantLines(t, "lrp-get-gateway-chassis", e.nbctl("lrp-get-gateway-chassis", port), port+"-7c0ffee0-node1 1")

	// Another client's gateway chassis on the port is not udnkit's.
	e.nbctl("lrp-set-gateway-chassis", port, "other-chassis", "5")
	e.settle()
	e.apply(mustLayer2(t, net, nodes))
	wantLines(t, "gateway chassis beside another client's", strings.Join(e.gatewayChassis(), "\n"),
		port+"-7c0ffee0-node1 7c0ffee0-node1 1 "+base.PieceTransitRouter,
		port+"-other-chassis other-chassis 5 -")
	e.nbctl("lrp-del-gateway-chassis", port, "other-chassis")
	e.settle()

	// A zone without a local node (the node moved to another zone) has none.
	nodes[0].Local = false
	e.apply(mustLayer2(t, net, nodes))
	if got := e.gatewayChassis(); len(got) != 0 {
		t.Fatalf("gateway chassis with no local node: %v", got)
	}
	nodes[0].Local = true
	e.apply(mustLayer2(t, net, nodes))

	e.apply(&rows.Desired{Owner: mustLayer2(t, net, nodes).Owner})
	if got := e.gatewayChassis(); len(got) != 0 {
		t.Fatalf("gateway chassis left after the network was removed: %v", got)
	}
	time.Sleep(3 * engine.HealTick)
	if got := countsSince(before); len(got) != 0 {
		t.Errorf("udnkit's own Applies started resyncs: %v", got)
	}
}

// A Gateway_Chassis row is no root row: a split Apply inserts it in the
// transaction that inserts its port (or adds it to an existing port), so
// after every transaction each trtos- port of many networks holds its
// gateway chassis, and the split Apply writes what one transaction writes.
func TestSplitApplyKeepsGatewayChassisWithTheirPort(t *testing.T) {
	e := newEnv(t)
	e.c.eng.MaxTransactionOps = 8
	var ds []*rows.Desired
	for i, name := range []string{"split_a", "split_b", "split_c"} {
		net := benchNetwork()
		net.Name = name
		net.SwitchTunnelKey += i
		net.TransitRouterTunnelKey += i
		ds = append(ds, mustLayer2(t, net, chunkNodes(12)))
	}
	checked := 0
	e.hooks.AfterTransaction = func(_ rows.Owner, k, _ int) {
		for _, p := range lines(e.nbctl("--data=bare", "--no-headings", "--columns=name", "list", "Logical_Router_Port")) {
			if !strings.HasPrefix(p, "trtos-") {
				continue
			}
			if gcs := lines(e.nbctl("lrp-get-gateway-chassis", p)); len(gcs) != 3 {
				t.Errorf("after transaction %d: %s holds gateway chassis %v, want the 3 local nodes'", k, p, gcs)
			}
			checked++
		}
		if n := len(e.gatewayChassis()); n%3 != 0 {
			t.Errorf("after transaction %d: %d gateway chassis rows", k, n)
		}
	}
	for _, d := range ds {
		res, err := e.c.Apply(e.ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if res.Transactions < 3 {
			t.Fatalf("%s: %d transactions, want a split Apply", d.Owner.Network, res.Transactions)
		}
	}
	if checked == 0 {
		t.Fatal("no transaction had a trtos- port to check")
	}
	got := e.gatewayChassis()
	if len(got) != 9 {
		t.Fatalf("gateway chassis: %v, want 3 per network", got)
	}
	for _, d := range ds {
		if ops, err := e.c.eng.Plan(d); err != nil || len(ops) != 0 {
			t.Errorf("%s: a fresh plan has %d operations (%v)", d.Owner.Network, len(ops), err)
		}
	}
	e.hooks.AfterTransaction = nil
	for _, d := range ds {
		e.apply(&rows.Desired{Owner: d.Owner})
	}
	if got := e.gatewayChassis(); len(got) != 0 {
		t.Fatalf("gateway chassis left: %v", got)
	}
}

// A port that goes takes its gateway chassis along (the server
// garbage-collects them), and a port's gateway chassis change without the
// port: neither leaves a row behind or starts a resync.
func TestRemovedPortTakesItsGatewayChassis(t *testing.T) {
	e := newEnv(t)
	before := resyncCounts()
	owner := rows.Owner{Network: "gc_net", Topology: base.TopologyLayer2, Piece: base.PieceTransitRouter}
	desired := func(ports ...string) *rows.Desired {
		r := rows.Router{Row: nbdb.LogicalRouter{Name: "gc_router"}, GatewayChassis: map[string][]nbdb.GatewayChassis{}}
		for i, p := range ports {
			r.Ports = append(r.Ports, nbdb.LogicalRouterPort{Name: p, MAC: "0a:58:0a:00:00:0" + strconv.Itoa(i+1), Networks: []string{"10.0." + strconv.Itoa(i) + ".1/24"}})
			r.GatewayChassis[p] = []nbdb.GatewayChassis{{Name: p + "-ch1", ChassisName: "ch1", Priority: 1}, {Name: p + "-ch2", ChassisName: "ch2", Priority: 2}}
		}
		return &rows.Desired{Owner: owner, Routers: []rows.Router{r}}
	}
	e.apply(desired("p1", "p2"))
	wantLines(t, "gateway chassis", strings.Join(e.gatewayChassis(), "\n"),
		"p1-ch1 ch1 1 "+base.PieceTransitRouter, "p1-ch2 ch2 2 "+base.PieceTransitRouter,
		"p2-ch1 ch1 1 "+base.PieceTransitRouter, "p2-ch2 ch2 2 "+base.PieceTransitRouter)
	e.apply(desired("p2"))
	wantLines(t, "gateway chassis after p1 went", strings.Join(e.gatewayChassis(), "\n"),
		"p2-ch1 ch1 1 "+base.PieceTransitRouter, "p2-ch2 ch2 2 "+base.PieceTransitRouter)
	d := desired("p2")
	d.Routers[0].GatewayChassis["p2"][1].Priority = 3
	e.apply(d)
	wantLines(t, "lrp-get-gateway-chassis p2", e.nbctl("lrp-get-gateway-chassis", "p2"), "p2-ch2 3", "p2-ch1 1")

	bad := desired("p2")
	bad.Routers[0].GatewayChassis["p9"] = []nbdb.GatewayChassis{{Name: "p9-ch1", ChassisName: "ch1"}}
	if _, err := e.c.Apply(e.ctx, bad); err == nil || !strings.Contains(err.Error(), `gateway chassis of port "p9", which is not one of its ports`) {
		t.Errorf("gateway chassis of a port the router does not have: %v", err)
	}
	e.apply(&rows.Desired{Owner: owner})
	if got := e.gatewayChassis(); len(got) != 0 {
		t.Fatalf("gateway chassis left: %v", got)
	}
	time.Sleep(3 * engine.HealTick)
	if got := countsSince(before); len(got) != 0 {
		t.Errorf("udnkit's own Applies started resyncs: %v", got)
	}
}
