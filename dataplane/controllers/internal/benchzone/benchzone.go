// Package benchzone starts what the dataplane controllers' benchmarks
// drive a Reconciler against: a real apiserver read through a started
// controller-runtime cache with the zone's indexes (the controllers'
// production reads), udnkit's real Northbound with a connected
// dataplane.Client, and a second Northbound holding the same topology that
// a benchmark's raw-transaction baseline writes into with plain libovsdb.
// Only benchmarks import it: tests never pay for its apiserver.
package benchzone

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	libovsdb "github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testmgr"
	"github.com/udnkit/udnkit/ovnk"
)

// Zone is one benchmark's apiserver and pair of Northbound databases.
type Zone struct {
	b   *testing.B
	Ctx context.Context
	// Client reads through the started cache (the NAD and pod indexes
	// registered as Setup registers them) and writes to the apiserver.
	Client client.Client
	// OVN is udnkit's client of its Northbound.
	OVN *dataplane.Client
	// Raw is a plain libovsdb client of the baseline's Northbound,
	// monitoring every table.
	Raw    libovsdb.Client
	direct client.Client
	// nb and raw are the two pairs' addresses.
	nb, raw dataplane.Config
}

// Start starts the zone; the benchmark's cleanup stops it.
func Start(b *testing.B, opts envtest.Options) *Zone {
	testenv.Real(b, "kube-apiserver and ovsdb-server")
	b.Helper()
	ctrl.SetLogger(logr.Discard())
	env, err := envtest.Start(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	mgr, err := testmgr.New(env.Config, env.Scheme)
	if err != nil {
		b.Fatal(err)
	}
	idx := mgr.GetFieldIndexer()
	for _, e := range []error{
		idx.IndexField(ctx, &nadv1.NetworkAttachmentDefinition{}, zone.NADNetworkField, zone.NADNetwork),
		idx.IndexField(ctx, &nadv1.NetworkAttachmentDefinition{}, zone.AnyNetworkField, zone.AnyNetwork),
		idx.IndexField(ctx, &corev1.Pod{}, zone.PodNodeField, zone.PodNode),
	} {
		if e != nil {
			b.Fatal(e)
		}
	}
	running := testmgr.Run(ctx, mgr)
	b.Cleanup(func() { _ = running.Stop() })
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		b.Fatal("the cache did not sync")
	}
	z := &Zone{b: b, Ctx: ctx, Client: mgr.GetClient(), direct: env.Client}
	z.nb, z.raw = startOVN(b, ctx), startOVN(b, ctx)
	if z.OVN, err = dataplane.Dial(ctx, z.nb); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(z.OVN.Close)
	z.Raw = rawClient(b, ctx, z.raw.NBAddress)
	return z
}

// startOVN starts a Northbound and Southbound pair.
func startOVN(b *testing.B, ctx context.Context) dataplane.Config {
	// Unix socket paths are limited to ~108 bytes: keep the directory short.
	dir, err := os.MkdirTemp("", "ovnb")
	if err != nil {
		b.Fatal(err)
	}
	db, err := ovsdbserver.StartPair(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		db.Stop()
		_ = os.RemoveAll(dir)
	})
	return dataplane.Config{NBAddress: db.NB.Address(), SBAddress: db.SB.Address()}
}

// rawClient connects a plain libovsdb client to the Northbound at nb.
func rawClient(b *testing.B, ctx context.Context, nb string) libovsdb.Client {
	m, err := nbdb.FullDatabaseModel()
	if err != nil {
		b.Fatal(err)
	}
	c, err := libovsdb.NewOVSDBClient(m, libovsdb.WithEndpoint(nb))
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Connect(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	if _, err := c.MonitorAll(ctx); err != nil {
		b.Fatal(err)
	}
	return c
}

// Create creates objs through the apiserver, eight at a time.
func (z *Zone) Create(objs ...client.Object) {
	z.b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(objs))
	next := make(chan client.Object)
	for range 8 {
		wg.Go(func() {
			for o := range next {
				if err := z.direct.Create(z.Ctx, o); err != nil {
					errs <- fmt.Errorf("%s %s/%s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetNamespace(), o.GetName(), err)
				}
			}
		})
	}
	for _, o := range objs {
		next <- o
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		z.b.Fatal(err)
	}
}

// Update updates obj through the apiserver.
func (z *Zone) Update(obj client.Object) {
	z.b.Helper()
	if err := z.direct.Update(z.Ctx, obj); err != nil {
		z.b.Fatal(err)
	}
}

// Cached waits until the cache lists n objects into list (with opts).
func (z *Zone) Cached(list client.ObjectList, n int, opts ...client.ListOption) {
	z.b.Helper()
	z.eventually(fmt.Sprintf("%d objects cached", n), func() (bool, error) {
		if err := z.Client.List(z.Ctx, list, opts...); err != nil {
			return false, err
		}
		return meta.LenList(list) == n, nil
	})
}

// CachedVersion waits until the cache holds obj's resource version.
func (z *Zone) CachedVersion(obj client.Object) {
	z.b.Helper()
	cur := obj.DeepCopyObject().(client.Object)
	z.eventually("resource version "+obj.GetResourceVersion()+" cached", func() (bool, error) {
		if err := z.Client.Get(z.Ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
			return false, err
		}
		return cur.GetResourceVersion() == obj.GetResourceVersion(), nil
	})
}

// Layer2 creates a Primary Layer2 network's namespace, owner UDN and NAD
// (name in namespace ns, config's "name" network) as udnkit's NAD
// reconciler writes them, and one local node, node-a; it waits for the
// cache to hold them and applies the network's topology (with its load
// balancer groups) to both Northbounds.
func (z *Zone) Layer2(ns, name, network, subnets string) *nadv1.NetworkAttachmentDefinition {
	z.b.Helper()
	ids := map[string]string{ovnk.AnnotationNetworkID: "1", ovnk.AnnotationTunnelKeys: "[16711685,16715780]"}
	udn := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ids},
		Spec: udnv1.UserDefinedNetworkSpec{Topology: udnv1.NetworkTopologyLayer2,
			Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.99.0.0/16"}}}}
	z.Create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Annotations: map[string]string{
			ovnk.AnnotationNodeID: "2", ovnk.AnnotationLayer2TopologyVersion: ovnk.Layer2TopologyVersionTransitRouter,
			ovnk.AnnotationNodeChassisID: "chassis-node-a"}}})
	z.Create(udn)
	yes := true
	nad := &nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{ovnk.LabelUserDefinedNetwork: ""}, Annotations: ids,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: udnv1.GroupVersion.String(), Kind: udnv1.KindUserDefinedNetwork,
				Name: udn.Name, UID: udn.UID, Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: fmt.Sprintf(`{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":%q,`+
			`"netAttachDefName":"%s/%s","topology":"layer2","role":"primary","subnets":%q}`, network, ns, name, subnets)},
	}
	z.Create(nad)
	z.Cached(&nadv1.NetworkAttachmentDefinitionList{}, 1, client.MatchingFields{zone.NADNetworkField: network})
	z.Cached(&udnv1.UserDefinedNetworkList{}, 1, client.InNamespace(ns))
	z.Cached(&corev1.NodeList{}, 1)
	net, ok, err := zone.Layer2NetworkFromNAD(nad)
	if err != nil || !ok {
		z.b.Fatalf("the NAD's network: ok=%v err=%v", ok, err)
	}
	d, err := topology.Layer2Topology(net, []topology.Layer2Node{{Name: "node-a", ID: 2, Local: true, Chassis: "chassis-node-a",
		TopologyVersion: ovnk.Layer2TopologyVersionTransitRouter}})
	if err != nil {
		z.b.Fatal(err)
	}
	z.Apply(d)
	return nad
}

// Apply applies d to both Northbounds (setup: rows both start with); the
// baseline's through a client of its own that it closes, so that the raw
// client is the only one the baseline's Northbound then updates.
func (z *Zone) Apply(d *rows.Desired) {
	z.b.Helper()
	raw, err := dataplane.Dial(z.Ctx, z.raw)
	if err != nil {
		z.b.Fatal(err)
	}
	defer raw.Close()
	for _, c := range []*dataplane.Client{z.OVN, raw} {
		if _, err := c.Apply(z.Ctx, d); err != nil {
			z.b.Fatal(err)
		}
	}
}

// Clear removes owner's piece from udnkit's Northbound.
func (z *Zone) Clear(owner rows.Owner) {
	z.b.Helper()
	if _, err := z.OVN.Apply(z.Ctx, &rows.Desired{Owner: owner}); err != nil {
		z.b.Fatal(err)
	}
}

// Reconcile runs r for the NAD and fails on an error or a requeue.
func (z *Zone) Reconcile(r reconcile.Reconciler, nad *nadv1.NetworkAttachmentDefinition) {
	z.b.Helper()
	res, err := r.Reconcile(z.Ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nad)})
	if err != nil || !res.IsZero() {
		z.b.Fatalf("reconcile: %+v, %v", res, err)
	}
}

// ProgramAgainstRaw runs the two sub-benchmarks every controller figure
// has: "udnkit", r's reconcile of the NAD into an emptied piece d.Owner,
// and "baseline-raw-transaction", d's rows in one raw transaction into the
// emptied baseline, waiting for n rows of table; report adds each one's
// metrics.
func (z *Zone) ProgramAgainstRaw(b *testing.B, r reconcile.Reconciler, nad *nadv1.NetworkAttachmentDefinition, d *rows.Desired,
	table string, n int, report func(*testing.B)) {
	b.Run("udnkit", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			z.Clear(d.Owner)
			b.StartTimer()
			z.Reconcile(r, nad)
		}
		report(b)
	})
	b.Run("baseline-raw-transaction", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			z.ClearRaw(d.Owner)
			b.StartTimer()
			z.Transact(z.RawOps(d), table, n)
		}
		report(b)
	})
}

// Transact sends ops to the baseline's Northbound in one transaction and
// waits until the raw client's cache holds n rows of table, as Apply
// waits for its own cache.
func (z *Zone) Transact(ops []ovsdb.Operation, table string, n int) {
	z.b.Helper()
	z.transact(ops)
	z.RawRows(table, n)
}

// transact sends ops to the baseline's Northbound in one transaction.
func (z *Zone) transact(ops []ovsdb.Operation) {
	z.b.Helper()
	res, err := z.Raw.Transact(z.Ctx, ops...)
	if err == nil {
		_, err = ovsdb.CheckOperationResults(res, ops)
	}
	if err != nil {
		z.b.Fatal(err)
	}
}

// RawRows waits until the raw client's cache holds n rows of table.
func (z *Zone) RawRows(table string, n int) {
	z.b.Helper()
	z.eventually(fmt.Sprintf("%d %s rows", n, table), func() (bool, error) {
		return z.Raw.Cache().Table(table).Len() == n, nil
	})
}

func (z *Zone) eventually(what string, ok func() (bool, error)) {
	z.b.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Millisecond) {
		done, err := ok()
		if err != nil {
			z.b.Fatal(err)
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			z.b.Fatalf("%s: not reached", what)
		}
	}
}

// SameRows fails unless both Northbounds hold the same rows of table in
// columns (as ovn-nbctl lists them, UUIDs left out); it skips the check
// while either holds none (a -bench filter ran one side only).
func (z *Zone) SameRows(table string, columns ...string) {
	z.b.Helper()
	mine, raw := z.list(z.nb.NBAddress, table, columns), z.list(z.raw.NBAddress, table, columns)
	if len(mine) == 0 || len(raw) == 0 {
		return
	}
	if !slices.Equal(mine, raw) {
		z.b.Fatalf("%s: udnkit wrote %d rows, the baseline %d, and they differ (first udnkit row %q, first baseline row %q)",
			table, len(mine), len(raw), mine[0], raw[0])
	}
}

// SameMembers fails unless, in both Northbounds, each row of table names
// the same rows of refTable (by name) in column: the load balancers of
// each load balancer group, the ports of each port group. Rows naming
// none are left out; skipped while either side has none.
func (z *Zone) SameMembers(table, column, refTable string) {
	z.b.Helper()
	members := func(nb string) []string {
		names := map[string]string{}
		for _, l := range z.list(nb, refTable, []string{"_uuid", "name"}) {
			u, name, _ := strings.Cut(l, ",")
			names[u] = name
		}
		var out []string
		for _, l := range z.list(nb, table, []string{"name", column}) {
			row, refs, _ := strings.Cut(l, ",")
			var named []string
			for _, u := range strings.Fields(refs) {
				named = append(named, names[u])
			}
			slices.Sort(named)
			if len(named) > 0 {
				out = append(out, row+": "+strings.Join(named, " "))
			}
		}
		return out
	}
	mine, raw := members(z.nb.NBAddress), members(z.raw.NBAddress)
	if len(mine) > 0 && len(raw) > 0 && !slices.Equal(mine, raw) {
		z.b.Fatalf("%s %s: udnkit's %d rows differ from the baseline's %d", table, column, len(mine), len(raw))
	}
}

func (z *Zone) list(nb, table string, columns []string) []string {
	out, err := ovsdbserver.Command("ovn-nbctl", "--db="+nb, "--format=csv", "--data=bare", "--no-headings",
		"--columns="+strings.Join(columns, ","), "list", table).Output()
	if err != nil {
		z.b.Fatalf("ovn-nbctl list %s: %v", table, err)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	return lines
}
