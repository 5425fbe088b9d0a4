package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/pods"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/ovnk"
)

// The sub-benchmarks of BenchmarkFirstPacket, by name.
const (
	subUDNKit    = "udnkit"
	subOneSwitch = "baseline-one-transaction"
	subRows      = "udnkit-rows-one-transaction"
)

// firstPacketRun is what BenchmarkFirstPacket's sub-benchmarks share: the
// cluster, the trace, the names' sequence, every sample by sub-benchmark,
// and the udnkit sub-benchmark's last network, which the udnkit-rows one
// copies and compares its rows with.
type firstPacketRun struct {
	ctx     context.Context
	env     *envtest.Environment
	cluster *datapath.Cluster
	trace   *pathTrace
	seq     *atomic.Int64
	// stopManagers stops udnkit's managers (once).
	stopManagers func()
	samples      map[string]durations
	// refNamespace is the namespace of udnkit's last sample (UDN "net"),
	// udnkitNetworks the networks of all its samples.
	refNamespace   string
	udnkitNetworks []string
	refRows        *rowCounts
}

// sample records one sample of sub-benchmark name: the time from start
// to the last step.
func (r *firstPacketRun) sample(name string, start time.Time, steps []step) {
	if r.samples == nil {
		r.samples = map[string]durations{}
	}
	r.samples[name] = append(r.samples[name], steps[len(steps)-1].at.Sub(start))
}

// summary is the samples of every sub-benchmark so far and the ratios of
// their medians.
func (r *firstPacketRun) summary() string {
	u, one, rw := r.samples[subUDNKit], r.samples[subOneSwitch], r.samples[subRows]
	ratio := func(a, b durations) string {
		if len(a) == 0 || len(b) == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f×", float64(a.median())/float64(b.median()))
	}
	warm := durations{}
	if len(u) > 1 {
		warm = u[1:]
	}
	return fmt.Sprintf("%s: %s (warm, without the first: %s); %s: %s; %s: %s; medians: udnkit/one-switch %s (warm %s), udnkit/udnkit-rows %s (warm %s), udnkit-rows/one-switch %s",
		subUDNKit, u, warm, subOneSwitch, one, subRows, rw,
		ratio(u, one), ratio(warm, one), ratio(u, rw), ratio(warm, rw), ratio(rw, one))
}

// rowsOneTransaction is the udnkit-rows-one-transaction sub-benchmark
// (BenchmarkFirstPacket's doc says what it measures). It stops udnkit's
// managers first: each zone's dataplane re-applies a network whose
// labelled rows another client inserts, and removes them when no NAD
// describes it.
func (r *firstPacketRun) rowsOneTransaction(b *testing.B) {
	b.StopTimer()
	if r.refNamespace == "" {
		b.Skip("needs the udnkit sub-benchmark's samples first: its UDN, its pods' addresses and its rows")
	}
	ctx, cluster := r.ctx, r.cluster
	r.stopManagers()
	cfg, err := benchClusterConfig()
	if err != nil {
		b.Fatal(err)
	}
	var nodes corev1.NodeList
	if err := r.env.Client.List(ctx, &nodes); err != nil {
		b.Fatal(err)
	}
	first := cluster.Nodes[0]
	if r.refRows == nil {
		ref, err := settledRows(ctx, first.Zone.NB.Address(), ovnk.UDNNetworkName(r.refNamespace, "net"))
		if err != nil {
			b.Fatal(err)
		}
		r.refRows = &ref
	}
	clients := make([]*dataplane.Client, len(cluster.Nodes))
	for i, n := range cluster.Nodes {
		if clients[i], err = dataplane.NewClient(ctx, n.Zone.NB.Address(), n.Zone.SB.Address()); err != nil {
			b.Fatal(err)
		}
		defer clients[i].Close()
	}
	if err := r.removeUDNKitNetworks(clients); err != nil {
		b.Fatal(err)
	}
	var steps stepTimes
	for range b.N {
		k := int(r.seq.Add(1))
		net, ds, err := r.rowsSample(cfg, nodes.Items, k)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		d, err := r.rowsFirstPacket(start, net, ds, clients)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		steps.add(start, d.steps)
		r.sample(subRows, start, d.steps)
		r.trace.steps(d.steps)
		b.Logf("trace (ms from the transactions' start): %s", r.trace)
		got, err := networkRows(ctx, first.Zone.NB.Address(), net.conf.Name)
		if err != nil {
			b.Fatal(err)
		}
		if diff := diffCounts(r.refRows.tables, got.tables) + " " + diffCounts(r.refRows.columns, got.columns); diff != " " {
			// Not the rows udnkit writes: the sample measures something else.
			b.Errorf("rows in zone %s differ from udnkit's network %s (table or table.column=udnkit/here): %s", first.Name, r.refNamespace, diff)
		} else {
			b.Logf("rows in zone %s as udnkit's, and as many elements in each table's columns: %s", first.Name, got)
		}
		for _, p := range net.pods {
			if err := cluster.RemovePod(p.dp); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(r.samples[subUDNKit].median())/float64(r.samples[subRows][len(r.samples[subRows])-1]), "udnkit-over-this")
	}
	steps.report(b)
	b.Logf("udnkit's rows of %s in zone %s by piece: %s", r.refNamespace, first.Name, formatCounts(r.refRows.pieces))
	b.Logf("%s", r.summary())
}

// removeUDNKitNetworks removes, once, the rows of the udnkit samples'
// networks from every zone and waits until each zone's ovn-controller has
// caught up: the k-th sample here then finds the k-1 networks of the
// earlier ones in the zones, as udnkit's k-th found udnkit's (the OVN
// work a new network costs grows with the networks already there).
func (r *firstPacketRun) removeUDNKitNetworks(clients []*dataplane.Client) error {
	var owners []rows.Owner
	for _, n := range r.udnkitNetworks {
		for _, piece := range []string{base.PieceTransitRouter, pods.Piece, base.PieceNetpolDefaults, base.PieceEgressIPDefaults} {
			owners = append(owners, rows.Owner{Network: n, Topology: base.TopologyLayer2, Piece: piece})
		}
	}
	r.udnkitNetworks = nil
	for i, c := range clients {
		if _, err := c.RemoveUnless(r.ctx, owners, nil); err != nil {
			return err
		}
		nb := r.cluster.Nodes[i].Zone.NB.Address()
		if out, err := exec.CommandContext(r.ctx, "ovn-nbctl", "--db="+nb, "--timeout=30", "--wait=hv", "sync").CombinedOutput(); err != nil {
			return fmt.Errorf("ovn-nbctl --wait=hv sync in zone %s: %w: %s", r.cluster.Nodes[i].Name, err, out)
		}
	}
	return nil
}

// rowsSample builds sample k's network and, for each zone, its pieces'
// rows merged into one Desired.
func (r *firstPacketRun) rowsSample(cfg ovnk.ClusterConfig, nodes []corev1.Node, k int) (*rowsNetwork, []*rows.Desired, error) {
	ns := "rows-" + strconv.Itoa(k)
	net, err := newRowsNetwork(r.ctx, r.env.Client, cfg, r.cluster, r.refNamespace, ns, "net", k)
	if err != nil {
		return nil, nil, err
	}
	ds := make([]*rows.Desired, len(r.cluster.Nodes))
	for i, n := range r.cluster.Nodes {
		pieces, err := net.zoneDesired(r.ctx, r.env.Client, cfg, nodes, n.Name)
		if err != nil {
			return nil, nil, fmt.Errorf("zone %s: %w", n.Name, err)
		}
		ds[i] = mergeDesired(pieces[0].Owner, pieces...)
	}
	return net, ds, nil
}

// rowsFirstPacket writes each zone's rows in one Apply each, all zones at
// once, and fails unless each was one transaction; then it configures the
// pods as their CNI does, both at once, and waits for pod-a's first reply
// from pod-b.
func (r *firstPacketRun) rowsFirstPacket(start time.Time, net *rowsNetwork, ds []*rows.Desired, clients []*dataplane.Client) (*demo, error) {
	ctx, cluster := r.ctx, r.cluster
	d := &demo{}
	r.trace.begin(start, net.namespace, net.nad.Name, []string{"pod-a", "pod-b"})
	errs := make([]error, len(cluster.Nodes))
	var wg sync.WaitGroup
	for i, n := range cluster.Nodes {
		wg.Go(func() {
			res, err := clients[i].Apply(ctx, ds[i])
			if err == nil && res.Transactions != 1 {
				err = fmt.Errorf("zone %s: the rows took %d transactions (%d operations), not one", n.Name, res.Transactions, res.Operations)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.step("transaction")
	errs = make([]error, len(net.pods))
	for i, p := range net.pods {
		wg.Go(func() {
			spec, err := net.spec(p)
			if err == nil {
				p.dp, err = cluster.AddPod(ctx, p.node, spec)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.step("pods-installed")
	a, b := net.pods[0], net.pods[1]
	if err := a.dp.ReachEvery(b.dp.IP(false), 30*time.Second, firstPacketInterval); err != nil {
		return nil, fmt.Errorf("%w\n%s%s", err, a.node.Logs(10), b.node.Logs(10))
	}
	d.step("first-reply")
	return d, nil
}
