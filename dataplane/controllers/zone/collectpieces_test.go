package zone

import (
	"context"
	"slices"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/dataplane/controllers/internal/ctrltest"
	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
	"github.com/udnkit/udnkit/ovnk/netconf"
)

// removals is a Remover that records the pieces it removed (topology/
// piece/network), and each call's, and runs before, when set, for each
// network just before it asks unless.
type removals struct {
	removed []string
	calls   [][]string
	before  func(network string)
}

func (r *removals) RemoveUnless(ctx context.Context, owners []rows.Owner, unless func(context.Context, []string) (map[string]bool, error)) (engine.Result, error) {
	var networks []string
	for _, o := range owners {
		if r.before != nil {
			r.before(o.Network)
		}
		networks = append(networks, o.Network)
	}
	keep, err := unless(ctx, networks)
	if err != nil {
		return engine.Result{}, err
	}
	var call []string
	for _, o := range owners {
		if !keep[o.Network] {
			call = append(call, o.Topology+"/"+o.Piece+"/"+o.Network)
		}
	}
	r.removed = append(r.removed, call...)
	r.calls = append(r.calls, call)
	return engine.Result{}, nil
}

// A sweep of three pieces lists every NAD once, not once per piece, and
// removes, piece after piece, the networks no live NAD names, a piece's
// networks in one call; a network whose NAD appears after that list
// (before its removal) keeps its rows.
func TestCollectPiecesReadsTheLiveNetworksOnce(t *testing.T) {
	scheme := ctrltest.NADScheme(t)
	if err := udnv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	nadOf := func(u *udnv1.UserDefinedNetwork) *nadv1.NetworkAttachmentDefinition { return layer2NAD(t, u) }
	blue, late := netUDN("blue"), netUDN("late")
	wholeLists := 0
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&nadv1.NetworkAttachmentDefinition{}, AnyNetworkField, AnyNetwork).
		WithObjects(blue, late, nadOf(blue)).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			var o client.ListOptions
			o.ApplyOptions(opts)
			if _, nads := list.(*nadv1.NetworkAttachmentDefinitionList); nads && o.FieldSelector == nil {
				wholeLists++
			}
			return c.List(ctx, list, opts...)
		}}).Build()
	g := &nadtrust.Guard{Reader: c, Consumer: "test-collect"}
	inOVN := map[string][]string{
		"p1": {"blue_net", "gone_a"},
		"p2": {"gone_a", "late_net", "gone_b"},
		"p3": {"blue_net"},
	}
	networks := func(_, piece string) []string { return inOVN[piece] }
	ovn := &removals{before: func(network string) {
		if network == "late_net" {
			if err := c.Create(context.Background(), nadOf(late)); err != nil {
				t.Fatal(err)
			}
		}
	}}
	parsed := map[string]int{}
	var names Names
	names.Of(func(nad *nadv1.NetworkAttachmentDefinition) (string, bool) {
		parsed[nad.Namespace]++
		return Layer2Name(nad)
	})
	owners := []rows.Owner{{Topology: "layer2", Piece: "p1"}, {Topology: "layer2", Piece: "p2"}, {Topology: "layer2", Piece: "p3"}}
	live, err := CollectPieces(t.Context(), c, g, ovn, networks, &names, owners...)
	if err != nil {
		t.Fatal(err)
	}
	if wholeLists != 1 {
		t.Errorf("a sweep of three pieces listed every NAD %d times, want 1", wholeLists)
	}
	if want := []string{"layer2/p1/gone_a", "layer2/p2/gone_a", "layer2/p2/gone_b"}; !slices.Equal(ovn.removed, want) {
		t.Errorf("removed %v, want %v", ovn.removed, want)
	}
	if len(ovn.calls) != 2 || len(ovn.calls[1]) != 2 {
		t.Errorf("removals by call %v, want p1's, then p2's two together", ovn.calls)
	}
	if !live["blue_net"] || live["gone_a"] {
		t.Errorf("live networks %v, want blue_net alone", live)
	}

	// The next sweep reads blue's NAD, unchanged, from what names
	// remembers; late's NAD is read once, and again once it changes.
	ovn.before, ovn.removed = nil, nil
	inOVN = map[string][]string{"p1": {"blue_net", "late_net"}}
	clear(parsed)
	for range 2 {
		if _, err := CollectPieces(t.Context(), c, g, ovn, networks, &names, owners...); err != nil {
			t.Fatal(err)
		}
	}
	if len(parsed) != 0 || len(ovn.removed) != 0 {
		t.Errorf("two sweeps parsed %v (want none: late's NAD was read under its lock in the first) and removed %v (want none)", parsed, ovn.removed)
	}
	var lateNAD nadv1.NetworkAttachmentDefinition
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: "late", Name: "net"}, &lateNAD); err != nil {
		t.Fatal(err)
	}
	lateNAD.Annotations[ovnk.AnnotationTunnelKeys] = ""
	lateNAD.Finalizers = nil // so that its deletion below removes it
	if err := c.Update(t.Context(), &lateNAD); err != nil {
		t.Fatal(err)
	}
	if _, err := CollectPieces(t.Context(), c, g, ovn, networks, &names, owners...); err != nil {
		t.Fatal(err)
	}
	if parsed["late"] != 1 || !slices.Equal(ovn.removed, []string{"layer2/p1/late_net"}) {
		t.Errorf("late's NAD lost its tunnel keys: parsed %d times (want 1), removed %v (want late_net)", parsed["late"], ovn.removed)
	}
	// A deleted NAD is forgotten by the next sweep.
	if err := c.Delete(t.Context(), &lateNAD); err != nil {
		t.Fatal(err)
	}
	if _, err := CollectPieces(t.Context(), c, g, ovn, networks, &names, owners...); err != nil {
		t.Fatal(err)
	}
	if _, kept := names.seen[types.NamespacedName{Namespace: "late", Name: "net"}]; kept || len(names.seen) != 1 {
		t.Errorf("after late's NAD was deleted, names remembers %v", names.seen)
	}
}

// Independent pieces collected together go in one removal (one batch of
// transactions), in owners' order; collected apart, one call per piece.
func TestCollectPiecesTogetherRemovesInOneCall(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(ctrltest.NADScheme(t)).
		WithIndex(&nadv1.NetworkAttachmentDefinition{}, AnyNetworkField, AnyNetwork).Build()
	g := &nadtrust.Guard{Reader: c, Consumer: "test-collect"}
	inOVN := map[string][]string{"p1": {"gone_a", "gone_b"}, "p2": {"gone_a"}}
	networks := func(_, piece string) []string { return inOVN[piece] }
	owners := []rows.Owner{{Topology: "layer2", Piece: "p1"}, {Topology: "layer2", Piece: "p2"}}
	for _, together := range []bool{true, false} {
		ovn := &removals{}
		collect := CollectPieces
		if together {
			collect = CollectPiecesTogether
		}
		if _, err := collect(t.Context(), c, g, ovn, networks, new(Names).Of(Layer2Name), owners...); err != nil {
			t.Fatal(err)
		}
		want := [][]string{{"layer2/p1/gone_a", "layer2/p1/gone_b", "layer2/p2/gone_a"}}
		if !together {
			want = [][]string{{"layer2/p1/gone_a", "layer2/p1/gone_b"}, {"layer2/p2/gone_a"}}
		}
		if !slices.EqualFunc(ovn.calls, want, slices.Equal) {
			t.Errorf("together=%v: removals by call %v, want %v", together, ovn.calls, want)
		}
	}
}

// netUDN is the UDN "net" of namespace ns.
func netUDN(ns string) *udnv1.UserDefinedNetwork {
	u := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net", UID: types.UID("uid-" + ns)}}
	u.SetGroupVersionKind(udnv1.GroupVersion.WithKind(udnv1.KindUserDefinedNetwork))
	return u
}

// layer2NAD is the NAD udnkit makes for u as a Primary Layer2 network.
func layer2NAD(t *testing.T, u *udnv1.UserDefinedNetwork) *nadv1.NetworkAttachmentDefinition {
	t.Helper()
	nad, err := netconf.NewNAD(netconf.NADSource{Kind: udnv1.KindUserDefinedNetwork, Meta: u.ObjectMeta,
		Spec: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{
			Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.1.0.0/16"}}}},
		u.Namespace, ovnk.DefaultClusterConfig(), nil, ovnk.NetworkIDs{ID: 7, HasID: true, TunnelKeys: []int{16711699, 16711700}})
	if err != nil {
		t.Fatal(err)
	}
	return nad
}

// TestUnlessGone: an Apply of a network is skipped once no live NAD names
// it (deleted, being deleted, of another kind), and goes ahead while one does.
func TestUnlessGone(t *testing.T) {
	scheme := ctrltest.NADScheme(t)
	if err := udnv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	blue, red := netUDN("blue"), netUDN("red")
	blueNAD, redNAD := layer2NAD(t, blue), layer2NAD(t, red)
	redNAD.Finalizers = []string{ovnk.FinalizerUserDefinedNetworkProtection}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&nadv1.NetworkAttachmentDefinition{}, AnyNetworkField, AnyNetwork).
		WithObjects(blue, red, blueNAD, redNAD).Build()
	g := &nadtrust.Guard{Reader: c, Consumer: "test-unless"}
	ctx := t.Context()
	gone := func(name func(*nadv1.NetworkAttachmentDefinition) (string, bool), network string) bool {
		t.Helper()
		skip, err := UnlessGone(c, g, name, network)(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return skip
	}
	if gone(Layer2Name, "blue_net") || gone(Layer2Name, "red_net") {
		t.Fatal("an Apply of a network with a live NAD is skipped")
	}
	if !gone(Layer3Name, "blue_net") {
		t.Error("a Layer2 NAD keeps a Layer3 controller's network live")
	}
	if err := c.Delete(ctx, redNAD); err != nil {
		t.Fatal(err)
	}
	if !gone(Layer2Name, "red_net") {
		t.Error("a NAD being deleted keeps its network live")
	}
	if err := c.Delete(ctx, blueNAD); err != nil {
		t.Fatal(err)
	}
	if !gone(Layer2Name, "blue_net") {
		t.Error("a deleted NAD keeps its network live")
	}
}
