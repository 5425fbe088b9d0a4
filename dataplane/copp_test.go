package dataplane

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/dataplane/topology/base"
)

// upstreamCOPP is the default COPP as upstream's EnsureDefaultCOPP
// (go-controller/pkg/ovn/copp.go, constants in pkg/types/const.go) writes
// it: protocol → meter name.
var upstreamCOPP = map[string]string{
	"arp": "arp-rate-limiter", "arp-resolve": "arp-resolve-rate-limiter", "bfd": "bfd-rate-limiter",
	"event-elb": "event-elb-rate-limiter", "icmp4-error": "icmp4-error-rate-limiter",
	"icmp6-error": "icmp6-error-rate-limiter", "reject": "reject-rate-limiter",
	"tcp-reset": "tcp-reset-rate-limiter", "svc-monitor": "svc-monitor-rate-limiter",
}

// writeUpstreamCOPP writes the default COPP as ovnkube-controller does, in
// one transaction: one band (drop, 25) that every meter (fair, pktps)
// holds, and the Copp naming them, none with external_ids.
func (e *env) writeUpstreamCOPP() {
	e.t.Helper()
	args := []string{"--", "--id=@band", "create", "Meter_Band", "action=drop", "rate=25"}
	var meters []string
	for _, proto := range sortedKeys(upstreamCOPP) {
		name := upstreamCOPP[proto]
		args = append(args, "--", "create", "Meter", "name="+name, "unit=pktps", "fair=true", "bands=@band")
		meters = append(meters, fmt.Sprintf("%q=%q", proto, name))
	}
	args = append(args, "--", "create", "Copp", "name=ovnkube-default", "meters={"+strings.Join(meters, ",")+"}")
	e.nbctl(args...)
}

func sortedKeys(m map[string]string) []string { return keys(m) }

// zoneRows is every Copp, Meter and Meter_Band row with its UUID and every
// column, sorted: what "untouched" compares.
func (e *env) zoneRows() string {
	e.t.Helper()
	var b strings.Builder
	for _, table := range []string{"Copp", "Meter", "Meter_Band"} {
		b.WriteString(table + ":\n")
		b.WriteString(strings.Join(lines(e.nbctl("--format=csv", "--data=bare", "--no-headings", "list", table)), "\n") + "\n")
	}
	return b.String()
}

// coppUUID is the UUID of the Copp named ovnkube-default ("" none).
func (e *env) coppUUID() string {
	e.t.Helper()
	return e.nbctl("--data=bare", "--no-headings", "--columns=_uuid", "find", "Copp", "name=ovnkube-default")
}

// routerCopps maps each router to its copp column.
func (e *env) routerCopps() map[string]string { return e.rows("Logical_Router", "copp") }

// wantCopp fails unless every named router's copp is uuid.
func wantCopp(t *testing.T, copps map[string]string, uuid string, routers ...string) {
	t.Helper()
	if uuid == "" {
		t.Fatal("no Copp named ovnkube-default")
	}
	for _, r := range routers {
		if got, ok := copps[r]; !ok || got != uuid {
			t.Errorf("router %s copp = %q (present %v), want the zone's ovnkube-default %s", r, got, ok, uuid)
		}
	}
}

// wantUpstreamCOPP checks the zone's default COPP holds what upstream's
// EnsureDefaultCOPP writes: the meters by protocol, each fair, pktps and
// holding the one band, which drops above 25; nothing carries
// external_ids.
func wantUpstreamCOPP(t *testing.T, e *env) {
	t.Helper()
	var want []string
	for _, proto := range sortedKeys(upstreamCOPP) {
		want = append(want, proto+"="+upstreamCOPP[proto])
	}
	wantLines(t, "Copp", e.nbctl("--format=csv", "--data=bare", "--no-headings", "--columns=name,meters,external_ids", "list", "Copp"),
		"ovnkube-default,"+strings.Join(want, " ")+",")
	band := e.nbctl("--data=bare", "--no-headings", "--columns=_uuid", "list", "Meter_Band")
	wantLines(t, "Meter_Band", e.nbctl("--format=csv", "--data=bare", "--no-headings", "--columns=action,rate,burst_size,external_ids", "list", "Meter_Band"),
		"drop,25,0,")
	var meters []string
	for _, proto := range sortedKeys(upstreamCOPP) {
		meters = append(meters, upstreamCOPP[proto]+",pktps,true,"+band+",")
	}
	wantLines(t, "Meter", e.nbctl("--format=csv", "--data=bare", "--no-headings", "--columns=name,unit,fair,bands,external_ids", "list", "Meter"),
		meters...)
}

// In a zone where ovnkube-controller created the default COPP, udnkit's
// transit router and the gateway router it creates name that row, and the
// COPP, its meters and band are left exactly as they were (same UUIDs, same
// columns, no owner external_ids).
func TestCOPPOfUpstreamIsReferencedAndLeftAlone(t *testing.T) {
	e := newEnv(t)
	e.writeUpstreamCOPP()
	before, copp := e.zoneRows(), e.coppUUID()
	net, nodes := exampleV4()
	d := mustLayer2(t, net, nodes)
	e.apply(d)
	wantCopp(t, e.routerCopps(), copp, tr, gr1)
	if after := e.zoneRows(); after != before {
		t.Errorf("udnkit changed upstream's COPP rows:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if ops, err := e.c.eng.Plan(mustLayer2(t, net, nodes)); err != nil || len(ops) != 0 {
		t.Errorf("a fresh plan has %d operations (%v)", len(ops), err)
	}
}

// In a zone where udnkit is the only writer, the first network creates
// the default COPP as upstream writes it, and its routers name it; the
// next Apply plans nothing.
func TestCOPPIsCreatedInAnEmptyZone(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	e.apply(mustLayer2(t, net, nodes))
	wantUpstreamCOPP(t, e)
	wantCopp(t, e.routerCopps(), e.coppUUID(), tr, gr1)
	if ops, err := e.c.eng.Plan(mustLayer2(t, net, nodes)); err != nil || len(ops) != 0 {
		t.Errorf("a fresh plan has %d operations (%v)", len(ops), err)
	}
}

// Every network of a zone names the one COPP; removing a network leaves
// the others' routers their COPP, and removing the last one leaves the
// COPP whole (it is the zone's, as upstream's is: no half rows).
func TestCOPPIsSharedByTheZonesNetworks(t *testing.T) {
	e := newEnv(t)
	netA, nodes := exampleV4()
	netB := netA
	netB.Name, netB.SwitchTunnelKey, netB.TransitRouterTunnelKey = "ns2_green", 16711686, 16715781
	dA, dB := mustLayer2(t, netA, nodes), mustLayer2(t, netB, nodes)
	dC, err := topology.Layer3SubnetPolicies("ns3_red", []netip.Prefix{pfx("10.200.0.0/16"), pfx("10.201.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	e.apply(dA)
	e.apply(dB)
	e.apply(dC)
	copp, zone := e.coppUUID(), e.zoneRows()
	wantCopp(t, e.routerCopps(), copp, tr, gr1, "ns2_green_transit_router", "GR_ns2_green_node1", "ns3_red_ovn_cluster_router")

	e.apply(&rows.Desired{Owner: dA.Owner})
	copps := e.routerCopps()
	if _, ok := copps[tr]; ok {
		t.Fatalf("network A's transit router is still there")
	}
	wantCopp(t, copps, copp, "ns2_green_transit_router", "GR_ns2_green_node1", "ns3_red_ovn_cluster_router")
	if got := e.zoneRows(); got != zone {
		t.Errorf("removing one network changed the zone's COPP:\nbefore:\n%s\nafter:\n%s", zone, got)
	}

	e.apply(&rows.Desired{Owner: dB.Owner})
	e.apply(&rows.Desired{Owner: dC.Owner})
	if got := e.routerCopps(); len(got) != 0 {
		t.Fatalf("routers left after removing every network: %v", got)
	}
	if got := e.zoneRows(); got != zone {
		t.Errorf("removing the last network changed the zone's COPP (it stays whole):\nbefore:\n%s\nafter:\n%s", zone, got)
	}
	wantUpstreamCOPP(t, e)
}

// A transaction that fails takes the COPP with it: the COPP and the
// routers that name it commit together or not at all. A COPP that names
// a meter it does not define is refused before anything is sent.
func TestCOPPCommitsWithItsRouters(t *testing.T) {
	e := newEnv(t)
	// One transaction (a split Apply commits its zone rows first:
	// TestSplitApplyKeepsTheCOPPWhole), whatever the plan's size.
	e.c.eng.MaxTransactionOps = -1
	net, nodes := exampleV4()
	// Another router holds a port with the name of the transit router's
	// switch-facing port: Logical_Router_Port names are unique, so the
	// Apply's transaction fails at the server.
	e.nbctl("lr-add", "other")
	e.nbctl("lrp-add", "other", rtos, "0a:58:0a:00:00:01", "10.0.0.1/24")
	if _, err := e.c.Apply(e.ctx, mustLayer2(t, net, nodes)); err == nil {
		t.Fatal("the Apply succeeded despite the clashing port name")
	}
	if got := e.zoneRows(); got != "Copp:\n\nMeter:\n\nMeter_Band:\n\n" {
		t.Errorf("a failed Apply left COPP rows:\n%s", got)
	}
	if got := e.routerCopps(); len(got) != 1 {
		t.Errorf("a failed Apply left routers: %v", got)
	}

	e.nbctl("lr-del", "other")
	bad := mustLayer2(t, net, nodes)
	c := base.DefaultCOPP()
	c.Row.Meters["arp"] = "no-such-meter"
	bad.Routers[0].Copp = c
	_, err := e.c.Apply(e.ctx, bad)
	if want := `copp: meters[arp] names meter "no-such-meter", which the COPP does not define`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Apply of a COPP naming an undefined meter: %v, want it to contain %q", err, want)
	}
	if got := e.zoneRows(); got != "Copp:\n\nMeter:\n\nMeter_Band:\n\n" {
		t.Errorf("a refused Apply wrote COPP rows:\n%s", got)
	}

	e.apply(mustLayer2(t, net, nodes))
	wantUpstreamCOPP(t, e)
}

// A split Apply inserts the COPP, its meters and band in one transaction
// (after each transaction the zone holds all of them or none), and routers
// inserted by later transactions name it by the UUID the server gave it.
func TestSplitApplyKeepsTheCOPPWhole(t *testing.T) {
	e := newEnv(t)
	e.c.eng.MaxTransactionOps = 8
	count := func(table string) int {
		return len(strings.Fields(e.nbctl("--data=bare", "--no-headings", "--columns=_uuid", "list", table)))
	}
	e.hooks.AfterTransaction = func(_ rows.Owner, k, _ int) {
		if n := [3]int{count("Copp"), count("Meter"), count("Meter_Band")}; n != [3]int{0, 0, 0} && n != [3]int{1, 9, 1} {
			t.Errorf("after transaction %d: %d Copp, %d Meter and %d Meter_Band rows: half a COPP", k, n[0], n[1], n[2])
		}
	}
	d := mustLayer2(t, benchNetwork(), chunkNodes(20))
	res, err := e.c.Apply(e.ctx, d)
	if err != nil || res.Transactions < 3 {
		t.Fatalf("want a split apply: %+v, %v", res, err)
	}
	wantUpstreamCOPP(t, e)
	wantCopp(t, e.routerCopps(), e.coppUUID(), "bench_net_transit_router", "GR_bench_net_node1", "GR_bench_net_node2", "GR_bench_net_node3")
}

// A COPP deleted by hand (the routers' weak references go with it) is
// created again by the next Apply, with the meters that are left, and the
// routers name the new one.
func TestDeletedCOPPComesBack(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	e.apply(mustLayer2(t, net, nodes))
	old := e.coppUUID()
	e.nbctl("destroy", "Copp", old)
	if got := e.routerCopps()[tr]; got != "" {
		t.Fatalf("transit router copp = %q after the COPP was destroyed", got)
	}
	e.apply(mustLayer2(t, net, nodes))
	copp := e.coppUUID()
	if copp == old {
		t.Fatalf("the COPP kept its UUID %s after it was destroyed", old)
	}
	wantUpstreamCOPP(t, e)
	wantCopp(t, e.routerCopps(), copp, tr, gr1)
}

// The first Applies of two networks in an empty zone, planned at the same
// time, both succeed with one COPP between them: the second waits for the
// first to insert it and names it (without that, both insert it and the
// second transaction violates the COPP's unique name).
func TestConcurrentFirstAppliesShareOneCOPP(t *testing.T) {
	e := newEnv(t)
	netA, nodes := exampleV4()
	netB := netA
	netB.Name, netB.SwitchTunnelKey, netB.TransitRouterTunnelKey = "ns2_green", 16711686, 16715781
	// Each Apply waits before its first transaction until both have planned
	// or a moment has passed, so their plans overlap when nothing orders them.
	var mu sync.Mutex
	arrived := 0
	both := make(chan struct{})
	e.hooks.BeforeTransact = func(rows.Owner) {
		mu.Lock()
		if arrived++; arrived == 2 {
			close(both)
		}
		mu.Unlock()
		select {
		case <-both:
		case <-time.After(time.Second):
		}
	}
	errs := make(chan error, 2)
	for _, net := range []topology.Layer2Network{netA, netB} {
		d := mustLayer2(t, net, nodes)
		go func() { _, err := e.c.Apply(e.ctx, d); errs <- err }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("apply: %v", err)
		}
	}
	wantUpstreamCOPP(t, e)
	wantCopp(t, e.routerCopps(), e.coppUUID(), tr, gr1, "ns2_green_transit_router", "GR_ns2_green_node1")
}

// Once the zone's COPP and meters exist, the first Applies of two networks
// (each inserting its own load balancer groups, zone rows too) do not wait
// for each other: the second completes while the first is held just before
// its transaction, and then the first completes too.
func TestFirstAppliesOfNetworksWithOwnZoneRowsDoNotWait(t *testing.T) {
	e := newEnv(t)
	netA, nodes := exampleV4()
	e.apply(mustLayer2(t, netA, nodes))
	netB, netC := netA, netA
	netB.Name, netB.SwitchTunnelKey, netB.TransitRouterTunnelKey = "ns2_green", 16711686, 16715781
	netC.Name, netC.SwitchTunnelKey, netC.TransitRouterTunnelKey = "ns3_red", 16711687, 16715782
	held, cDone := make(chan struct{}), make(chan struct{})
	e.hooks.BeforeTransact = func(o rows.Owner) {
		if o.Network != netB.Name {
			return
		}
		close(held)
		select {
		case <-cDone:
		case <-time.After(10 * time.Second):
			t.Error("the red network's first Apply waited for the green one's")
		}
	}
	errs := make(chan error, 1)
	go func() { _, err := e.c.Apply(e.ctx, mustLayer2(t, netB, nodes)); errs <- err }()
	<-held
	if _, err := e.c.Apply(e.ctx, mustLayer2(t, netC, nodes)); err != nil {
		t.Errorf("red: %v", err)
	}
	close(cDone)
	if err := <-errs; err != nil {
		t.Errorf("green: %v", err)
	}
	groups := e.nbctl("--bare", "--columns=name", "list", "Load_Balancer_Group")
	for _, want := range []string{"ns2_green_clusterLBGroup", "ns3_red_clusterLBGroup"} {
		if !strings.Contains(groups, want) {
			t.Errorf("load balancer groups lack %s:\n%s", want, groups)
		}
	}
	wantCopp(t, e.routerCopps(), e.coppUUID(), tr, "ns2_green_transit_router", "ns3_red_transit_router")
}

// A split first Apply holding the COPP's lock does not yield its turn to the
// Apply waiting for that lock: the waiter cannot go ahead until the split
// Apply is done, so yielding to it only waits out the yield's bound
// (YieldAtMost) before every transaction.
func TestSplitApplyDoesNotYieldToTheApplyWaitingForItsZoneRows(t *testing.T) {
	e := newEnv(t)
	e.c.eng.MaxTransactionOps = 8
	const bound = 3 * time.Second
	e.hooks.YieldAtMost = bound
	netA, nodes := exampleV4()
	netB := netA
	netB.Name, netB.SwitchTunnelKey, netB.TransitRouterTunnelKey = "ns2_green", 16711686, 16715781
	var once sync.Once
	startB := make(chan struct{})
	e.hooks.Observe = func(o rows.Owner, step string, _ time.Duration) {
		if o.Network == netA.Name && step == "plan" {
			once.Do(func() { close(startB) }) // A holds the COPP's lock
		}
	}
	errs := make(chan error, 2)
	start := time.Now()
	var res engine.Result
	go func() {
		var err error
		res, err = e.c.Apply(e.ctx, mustLayer2(t, netA, nodes))
		errs <- err
	}()
	<-startB
	go func() { _, err := e.c.Apply(e.ctx, mustLayer2(t, netB, nodes)); errs <- err }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("apply: %v", err)
		}
	}
	if res.Transactions < 2 {
		t.Fatalf("the first Apply was sent in %d transaction(s), want a split one", res.Transactions)
	}
	if took := time.Since(start); took >= bound {
		t.Errorf("the two first Applies took %v: the split one waited for the one waiting for its lock", took)
	}
	wantCopp(t, e.routerCopps(), e.coppUUID(), tr, gr1, "ns2_green_transit_router", "GR_ns2_green_node1")
}

// meteredFlows counts, by controller meter, the logical flows ovn-northd
// computed for a router's datapath.
func (e *env) meteredFlows(router string) map[string]int {
	e.t.Helper()
	e.nbctl("--timeout=60", "--wait=sb", "sync")
	dp := e.sbctl("--data=bare", "--no-headings", "--columns=_uuid", "find", "Datapath_Binding", "external_ids:name="+router)
	if dp == "" {
		e.t.Fatalf("no datapath of %s in the Southbound", router)
	}
	out := e.sbctl("--data=bare", "--no-headings", "--format=csv", "--columns=controller_meter",
		"find", "Logical_Flow", "logical_datapath="+dp)
	n := map[string]int{}
	for _, m := range strings.Fields(out) {
		n[m]++
	}
	return n
}

// OVN's northd meters the transit router's and gateway router's packets
// to ovn-controller (ICMP errors) with the COPP's meters; with the router's
// copp cleared, none of its flows is metered.
func TestNorthdMetersTheRoutersWithTheCOPP(t *testing.T) {
	e := newEnv(t)
	e.startNorthd()
	net, nodes := exampleV4()
	e.apply(mustLayer2(t, net, nodes))
	for _, r := range []string{tr, gr1} {
		if got := e.meteredFlows(r); got["icmp4-error-rate-limiter"] == 0 {
			t.Errorf("%s: no logical flow metered by icmp4-error-rate-limiter; metered flows: %v", r, got)
		}
	}
	e.nbctl("clear", "Logical_Router", tr, "copp")
	if got := e.meteredFlows(tr); len(got) != 0 {
		t.Errorf("%s without its copp: metered flows %v, want none", tr, got)
	}
}

// A COPP another client deletes comes back without waiting for a
// reconcile: the weak references it empties are a foreign edit of every
// network's routers, and their concurrent re-applies insert one COPP.
func TestDeletedCOPPIsHealed(t *testing.T) {
	e := newEnv(t)
	ds := healNetworks(t)
	e.reapplyOnResync(ds)
	for _, d := range ds {
		e.apply(d)
	}
	old := e.coppUUID()
	e.nbctl("destroy", "Copp", old)
	// healed is empty once every router that names the COPP names a new one.
	healed := func() string {
		copp, copps := e.coppUUID(), e.routerCopps()
		if copp == "" || copp == old {
			return fmt.Sprintf("the COPP is %q", copp)
		}
		for _, d := range ds {
			for _, r := range d.Routers {
				if r.Copp != nil && !r.Ref && copps[r.Row.Name] != copp {
					return fmt.Sprintf("router %s copp = %q, want %s", r.Row.Name, copps[r.Row.Name], copp)
				}
			}
		}
		return ""
	}
	for deadline := time.Now().Add(10 * time.Second); healed() != ""; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not healed 10 s after the COPP was destroyed: %s", healed())
		}
	}
	wantUpstreamCOPP(t, e)
}
