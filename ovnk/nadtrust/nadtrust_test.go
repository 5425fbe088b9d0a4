package nadtrust_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
	"github.com/udnkit/udnkit/ovnk/netconf"
)

// Each check of the rule, on a NAD as udnkit's reconciler renders it
// (netconf.NewNAD) and on one field changed at a time.
func TestVerify(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := udnv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := nadv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{ovnk.AnnotationNetworkID: "7", ovnk.AnnotationTunnelKeys: "[16711687,16715782]"}
	udn := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "blue", Name: "net", UID: "udn-uid", Annotations: ids}}
	cudn := &udnv1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: "shared", UID: "cudn-uid"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(udn, cudn).Build()
	spec := udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.1.0.0/24"}}}
	render := func(kind string, meta metav1.ObjectMeta, ns string) *nadv1.NetworkAttachmentDefinition {
		t.Helper()
		nad, err := netconf.NewNAD(netconf.NADSource{Kind: kind, Meta: meta, Spec: spec}, ns, ovnk.DefaultClusterConfig(), nil,
			ovnk.NetworkIDs{ID: 7, HasID: true, TunnelKeys: []int{16711687, 16715782}})
		if err != nil {
			t.Fatal(err)
		}
		return nad
	}
	udnNAD := func() *nadv1.NetworkAttachmentDefinition {
		return render(udnv1.KindUserDefinedNetwork, udn.ObjectMeta, "blue")
	}
	cudnNAD := func() *nadv1.NetworkAttachmentDefinition {
		return render(udnv1.KindClusterUserDefinedNetwork, cudn.ObjectMeta, "green")
	}
	for _, tc := range []struct {
		name   string
		nad    func() *nadv1.NetworkAttachmentDefinition
		reason string // "" for trusted
		msg    string
	}{
		{name: "UDN's NAD", nad: udnNAD},
		{name: "CUDN's NAD in any namespace", nad: cudnNAD},
		{name: "no owner", nad: func() *nadv1.NetworkAttachmentDefinition { n := udnNAD(); n.OwnerReferences = nil; return n },
			reason: nadtrust.ReasonNoController, msg: "no controller reference"},
		{name: "owner not a controller", nad: func() *nadv1.NetworkAttachmentDefinition {
			n := udnNAD()
			n.OwnerReferences[0].Controller = nil
			return n
		}, reason: nadtrust.ReasonNoController, msg: "no controller reference"},
		{name: "another kind", nad: func() *nadv1.NetworkAttachmentDefinition {
			n := udnNAD()
			n.OwnerReferences[0].APIVersion, n.OwnerReferences[0].Kind = "apps/v1", "Deployment"
			return n
		}, reason: nadtrust.ReasonNoController, msg: "the controller is apps/v1 Deployment"},
		{name: "another name", nad: func() *nadv1.NetworkAttachmentDefinition { n := udnNAD(); n.Name = "other"; return n },
			reason: nadtrust.ReasonNameMismatch, msg: `metadata.name: "other" is not the name of its controller UserDefinedNetwork "net"`},
		{name: "UDN of another namespace", nad: func() *nadv1.NetworkAttachmentDefinition { n := udnNAD(); n.Namespace = "evil"; return n },
			reason: nadtrust.ReasonOwnerNotFound, msg: "the controller UserDefinedNetwork evil/net does not exist"},
		{name: "forged UID", nad: func() *nadv1.NetworkAttachmentDefinition {
			n := cudnNAD()
			n.OwnerReferences[0].UID = "guess"
			return n
		},
			reason: nadtrust.ReasonOwnerUIDMismatch, msg: "has UID cudn-uid, not guess"},
		{name: "another network's name", nad: func() *nadv1.NetworkAttachmentDefinition {
			n := udnNAD()
			n.Spec.Config = strings.Replace(n.Spec.Config, `"name":"blue_net"`, `"name":"red_net"`, 1)
			return n
		}, reason: nadtrust.ReasonNetworkNameMismatch, msg: `spec.config name "red_net" is not "blue_net"`},
		{name: "another NAD's key", nad: func() *nadv1.NetworkAttachmentDefinition {
			n := cudnNAD()
			n.Spec.Config = strings.Replace(n.Spec.Config, `"netAttachDefName":"green/shared"`, `"netAttachDefName":"red/shared"`, 1)
			return n
		}, reason: nadtrust.ReasonNetworkNameMismatch, msg: `netAttachDefName "red/shared" is not the NAD's own "green/shared"`},
		{name: "malformed config", nad: func() *nadv1.NetworkAttachmentDefinition { n := udnNAD(); n.Spec.Config = "{"; return n },
			reason: nadtrust.ReasonMalformedConfig, msg: "spec.config: "},
		{name: "another network's ID", nad: func() *nadv1.NetworkAttachmentDefinition {
			n := udnNAD()
			n.Annotations[ovnk.AnnotationNetworkID] = "3"
			return n
		}, reason: nadtrust.ReasonNetworkIDMismatch, msg: `k8s.ovn.org/network-id="3" is not 7, its controller's`},
		{name: "another network's tunnel keys", nad: func() *nadv1.NetworkAttachmentDefinition {
			n := udnNAD()
			n.Annotations[ovnk.AnnotationTunnelKeys] = "[16711687,16715783]"
			return n
		}, reason: nadtrust.ReasonNetworkIDMismatch, msg: `k8s.ovn.org/tunnel-keys="[16711687,16715783]" is not "[16711687,16715782]"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			owner, err := nadtrust.Verify(context.Background(), c, tc.nad())
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("Verify: %v, want trusted", err)
				}
				if owner.Network != "blue_net" && owner.Network != "cluster_udn_shared" {
					t.Errorf("owner network = %q", owner.Network)
				}
				return
			}
			u, ok := nadtrust.IsUntrusted(err)
			if !ok {
				t.Fatalf("Verify: err = %v, want an untrusted %s", err, tc.reason)
			}
			if u.Reason != tc.reason || !strings.Contains(u.Message, tc.msg) {
				t.Errorf("Verify: %s %q, want %s containing %q", u.Reason, u.Message, tc.reason, tc.msg)
			}
		})
	}
}

// A Guard reports a failing NAD once per version: the counter moves once
// for two reads of one version and again for the next version.
func TestGuardReportsOncePerVersion(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := udnv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	g := &nadtrust.Guard{Reader: fake.NewClientBuilder().WithScheme(scheme).Build(), Consumer: "test-once"}
	nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "b", ResourceVersion: "1"}}
	for range 2 {
		if _, ok, err := g.Trusted(context.Background(), nad); ok || err != nil {
			t.Fatalf("Trusted = %v, %v; want false, nil", ok, err)
		}
	}
	if got := nadtrust.Count("test-once", nadtrust.ReasonNoController); got != 1 {
		t.Errorf("counter after two reads of one version = %v, want 1", got)
	}
	nad.ResourceVersion = "2"
	_, _, _ = g.Trusted(context.Background(), nad)
	if got := nadtrust.Count("test-once", nadtrust.ReasonNoController); got != 2 {
		t.Errorf("counter after the next version = %v, want 2", got)
	}
}

// BenchmarkVerify is one check of a rendered NAD against a cache-like
// reader: what each dataplane reconcile adds per NAD it reads.
func BenchmarkVerify(b *testing.B) {
	scheme := runtime.NewScheme()
	if err := udnv1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	udn := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "blue", Name: "net", UID: "udn-uid"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(udn).Build()
	nad, err := netconf.NewNAD(netconf.NADSource{Kind: udnv1.KindUserDefinedNetwork, Meta: udn.ObjectMeta,
		Spec: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.1.0.0/24"}}}},
		"blue", ovnk.DefaultClusterConfig(), nil, ovnk.NetworkIDs{ID: 7, HasID: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := nadtrust.Verify(context.Background(), c, nad); err != nil {
			b.Fatal(err)
		}
	}
}

// A NAD whose owner the cache does not have yet but the apiserver does is
// ignored for now and not reported; once the owner is gone from both, it is.
func TestGuardDoesNotReportALaggingCache(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := udnv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	udn := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "blue", Name: "net", UID: "udn-uid"}}
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(udn).Build()
	g := &nadtrust.Guard{Reader: fake.NewClientBuilder().WithScheme(scheme).Build(), Live: live, Consumer: "test-lag"}
	nad, err := netconf.NewNAD(netconf.NADSource{Kind: udnv1.KindUserDefinedNetwork, Meta: udn.ObjectMeta,
		Spec: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRoleSecondary, Subnets: udnv1.DualStackCIDRs{"10.1.0.0/24"}}}},
		"blue", ovnk.DefaultClusterConfig(), nil, ovnk.NetworkIDs{ID: 7, HasID: true})
	if err != nil {
		t.Fatal(err)
	}
	nad.ResourceVersion = "1"
	if _, ok, err := g.Trusted(context.Background(), nad); ok || err != nil {
		t.Fatalf("Trusted with the owner missing from the cache = %v, %v; want false, nil", ok, err)
	}
	if got := nadtrust.Count("test-lag", nadtrust.ReasonOwnerNotFound); got != 0 {
		t.Errorf("a lagging cache was reported (counter %v)", got)
	}
	if err := live.Delete(context.Background(), udn); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := g.Trusted(context.Background(), nad); ok {
		t.Fatal("trusted without an owner")
	}
	if got := nadtrust.Count("test-lag", nadtrust.ReasonOwnerNotFound); got != 1 {
		t.Errorf("an owner missing everywhere: counter %v, want 1", got)
	}
}

// cacheReader hands over its UDN the way controller-runtime's informer
// cache does: a deep copy, or with client.UnsafeDisableDeepCopy the
// cache's own object (its maps shared); copies counts the deep copies.
type cacheReader struct {
	udn    *udnv1.UserDefinedNetwork // nil: none
	copies int
}

func (r *cacheReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	var o client.GetOptions
	o.ApplyOptions(opts)
	src := r.udn
	if src == nil {
		return apierrors.NewNotFound(udnv1.GroupVersion.WithResource("userdefinednetworks").GroupResource(), "net")
	}
	if o.UnsafeDisableDeepCopy == nil || !*o.UnsafeDisableDeepCopy {
		src = src.DeepCopy()
		r.copies++
	}
	*obj.(*udnv1.UserDefinedNetwork) = *src
	return nil
}

func (r *cacheReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

// Verify reads a NAD's owner from the cache without copying it (a deep
// copy per NAD read was a dataplane sweep's visible cost) and leaves the
// cache's object as it was.
func TestVerifyReadsTheOwnerWithoutCopyingIt(t *testing.T) {
	ids := map[string]string{ovnk.AnnotationNetworkID: "7", ovnk.AnnotationTunnelKeys: "[16711687,16715782]"}
	udn := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "blue", Name: "net", UID: "udn-uid", Annotations: ids}}
	nad, err := netconf.NewNAD(netconf.NADSource{Kind: udnv1.KindUserDefinedNetwork, Meta: udn.ObjectMeta,
		Spec: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.1.0.0/24"}}}},
		"blue", ovnk.DefaultClusterConfig(), nil, ovnk.NetworkIDs{ID: 7, HasID: true, TunnelKeys: []int{16711687, 16715782}})
	if err != nil {
		t.Fatal(err)
	}
	before := udn.DeepCopy()
	r := &cacheReader{udn: udn}
	owner, err := nadtrust.Verify(context.Background(), r, nad)
	if err != nil || owner.Network != "blue_net" || owner.UID != "udn-uid" {
		t.Fatalf("Verify = %+v, %v; want the owner blue/net trusted", owner, err)
	}
	if r.copies != 0 {
		t.Errorf("Verify deep-copied the owner %d times, want 0", r.copies)
	}
	if !equality.Semantic.DeepEqual(udn, before) {
		t.Errorf("Verify changed the cache's owner: %+v, was %+v", udn, before)
	}
	// A NAD recording other IDs than the cache's owner is still refused.
	nad.Annotations[ovnk.AnnotationNetworkID] = "8"
	if _, err := nadtrust.Verify(context.Background(), r, nad); err == nil {
		t.Error("a NAD with another network ID than its owner's passed")
	}
}

// A Guard that remembers verdicts answers again for the same NAD and owner
// versions, and verifies anew when either changes or the owner goes: a
// NAD whose owner's IDs changed, a NAD edited to a malformed config and a
// NAD whose owner was deleted all stop passing.
func TestGuardRemembersEachVersionsVerdict(t *testing.T) {
	ids := map[string]string{ovnk.AnnotationNetworkID: "7", ovnk.AnnotationTunnelKeys: "[16711687,16715782]"}
	udn := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "blue", Name: "net", UID: "udn-uid", ResourceVersion: "10", Annotations: ids}}
	nad, err := netconf.NewNAD(netconf.NADSource{Kind: udnv1.KindUserDefinedNetwork, Meta: udn.ObjectMeta,
		Spec: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.1.0.0/24"}}}},
		"blue", ovnk.DefaultClusterConfig(), nil, ovnk.NetworkIDs{ID: 7, HasID: true, TunnelKeys: []int{16711687, 16715782}})
	if err != nil {
		t.Fatal(err)
	}
	nad.UID, nad.ResourceVersion = "nad-uid", "11"
	r := &cacheReader{udn: udn}
	g := &nadtrust.Guard{Reader: r, Consumer: "test-remember", Remember: true}
	trusted := func() bool {
		t.Helper()
		_, ok, err := g.Trusted(context.Background(), nad)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !trusted() {
		t.Fatal("the NAD of its owner is not trusted")
	}
	// The same versions: the verdict is remembered, not the rule run
	// again (this owner edit without a new resourceVersion is one no
	// apiserver makes; it shows which answered).
	udn.Annotations = map[string]string{ovnk.AnnotationNetworkID: "8"}
	if !trusted() {
		t.Error("the same NAD and owner versions were verified again")
	}
	udn.ResourceVersion = "12"
	if trusted() {
		t.Error("a NAD whose owner now records another network ID passed: the owner's new version was not verified")
	}
	udn.Annotations, udn.ResourceVersion = ids, "13"
	if !trusted() {
		t.Fatal("the owner's IDs restored: the NAD is not trusted again")
	}
	config := nad.Spec.Config
	nad.Spec.Config, nad.ResourceVersion = "{", "14"
	if trusted() {
		t.Error("a NAD edited to a malformed config passed: its new version was not verified")
	}
	nad.Spec.Config, nad.ResourceVersion = config, "11"
	r.udn = nil
	if trusted() {
		t.Error("a NAD whose owner is gone passed")
	}
	// Without Remember every read verifies.
	r.udn, udn.Annotations = udn, map[string]string{ovnk.AnnotationNetworkID: "8"}
	if _, ok, _ := (&nadtrust.Guard{Reader: r, Consumer: "test-remember"}).Trusted(context.Background(), nad); ok {
		t.Error("a Guard that does not remember answered from a verdict")
	}
}

// gatedReader is a client whose Lists (counted) each wait, once they have
// read, until the test lets them return.
type gatedReader struct {
	client.Client
	lists   atomic.Int32
	started chan struct{}
	gate    chan struct{}
}

func (r *gatedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	err := r.Client.List(ctx, list, opts...)
	r.lists.Add(1)
	r.started <- struct{}{}
	<-r.gate
	return err
}

// Labelled calls made while a list runs share the next list, which
// begins after them: the two calls made while the first list ran see the
// network created meanwhile and cost one list between them, not one each;
// a NAD whose owner is deleted is no longer trusted.
func TestLabelledCallsShareTheNextList(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{udnv1.AddToScheme, nadv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	udn := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "blue", Name: "net", UID: "blue-uid"}}
	spec := udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.1.0.0/24"}}}
	render := func(udn *udnv1.UserDefinedNetwork) *nadv1.NetworkAttachmentDefinition {
		nad, err := netconf.NewNAD(netconf.NADSource{Kind: udnv1.KindUserDefinedNetwork, Meta: udn.ObjectMeta, Spec: spec}, udn.Namespace, ovnk.DefaultClusterConfig(), nil, ovnk.NetworkIDs{})
		if err != nil {
			t.Fatal(err)
		}
		return nad
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(udn, render(udn)).Build()
	r := &gatedReader{Client: c, started: make(chan struct{}, 3), gate: make(chan struct{})}
	g := &nadtrust.Guard{Reader: r, Consumer: "test-labelled", Remember: true}
	ctx := context.Background()
	trusted := func(vs []*nadtrust.Verified) []bool {
		var out []bool
		for _, v := range vs {
			_, ok, err := v.Trusted(ctx)
			if err != nil {
				t.Error(err)
			}
			out = append(out, ok)
		}
		return out
	}
	answers := make([][]bool, 3)
	var wg sync.WaitGroup
	call := func(i int) {
		wg.Go(func() {
			vs, err := g.Labelled(ctx)
			if err != nil {
				t.Error(err)
			}
			answers[i] = trusted(vs)
		})
	}
	call(0)
	<-r.started // the first list has read: one network
	green := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "green", Name: "net", UID: "green-uid"}}
	for _, o := range []client.Object{green, render(green)} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	call(1)
	call(2)
	for deadline := time.Now().Add(10 * time.Second); nadtrust.Waiting(g) != 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls wait for the next list, want 2", nadtrust.Waiting(g))
		}
	}
	close(r.gate)
	wg.Wait()
	if got := fmt.Sprint(answers); got != "[[true] [true true] [true true]]" {
		t.Errorf("trusted per call %s, want the first call's one NAD, the later calls' two (one created meanwhile)", got)
	}
	if n := r.lists.Load(); n != 2 {
		t.Errorf("%d lists for three calls, want 2 (the two later calls share one)", n)
	}
	// The owner goes: the next call checks the NAD again (its verdict was
	// for an owner that is gone).
	if err := c.Delete(ctx, udn); err != nil {
		t.Fatal(err)
	}
	r.started = make(chan struct{}, 1)
	if vs, err := g.Labelled(ctx); err != nil || fmt.Sprint(trusted(vs)) != "[false true]" {
		t.Errorf("after blue's owner is deleted: %v (%v), want blue's NAD untrusted, green's trusted", trusted(vs), err)
	}
}
