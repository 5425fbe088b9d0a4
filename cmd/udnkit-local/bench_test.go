package main

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ovsdbclient "github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/cmd/udnkit/app"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/internal/benchgoal"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// firstPacketInterval is how often the first pod sends an echo request
// while it waits for the path: the figures' resolution.
const firstPacketInterval = 10 * time.Millisecond

// firstPacketGoal bounds BenchmarkFirstPacket's udnkit time over its
// baseline's, the ratio benchreport computes: "≤ 1.5×, first and warm" (the
// first sample of a process is the first network its managers meet).
const firstPacketGoal = 1.5

// BenchmarkFirstPacket measures, on make run ZONES=3's cluster (three real
// nodes, a zone and a dataplane manager each), the time from creating a
// Primary Layer2 UDN and two pods on different nodes to the first echo
// reply between them: udnkit allocates the pods' addresses and programs
// every zone, and each pod's namespace is configured as its node's CNI does
// (both at once): from its k8s.ovn.org/pod-networks as soon as it is there,
// then waiting for ovn-installed. The baseline is the same two pods on a
// logical switch written directly, one libovsdb transaction in each of
// their two zones (switch, local port and remote port), then the same CNI
// steps. Each udnkit sample logs its trace (pathTrace: when each object,
// each zone's rows and each port's binding were first seen), and the run
// logs the managers' start and any informer they started late. udnkit's
// time over the baseline's has a goal (firstPacketGoal).
//
// The second baseline, udnkit-rows-one-transaction, tells OVN's share of
// udnkit's time from udnkit's own: the rows udnkit's zone controllers
// write for such a network in each of the three zones, built by udnkit's
// own builders (the Layer2 topology, the pods' ports, the network-policy
// and EgressIP defaults; rowsNetwork says from which facts) for a fresh
// network per sample (network ID and tunnel keys from rowsNetworkIDBase,
// the NAD rendered by the NAD reconciler's renderer from udnkit's last
// sample's UDN, that sample's pods' addresses), merged into one Desired per
// zone and written by one dataplane Apply per zone, all zones at once,
// each checked to be one transaction; then the same CNI steps. Its rows
// carry the topology piece's label where udnkit's carry each piece's; the
// zone-wide pieces (isolation, EgressIP's shared sets) are udnkit's, left
// in place. It stops udnkit's managers first (their dataplanes would
// take its rows for a deleted network's and remove them), so it runs
// last, and removes the udnkit samples' networks from the zones (once
// OVN has caught up, its k-th sample finds its own k-1 earlier networks
// there, as udnkit's k-th found udnkit's). Each sample logs its trace and
// fails unless its rows in the first zone are those of udnkit's last
// network (per table and per table's set and map columns); the last logs
// every sub-benchmark's median and range and the ratios of the medians.
func BenchmarkFirstPacket(b *testing.B) {
	testenv.Real(b, "kube-apiserver, network namespaces, ovs-vswitchd and ovn-controller")
	if err := datapath.Preflight(); err != nil {
		b.Fatalf("the benchmark needs the real datapath: %v", err)
	}
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cluster, err := datapath.Start(ctx, "node-a", "node-b", "node-c")
	if err != nil {
		b.Fatal(err)
	}
	defer cluster.Stop()
	env, err := envtest.Start(envtest.Options{Webhooks: true})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	var ovns []zoneOVN
	for _, n := range cluster.Nodes {
		ovns = append(ovns, zoneOVN{n.Name, n.Zone})
	}
	managersStart := time.Now()
	stop, _, mgrs, err := startManagers(ctx, env, ovns)
	if err != nil {
		b.Fatal(err)
	}
	stopManagers := sync.OnceFunc(stop)
	defer stopManagers()
	if err := env.WaitForWebhookServer(ctx); err != nil {
		b.Fatal(err)
	}
	if err := waitForManagers(ctx, mgrs); err != nil {
		b.Fatal(err)
	}
	b.Logf("the %d managers' caches synced %d ms after their start", len(mgrs), time.Since(managersStart).Milliseconds())
	defer func() {
		for i, m := range mgrs {
			if late := app.LateInformers(m); len(late) > 0 {
				b.Logf("manager %d: informers started after the start: %s", i, strings.Join(late, ", "))
			}
		}
	}()
	if err := ovnkNodes(ctx, env.Client, cluster); err != nil {
		b.Fatal(err)
	}
	a, bb := cluster.Nodes[0], cluster.Nodes[1]
	var seq atomic.Int64 // names every iteration's objects apart
	trace := &pathTrace{}
	if err := trace.watchObjects(ctx, env); err != nil {
		b.Fatal(err)
	}
	if err := trace.watchZones(ctx, b, cluster); err != nil {
		b.Fatal(err)
	}
	run := &firstPacketRun{ctx: ctx, env: env, cluster: cluster, trace: trace, seq: &seq, stopManagers: stopManagers}

	b.Run(subUDNKit, func(b *testing.B) {
		var steps stepTimes
		for range b.N {
			b.StopTimer()
			ns := "bench-" + strconv.FormatInt(seq.Add(1), 10)
			b.StartTimer()
			start := time.Now()
			trace.begin(start, ns, "net", []string{"pod-a", "pod-b"})
			if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
				Labels: map[string]string{ovnk.LabelPrimaryUserDefinedNetwork: ""}}}); err != nil {
				b.Fatal(err)
			}
			if err := env.Client.Create(ctx, testobj.MakeUDN(ns, "net").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj()); err != nil {
				b.Fatal(err)
			}
			trace.mark("udn-admitted")
			readyCtx, cancel := context.WithTimeout(ctx, time.Minute)
			d, err := startPods(readyCtx, env.Client, cluster, ns, "net", firstPacketInterval)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			steps.add(start, d.steps)
			run.sample(subUDNKit, start, d.steps)
			run.refNamespace = ns
			run.udnkitNetworks = append(run.udnkitNetworks, ovnk.UDNNetworkName(ns, "net"))
			trace.steps(d.steps)
			b.Logf("trace (ms from the namespace's create): %s", trace)
			for _, p := range d.pods {
				if err := cluster.RemovePod(p.dp); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
		}
		steps.report(b)
		benchgoal.ReportRatio(b, firstPacketGoal)
	})

	b.Run(subOneSwitch, func(b *testing.B) {
		model, err := nbdb.FullDatabaseModel()
		if err != nil {
			b.Fatal(err)
		}
		nbs := map[*datapath.Node]ovsdbclient.Client{}
		for _, n := range []*datapath.Node{a, bb} {
			c, err := ovsdbclient.NewOVSDBClient(model, ovsdbclient.WithEndpoint(n.Zone.NB.Address()))
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Connect(ctx); err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			nbs[n] = c
		}
		var steps stepTimes
		for range b.N {
			b.StopTimer()
			k := seq.Add(1)
			sw := "bench_baseline_" + strconv.FormatInt(k, 10)
			subnet := netip.MustParsePrefix(fmt.Sprintf("10.%d.%d.0/24", 200+k/250, k%250))
			pods := []*baselinePod{
				{name: sw + "_pod-a", node: a, ip: netip.PrefixFrom(ovnk.MustAddrAt(subnet, 5), 24), key: 2},
				{name: sw + "_pod-b", node: bb, ip: netip.PrefixFrom(ovnk.MustAddrAt(subnet, 6), 24), key: 3},
			}
			b.StartTimer()
			d := &demo{}
			start := time.Now()
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, zone := range []*datapath.Node{a, bb} {
				wg.Go(func() { errs[i] = baselineSwitch(ctx, nbs[zone], zone, sw, 30000+int(k), pods) })
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			d.step("transaction")
			// Each node's CNI configures its pod, both at once.
			for i, p := range pods {
				wg.Go(func() { p.dp, errs[i] = cluster.AddPod(ctx, p.node, p.spec()) })
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			d.step("pods-installed")
			if err := pods[0].dp.ReachEvery(pods[1].ip.Addr(), 30*time.Second, firstPacketInterval); err != nil {
				b.Fatal(err)
			}
			d.step("first-reply")
			b.StopTimer()
			steps.add(start, d.steps)
			run.sample(subOneSwitch, start, d.steps)
			for _, p := range pods {
				if err := cluster.RemovePod(p.dp); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
		}
		steps.report(b)
	})

	b.Run(subRows, run.rowsOneTransaction)
}

// stepTimes sums, per step, the time from the previous step's end (the
// first from the start) over the iterations.
type stepTimes struct {
	names []string
	sum   map[string]time.Duration
	runs  int
}

func (s *stepTimes) add(start time.Time, steps []step) {
	if s.sum == nil {
		s.sum = map[string]time.Duration{}
	}
	prev := start
	for _, st := range steps {
		if _, ok := s.sum[st.name]; !ok {
			s.names = append(s.names, st.name)
		}
		s.sum[st.name] += st.at.Sub(prev)
		prev = st.at
	}
	s.runs++
}

// report reports each step's mean as <step>-ms.
func (s *stepTimes) report(b *testing.B) {
	for _, name := range s.names {
		b.ReportMetric(float64(s.sum[name].Milliseconds())/float64(s.runs), name+"-ms")
	}
}

// baselinePod is a pod of the baseline's switch.
type baselinePod struct {
	name string
	node *datapath.Node
	ip   netip.Prefix
	key  int
	dp   *datapath.Pod
}

func (p *baselinePod) mac() string { return ovnk.MACFromIP(p.ip.Addr()).String() }

// spec is the pod's namespace as its CNI would configure it from a
// k8s.ovn.org/pod-networks entry holding its address and MAC.
func (p *baselinePod) spec() datapath.PodSpec {
	v, _ := podannotation.PodNetworks{"default/baseline": {IPAddresses: []string{p.ip.String()}, MACAddress: p.mac(), Role: podannotation.RolePrimary}}.Encode()
	return datapath.PodSpec{Namespace: "default", Name: p.name, NAD: "default/baseline", Port: p.name,
		Annotations: map[string]string{ovnk.AnnotationPodNetworks: v}}
}

// baselineSwitch writes, in one transaction in zone's Northbound, a logical
// switch with tunnel key key holding the pods' ports: the zone's own pods
// local, the others remote on their node's chassis.
func baselineSwitch(ctx context.Context, nb ovsdbclient.Client, zone *datapath.Node, name string, key int, pods []*baselinePod) error {
	ls := &nbdb.LogicalSwitch{UUID: "sw", Name: name, OtherConfig: map[string]string{"requested-tnl-key": strconv.Itoa(key)}}
	var ports []model.Model
	for i, p := range pods {
		addrs := p.mac() + " " + p.ip.Addr().String()
		lsp := &nbdb.LogicalSwitchPort{UUID: "p" + strconv.Itoa(i), Name: p.name, Addresses: []string{addrs}, PortSecurity: []string{addrs},
			Options: map[string]string{"requested-chassis": p.node.ChassisID(), "requested-tnl-key": strconv.Itoa(p.key)}}
		if p.node != zone {
			lsp.Type = "remote"
		}
		ls.Ports = append(ls.Ports, lsp.UUID)
		ports = append(ports, lsp)
	}
	var ops []ovsdb.Operation
	for _, m := range [][]model.Model{{ls}, ports} {
		op, err := nb.Create(m...)
		if err != nil {
			return err
		}
		ops = append(ops, op...)
	}
	res, err := nb.Transact(ctx, ops...)
	if err != nil {
		return err
	}
	_, err = ovsdb.CheckOperationResults(res, ops)
	return err
}
