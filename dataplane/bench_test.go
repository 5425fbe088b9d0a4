package dataplane

import (
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/index"
	"github.com/udnkit/udnkit/dataplane/internal/plan"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/dataplane/topology/multivtep"
	"github.com/udnkit/udnkit/ovnk"
)

func manyNodes(n int) []topology.Layer2Node {
	nodes := make([]topology.Layer2Node, n)
	for i := range nodes {
		nodes[i] = topology.Layer2Node{Name: "node" + strconv.Itoa(i+1), Chassis: chassisOf("node" + strconv.Itoa(i+1)), ID: i + 2, TopologyVersion: ovnk.Layer2TopologyVersionTransitRouter, Local: i == 0}
	}
	return nodes
}

func benchNetwork() topology.Layer2Network {
	return topology.Layer2Network{
		Name:                   "bench_net",
		Subnets:                []netip.Prefix{pfx("10.128.0.0/16"), pfx("fd10::/64")},
		JoinSubnets:            []netip.Prefix{pfx("100.65.0.0/16"), pfx("fd99::/64")},
		SwitchTunnelKey:        16711685,
		TransitRouterTunnelKey: 16715780,
		MasqueradeIPs:          []netip.Addr{addr("169.254.0.12")},
	}
}

// rawInsert is the baseline: the same rows inserted with plain libovsdb in one
// transaction (named UUIDs, parents referencing children), with no cache
// lookups, diffing or ownership checks.
func rawInsert(b *testing.B, e *env, d *rows.Desired) {
	api := e.c.eng.NB
	var ops []ovsdb.Operation
	n := 0
	create := func(m model.Model, uuid *string) string {
		n++
		*uuid = "raw" + strconv.Itoa(n)
		o, err := api.Create(m)
		if err != nil {
			b.Fatal(err)
		}
		ops = append(ops, o...)
		return *uuid
	}
	ids := d.Owner.IDs()
	for _, r := range d.Routers {
		row := r.Row
		row.ExternalIDs = ids
		for _, p := range r.Ports {
			p.ExternalIDs = ids
			p.GatewayChassis = nil
			for _, g := range r.GatewayChassis[p.Name] {
				g.ExternalIDs = ids
				p.GatewayChassis = append(p.GatewayChassis, create(&g, &g.UUID))
			}
			row.Ports = append(row.Ports, create(&p, &p.UUID))
		}
		for _, s := range r.Routes {
			s.ExternalIDs = ids
			row.StaticRoutes = append(row.StaticRoutes, create(&s, &s.UUID))
		}
		for _, p := range r.Policies {
			p.ExternalIDs = ids
			row.Policies = append(row.Policies, create(&p, &p.UUID))
		}
		for _, x := range r.NATs {
			x.ExternalIDs = ids
			row.Nat = append(row.Nat, create(&x, &x.UUID))
		}
		create(&row, &row.UUID)
	}
	for _, s := range d.Switches {
		row := s.Row
		row.ExternalIDs = ids
		for _, p := range s.Ports {
			p.ExternalIDs = ids
			row.Ports = append(row.Ports, create(&p, &p.UUID))
		}
		create(&row, &row.UUID)
	}
	if err := transact(e.ctx, api, ops); err != nil {
		b.Fatal(err)
	}
	waitRows(b, api, nbdb.LogicalRouterPortTable, countPorts(d))
}

func countPorts(d *rows.Desired) int {
	n := 0
	for _, r := range d.Routers {
		n += len(r.Ports)
	}
	return n
}

// waitRows waits until the cache holds n rows of a table (the baseline's
// equivalent of Apply waiting for its cache to converge).
func waitRows(b *testing.B, api client.Client, table string, n int) {
	deadline := time.Now().Add(time.Minute)
	for api.Cache().Table(table).Len() != n {
		if time.Now().After(deadline) {
			b.Fatalf("cache has %d %s rows, want %d", api.Cache().Table(table).Len(), table, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkLayer2Topology1000Nodes programs the whole Layer2 topology of a
// 1000-node network into an empty database in one transaction, and in the same
// run inserts the same rows with raw libovsdb; it reports both and their ratio.
func BenchmarkLayer2Topology1000Nodes(b *testing.B) {
	e := newEnv(b)
	d, err := topology.Layer2Topology(benchNetwork(), manyNodes(1000))
	if err != nil {
		b.Fatal(err)
	}
	empty := &rows.Desired{Owner: d.Owner}
	var udnkit, raw time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := e.c.Apply(e.ctx, d); err != nil {
			b.Fatal(err)
		}
		udnkit += time.Since(start)
		if _, err := e.c.Apply(e.ctx, empty); err != nil {
			b.Fatal(err)
		}
		waitRows(b, e.c.eng.NB, nbdb.LogicalRouterPortTable, 0)

		start = time.Now()
		rawInsert(b, e, d)
		raw += time.Since(start)
		if _, err := e.c.Apply(e.ctx, empty); err != nil {
			b.Fatal(err)
		}
		waitRows(b, e.c.eng.NB, nbdb.LogicalRouterPortTable, 0)
	}
	reportRatio(b, udnkit, raw)
}

func reportRatio(b *testing.B, udnkit, raw time.Duration) {
	b.ReportMetric(float64(udnkit.Milliseconds())/float64(b.N), "udnkit-ms/op")
	b.ReportMetric(float64(raw.Milliseconds())/float64(b.N), "raw-ms/op")
	b.ReportMetric(float64(udnkit)/float64(raw), "udnkit/raw")
}

// BenchmarkLayer2AddOneNodeTo1000 adds the 1001st node to a programmed
// 1000-node network (add) and removes it again (remove): one Apply of the whole
// desired network that sends one small transaction. Each is measured as
// udnkit plans it (incremental: the ownership and keys of the cached rows
// are remembered between Applies) and, as the baseline of the same run,
// without that memory (the plain full diff, as Plan computes it). ops/op is
// the operations sent, rows/op the rows they write (inserted, updated,
// mutated or deleted).
func BenchmarkLayer2AddOneNodeTo1000(b *testing.B) {
	nodes := manyNodes(1001)
	for _, step := range []struct {
		name         string
		before, want *rows.Desired
	}{
		{"add", mustLayer2(b, benchNetwork(), nodes[:1000]), mustLayer2(b, benchNetwork(), nodes)},
		{"remove", mustLayer2(b, benchNetwork(), nodes), mustLayer2(b, benchNetwork(), nodes[:1000])},
	} {
		for _, mode := range []string{"incremental", "baseline-full-diff"} {
			b.Run(step.name+"/"+mode, func(b *testing.B) {
				e := newEnv(b)
				// The baseline plans every Apply without memory (the full diff).
				e.c.eng.Memos.Reset(mode != "incremental")
				e.apply(step.before)
				p, err := e.c.eng.FullPlan(step.want)
				if err != nil {
					b.Fatal(err)
				}
				ops, rows := p.Ops, rowsWritten(p)
				// One Apply of the target first: the incremental plans then run
				// with warm memory, as in a running controller.
				e.apply(step.want)
				e.apply(step.before)
				for b.Loop() {
					res, err := e.c.Apply(e.ctx, step.want)
					if err != nil {
						b.Fatal(err)
					}
					if res.Operations != len(ops) {
						b.Fatalf("sent %d operations, want %d", res.Operations, len(ops))
					}
					b.StopTimer()
					e.apply(step.before)
					b.StartTimer()
				}
				b.ReportMetric(float64(len(ops)), "ops/op")
				b.ReportMetric(float64(rows), "rows/op")
			})
		}
	}
}

// rowsWritten counts the rows a plan's operations write: each insert one,
// each row the other operations name by _uuid and each row they remove
// (garbage-collected children included) once.
func rowsWritten(p *plan.Planner) int {
	n := 0
	seen := map[index.RowRef]bool{}
	count := func(r index.RowRef) {
		if !seen[r] {
			seen[r] = true
			n++
		}
	}
	for _, op := range p.Ops {
		if op.Op == ovsdb.OperationInsert {
			n++
			continue
		}
		for _, c := range op.Where {
			if u, ok := c.Value.(ovsdb.UUID); ok && c.Column == "_uuid" {
				count(index.RowRef{Table: op.Table, UUID: u.GoUUID})
			}
		}
	}
	for _, r := range p.Gone {
		count(r)
	}
	return n
}

// BenchmarkMultiVTEP1000Pods creates, in one transaction, the on-demand
// transit switch ports and routes for 1000 pods on 250 remote 4-VTEP nodes
// (every VTEP used: 1000 remote ports, 250 subnet routes, 750 /32 routes).
func BenchmarkMultiVTEP1000Pods(b *testing.B) {
	e := newEnv(b)
	e.nbctl("lr-add", "bench.vtep_ovn_cluster_router")
	e.nbctl("ls-add", "bench.vtep_transit_switch")
	e.settle()
	var nodes []multivtep.VTEPNode
	var pods []multivtep.VTEPPod
	for i := range 250 {
		n := multivtep.VTEPNode{Name: "node" + strconv.Itoa(i), Chassis: chassisOf("node" + strconv.Itoa(i)), Subnets: []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i / 256), byte(i % 256), 0}), 24)}}
		for v := range 4 {
			n.EncapIPs = append(n.EncapIPs, netip.AddrFrom4([4]byte{172, 16, byte(i), byte(v + 1)}))
			n.TunnelIDs = append(n.TunnelIDs, 2+4*i+v)
			pods = append(pods, multivtep.VTEPPod{Namespace: "ns", Name: "pod" + strconv.Itoa(4*i+v), Node: n.Name, EncapIP: n.EncapIPs[v],
				IPs: []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i / 256), byte(i % 256), byte(v + 4)}), 24)}})
		}
		nodes = append(nodes, n)
	}
	d, err := multivtep.MultiVTEPPorts("bench-vtep", ovnk.DefaultTransitSubnetV4, nodes, pods)
	if err != nil {
		b.Fatal(err)
	}
	empty, err := multivtep.MultiVTEPPorts("bench-vtep", ovnk.DefaultTransitSubnetV4, nodes, nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := e.c.Apply(e.ctx, d); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		e.apply(empty)
		b.StartTimer()
	}
	if n := e.c.eng.NB.Cache().Table(nbdb.LogicalSwitchPortTable).Len(); n != 0 {
		b.Fatalf("%d ports left after cleanup", n)
	}
}

// BenchmarkLayer2MultiVTEP1000Pods creates the OKEP-5535 Layer2 remote ports
// of 1000 pods on 250 remote 4-VTEP nodes on an existing layer2 switch in
// one Apply, and in the same run inserts the same ports with raw libovsdb
// (one transaction: the ports and one mutation of the switch); it reports
// both and their ratio.
func BenchmarkLayer2MultiVTEP1000Pods(b *testing.B) {
	e := newEnv(b)
	const network = "bench-l2vtep"
	e.nbctl("ls-add", ovnk.NamesFor(network).Switch())
	e.settle()
	var nodes []multivtep.VTEPNode
	var pods []multivtep.Layer2PodPort
	for i := range 250 {
		n := multivtep.VTEPNode{Name: "node" + strconv.Itoa(i), Chassis: chassisOf("node" + strconv.Itoa(i))}
		for v := range 4 {
			n.EncapIPs = append(n.EncapIPs, netip.AddrFrom4([4]byte{172, 16, byte(i), byte(v + 1)}))
			ip := netip.AddrFrom4([4]byte{10, 128, byte(i), byte(v + 4)})
			pods = append(pods, multivtep.Layer2PodPort{NAD: "ns/bench-l2vtep", MAC: ovnk.MACFromIP(ip).String(), VTEPPod: multivtep.VTEPPod{
				Namespace: "ns", Name: "pod" + strconv.Itoa(4*i+v), Node: n.Name, EncapIP: n.EncapIPs[v],
				IPs: []netip.Prefix{netip.PrefixFrom(ip, 16)}}})
		}
		nodes = append(nodes, n)
	}
	d, _, err := multivtep.Layer2MultiVTEPPorts(network, nodes, pods)
	if err != nil {
		b.Fatal(err)
	}
	empty := &rows.Desired{Owner: d.Owner}
	clean := func() {
		if _, err := e.c.Apply(e.ctx, empty); err != nil {
			b.Fatal(err)
		}
		waitRows(b, e.c.eng.NB, nbdb.LogicalSwitchPortTable, 0)
	}
	var sw *nbdb.LogicalSwitch
	for _, m := range e.c.eng.NB.Cache().Table(nbdb.LogicalSwitchTable).RowsShallow() {
		sw = m.(*nbdb.LogicalSwitch)
	}
	var udnkit, raw time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := e.c.Apply(e.ctx, d); err != nil {
			b.Fatal(err)
		}
		udnkit += time.Since(start)
		clean()

		start = time.Now()
		var ops []ovsdb.Operation
		var uuids []string
		for i, p := range d.Switches[0].Ports {
			p.UUID, p.ExternalIDs = "raw"+strconv.Itoa(i), d.Owner.IDs()
			o, err := e.c.eng.NB.Create(&p)
			if err != nil {
				b.Fatal(err)
			}
			ops, uuids = append(ops, o...), append(uuids, p.UUID)
		}
		o, err := e.c.eng.NB.Where(sw).Mutate(sw, model.Mutation{Field: &sw.Ports, Mutator: ovsdb.MutateOperationInsert, Value: uuids})
		if err != nil {
			b.Fatal(err)
		}
		if err := transact(e.ctx, e.c.eng.NB, append(ops, o...)); err != nil {
			b.Fatal(err)
		}
		waitRows(b, e.c.eng.NB, nbdb.LogicalSwitchPortTable, len(uuids))
		raw += time.Since(start)
		clean()
	}
	reportRatio(b, udnkit, raw)
}

// BenchmarkLayer3Subnets200 programs the OKEP-5377 rule of one Layer3 network
// with 200 IPv4 subnets into an empty database: the default address-set form
// (one policy, one Address_Set) against upstream's pair form (40,000
// policies) as the baseline of the same run. rows/op is the rows written.
func BenchmarkLayer3Subnets200(b *testing.B) {
	for _, form := range []struct {
		name string
		form topology.Layer3PolicyForm
	}{{"address-set", topology.PolicyFormAddressSet}, {"baseline-pairs", topology.PolicyFormPairs}} {
		b.Run(form.name, func(b *testing.B) {
			e := newEnv(b)
			d, err := topology.Layer3SubnetPoliciesForm("bench_l3", manySubnets(200), form.form)
			if err != nil {
				b.Fatal(err)
			}
			written := len(d.AddressSets) + 1
			for _, r := range d.Routers {
				written += len(r.Policies)
			}
			for b.Loop() {
				if _, err := e.c.Apply(e.ctx, d); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				e.apply(&rows.Desired{Owner: d.Owner})
				b.StartTimer()
			}
			b.ReportMetric(float64(written), "rows/op")
		})
	}
}

// BenchmarkUnrelatedNetworkDuringLargeApply measures a small Layer2 network's
// Apply (3 nodes, into a database that already holds a 1000-node network)
// alone (the baseline) and while a second 1000-node network's Apply is in
// its transactions: a large network must not delay an unrelated one. The
// large Apply is split into bounded transactions (the default), or sent as
// one (the comparison, during-large-one-transaction). It also reports where
// the small Apply's time goes (lock-ms, plan-ms, transact-ms: its round
// trip, visible-ms: waiting for the cache; split-ms and yield-ms are a large
// Apply's and stay 0 here) and, while a large one runs, that large Apply's
// own total time (large-ms): the cost of splitting it. The during modes
// also time the small Apply alone between their iterations
// (alone-interleaved-ms) and report during/alone-interleaved, the ratio of
// the two means: this machine's speed drifts within minutes, and the
// baseline sub-benchmark runs minutes apart from the others.
func BenchmarkUnrelatedNetworkDuringLargeApply(b *testing.B) {
	large := func(name string) *rows.Desired {
		n := benchNetwork()
		n.Name = name
		d, err := topology.Layer2Topology(n, manyNodes(1000))
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	smallNet := benchNetwork()
	smallNet.Name = "bench_small"
	small, err := topology.Layer2Topology(smallNet, manyNodes(3))
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name   string
		maxOps int
	}{{"baseline-alone", 0}, {"during-large-apply", 0}, {"during-large-one-transaction", -1}} {
		b.Run(mode.name, func(b *testing.B) {
			e := newEnv(b)
			e.c.eng.MaxTransactionOps = mode.maxOps
			e.apply(large("bench_resident"))
			big := large("bench_big")
			var mu sync.Mutex
			steps := map[string]time.Duration{}
			var largeTotal, alone time.Duration
			measuring := false
			e.hooks.Observe = func(o rows.Owner, step string, d time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				if measuring && o.Network == small.Owner.Network {
					steps[step] += d
				}
			}
			for b.Loop() {
				b.StopTimer()
				var done chan error
				if mode.name != "baseline-alone" {
					inTransaction := make(chan struct{})
					var once sync.Once
					e.hooks.BeforeTransact = func(o rows.Owner) {
						if o.Network == big.Owner.Network {
							once.Do(func() { close(inTransaction) })
						}
					}
					done = make(chan error, 1)
					go func() {
						start := time.Now()
						_, err := e.c.Apply(e.ctx, big)
						mu.Lock()
						largeTotal += time.Since(start)
						mu.Unlock()
						done <- err
					}()
					<-inTransaction
				}
				mu.Lock()
				measuring = true
				mu.Unlock()
				b.StartTimer()
				if _, err := e.c.Apply(e.ctx, small); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				mu.Lock()
				measuring = false
				mu.Unlock()
				if done != nil {
					if err := <-done; err != nil {
						b.Fatal(err)
					}
					e.apply(&rows.Desired{Owner: big.Owner})
					e.apply(&rows.Desired{Owner: small.Owner})
					start := time.Now()
					if _, err := e.c.Apply(e.ctx, small); err != nil {
						b.Fatal(err)
					}
					alone += time.Since(start)
				}
				e.apply(&rows.Desired{Owner: small.Owner})
				b.StartTimer()
			}
			for _, step := range []string{"lock", "plan", "split", "transact", "yield", "visible"} {
				b.ReportMetric(float64(steps[step].Microseconds())/1000/float64(b.N), step+"-ms")
			}
			if mode.name != "baseline-alone" {
				b.ReportMetric(float64(largeTotal.Microseconds())/1000/float64(b.N), "large-ms")
				b.ReportMetric(float64(alone.Microseconds())/1000/float64(b.N), "alone-interleaved-ms")
				b.ReportMetric(float64(b.Elapsed())/float64(alone), "during/alone-interleaved")
			}
		})
	}
}
