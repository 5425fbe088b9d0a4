package policy

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/policy"
	"github.com/udnkit/udnkit/ovnk"
)

// zoneWorld is a zone of two nodes with their default subnets and host
// addresses, the API service, EgressIP on, and an OVN that records the
// pieces applied (fail, when set, fails a piece's Apply).
type zoneWorld struct {
	r       *Reconciler
	c       client.Client
	nodes   []corev1.Node
	members []policy.IsolationMember
	applied map[string]*rows.Desired
	applies []string
	fail    map[string]error
}

func newZoneWorld(t testing.TB) *zoneWorld {
	w := &zoneWorld{applied: map[string]*rows.Desired{}, fail: map[string]error{},
		members: []policy.IsolationMember{{Port: "ns_web", Pod: "ns/web"}}}
	w.c = fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.1", ClusterIPs: []string{"10.96.0.1", "fd00:10:96::1"}}}).Build()
	cluster := ovnk.DefaultClusterConfig()
	cluster.ClusterSubnets = []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00:10:244::/48")}
	w.r = &Reconciler{Client: w.c, Cluster: cluster, EgressIP: true,
		IsolationPorts: func(context.Context) ([]policy.IsolationMember, error) { return slices.Clone(w.members), nil }}
	w.r.zone.apply = func(_ context.Context, d *rows.Desired) error {
		if err := w.fail[d.Owner.Piece]; err != nil {
			return err
		}
		w.applied[d.Owner.Piece] = d
		w.applies = append(w.applies, d.Owner.Piece)
		return nil
	}
	w.nodes = []corev1.Node{
		nodeWith("node-a", map[string]string{ovnk.AnnotationNodeSubnets: `{"default":["10.244.2.0/24","fd00:10:244:3::/64"]}`,
			ovnk.AnnotationHostCIDRs: `["192.0.2.2/24","2001:db8::2/64"]`}),
		nodeWith("node-b", map[string]string{ovnk.AnnotationNodeSubnets: `{"default":["10.244.1.0/24","fd00:10:244:2::/64"]}`,
			ovnk.AnnotationHostCIDRs: `["192.0.2.3/24"]`}),
	}
	return w
}

// reconcile is one network's reconcile of the zone's rows; it returns the
// pieces it applied.
func (w *zoneWorld) reconcile(t testing.TB) []string {
	t.Helper()
	before := len(w.applies)
	if err := w.r.applyZoneRows(context.Background(), w.nodes); err != nil {
		t.Fatal(err)
	}
	return w.applies[before:]
}

// addresses are the addresses of the applied address set named name.
func (w *zoneWorld) addresses(piece, name string) []string {
	var out []string
	for _, s := range w.applied[piece].AddressSets {
		if s.ExternalIDs[ovnk.ExternalIDObjectName] == name {
			out = append(out, s.Addresses...)
		}
	}
	slices.Sort(out)
	return out
}

var allZonePieces = []string{base.PieceUDNIsolation, base.PieceEgressIPShared, base.PieceEgressIPDefaultSets}

// Many networks' reconciles over unchanged nodes, services and pods build
// and apply the zone's three pieces once, with the rows the builders give
// (isolation, EgressIPShared, EgressIPDefaultNetworkSets); listing the nodes in another order changes
// nothing.
func TestZoneRowsBuiltOnceForManyNetworks(t *testing.T) {
	w := newZoneWorld(t)
	if got := w.reconcile(t); !slices.Equal(got, allZonePieces) {
		t.Fatalf("first reconcile applied %v, want %v", got, allZonePieces)
	}
	for i := range 20 {
		if i == 10 {
			slices.Reverse(w.nodes)
		}
		if got := w.reconcile(t); len(got) != 0 {
			t.Fatalf("network %d's reconcile applied %v over unchanged inputs", i, got)
		}
	}
	if got := w.r.zone.builds.Load(); got != 3 {
		t.Errorf("%d zone pieces built by 21 reconciles, want 3", got)
	}
	isolation, err := w.r.isolation(context.Background(), w.nodes)
	if err != nil {
		t.Fatal(err)
	}
	svcIPs, err := w.r.serviceIPs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	shared, err := policy.EgressIPShared(w.r.cluster(), svcIPs)
	if err != nil {
		t.Fatal(err)
	}
	hostIPs, err := nodeIPs(w.nodes)
	if err != nil {
		t.Fatal(err)
	}
	defaults, err := policy.EgressIPDefaultNetworkSets(w.r.cluster(), hostIPs)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []*rows.Desired{isolation, shared, defaults} {
		if !reflect.DeepEqual(w.applied[d.Owner.Piece], d) {
			t.Errorf("%s applied %+v, the builder gives %+v", d.Owner.Piece, w.applied[d.Owner.Piece], d)
		}
	}
}

// A change of each input reaches the piece that reads it, and only that
// piece: a node's host addresses (node-ips), a node's default subnets (the
// isolation ACLs), a pod event (the isolation members), a service's
// ClusterIPs (the udn-enabled-svc sets), a new node; a resync of every
// network or of the zone's rows applies them all again (the zone's alone
// queues the NADs itself), another network's resync none.
func TestZoneRowsFollowEachInput(t *testing.T) {
	w := newZoneWorld(t)
	w.reconcile(t)
	step := func(what string, change func(), want ...string) {
		t.Helper()
		change()
		if got := w.reconcile(t); !slices.Equal(got, want) {
			t.Errorf("%s: applied %v, want %v", what, got, want)
		}
		if got := w.reconcile(t); len(got) != 0 {
			t.Errorf("%s: the next reconcile applied %v again", what, got)
		}
	}
	step("node-b's host addresses", func() {
		w.nodes[1].Annotations[ovnk.AnnotationHostCIDRs] = `["192.0.2.3/24","192.0.2.9/24"]`
	}, base.PieceEgressIPDefaultSets)
	if got := w.addresses(base.PieceEgressIPDefaultSets, "node-ips"); !slices.Equal(got, []string{"192.0.2.2", "192.0.2.3", "192.0.2.9", "2001:db8::2"}) {
		t.Errorf("node-ips %v after node-b's new address", got)
	}
	step("node-a's default subnets", func() {
		w.nodes[0].Annotations[ovnk.AnnotationNodeSubnets] = `{"default":["10.244.7.0/24","fd00:10:244:3::/64"]}`
	}, base.PieceUDNIsolation)
	if acls := w.applied[base.PieceUDNIsolation].PortGroups[0].ACLs; !slices.ContainsFunc(acls, func(a nbdb.ACL) bool {
		return strings.Contains(a.Match, "10.244.7.2")
	}) {
		t.Errorf("isolation ACLs lack node-a's new management IP 10.244.7.2: %+v", acls)
	}
	step("a pod event", func() {
		w.members = append(w.members, policy.IsolationMember{Port: "ns_db", Pod: "ns/db"})
		w.r.zone.pods.Add(1)
	}, base.PieceUDNIsolation)
	var svc corev1.Service
	if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "kubernetes"}, &svc); err != nil {
		t.Fatal(err)
	}
	step("the API service's ClusterIPs (unwatched)", func() {
		svc.Spec.ClusterIPs = []string{"10.96.0.10"}
		if err := w.c.Update(context.Background(), &svc); err != nil {
			t.Fatal(err)
		}
	}, base.PieceEgressIPShared)
	if got := w.addresses(base.PieceEgressIPShared, "udn-enabled-svc-cluster-ips"); !slices.Equal(got, []string{"10.96.0.10"}) {
		t.Errorf("udn-enabled-svc addresses %v, want the service's new 10.96.0.10", got)
	}
	step("a new node", func() {
		w.nodes = append(w.nodes, nodeWith("node-c", map[string]string{ovnk.AnnotationNodeSubnets: `{"default":["10.244.3.0/24"]}`,
			ovnk.AnnotationHostCIDRs: `["192.0.2.4/24"]`}))
	}, base.PieceUDNIsolation, base.PieceEgressIPDefaultSets)
	resync := w.r.Resynced(nil)
	step("another network's resync", func() { resync(engine.Resync{Reason: engine.ResyncForeignEdit, Networks: []string{"ns_blue"}}) })
	step("the zone's resync", func() {
		resync(engine.Resync{Reason: engine.ResyncForeignEdit, Networks: []string{"ns_blue", policy.ZoneNetwork}})
	}, allZonePieces...)
	if got := len(w.r.zone.resyncs); got != 1 {
		t.Errorf("%d reconciles queued for the zone's resync, want 1 (no NAD names the zone's rows)", got)
	}
	<-w.r.zone.resyncs
	step("every network's resync", func() { resync(engine.Resync{Reason: engine.ResyncDatabaseReplaced, All: true}) }, allZonePieces...)
	if got := len(w.r.zone.resyncs); got != 0 {
		t.Errorf("%d reconciles queued for every network's resync, which queues every NAD already", got)
	}
}

// With the UDN-enabled services watched, their generation stands for
// their ClusterIPs: a service event rebuilds the shared sets, nothing
// else reads the services.
func TestZoneRowsWatchedServices(t *testing.T) {
	w := newZoneWorld(t)
	reads := 0
	w.r.Services = countingCache{c: w.c, reads: &reads}
	w.reconcile(t)
	w.reconcile(t)
	if reads != len(w.r.Cluster.UDNAllowedDefaultServices) {
		t.Errorf("%d service reads by two reconciles, want one per UDN-enabled service (%d)", reads, len(w.r.Cluster.UDNAllowedDefaultServices))
	}
	w.r.zone.services.Add(1)
	if got := w.reconcile(t); !slices.Equal(got, []string{base.PieceEgressIPShared}) {
		t.Errorf("a service event: applied %v, want the shared sets", got)
	}
}

// A failed Apply records nothing: the next reconcile builds and applies
// the piece again, and the pieces after a failed isolation Apply wait for
// it. The node-ips sets' failure is logged, not an error, and retried too.
func TestZoneRowsFailedApplyRetried(t *testing.T) {
	w := newZoneWorld(t)
	w.fail[base.PieceUDNIsolation] = errors.New("transaction failed")
	if err := w.r.applyZoneRows(context.Background(), w.nodes); err == nil {
		t.Fatal("a failed isolation Apply: no error")
	}
	if len(w.applies) != 0 {
		t.Errorf("applied %v after the isolation piece failed", w.applies)
	}
	delete(w.fail, base.PieceUDNIsolation)
	w.fail[base.PieceEgressIPDefaultSets] = errors.New("owned by another")
	if got := w.reconcile(t); !slices.Equal(got, allZonePieces[:2]) {
		t.Errorf("after the failure: applied %v, want %v", got, allZonePieces[:2])
	}
	if got := w.reconcile(t); len(got) != 0 {
		t.Errorf("applied %v again", got)
	}
	built := w.r.zone.builds.Load()
	delete(w.fail, base.PieceEgressIPDefaultSets)
	if got := w.reconcile(t); !slices.Equal(got, allZonePieces[2:]) {
		t.Errorf("the node-ips sets after their failure: applied %v", got)
	}
	if got := w.r.zone.builds.Load() - built; got != 1 {
		t.Errorf("%d pieces built after the node-ips sets' failure, want 1", got)
	}
	w.nodes[0].Annotations[ovnk.AnnotationHostCIDRs] = `192.0.2.2`
	if err := w.r.applyZoneRows(context.Background(), w.nodes); err == nil {
		t.Error("a malformed host-cidrs: no error")
	}
}

// countingCache is a services cache that reads through c and counts its
// reads (only Get is used).
type countingCache struct {
	cache.Cache
	c     client.Reader
	reads *int
}

func (c countingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	*c.reads++
	return c.c.Get(ctx, key, obj, opts...)
}
