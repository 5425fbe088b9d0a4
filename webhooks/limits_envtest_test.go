package webhooks_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/webhooks/network"
)

// limitHandlers are a UDN and a CUDN validator with limits, counting on the
// suite manager's cache as SetupWithManager's do.
type limitHandlers struct {
	udn, cudn admission.Handler
}

func newLimitHandlers(t testing.TB, limits network.Limits) limitHandlers {
	t.Helper()
	startEnv(t)
	cache := shared.mgr.GetCache()
	counts, err := network.NewNetworkCounts(ctx, cache)
	if err != nil {
		t.Fatal(err)
	}
	return limitHandlers{
		udn:  admission.WithValidator(shared.env.Scheme, &network.UserDefinedNetworkValidator{Client: cache, Limits: limits, Counts: counts}),
		cudn: admission.WithValidator(shared.env.Scheme, &network.ClusterUserDefinedNetworkValidator{Client: cache, Limits: limits, Counts: counts}),
	}
}

// create asks h to admit obj's create (a dry run if dry).
func (h limitHandlers) create(t testing.TB, obj client.Object, dry bool) admission.Response {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	kind, handler := udnv1.KindUserDefinedNetwork, h.udn
	if _, ok := obj.(*udnv1.ClusterUserDefinedNetwork); ok {
		kind, handler = udnv1.KindClusterUserDefinedNetwork, h.cudn
	}
	return handler.Handle(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "test", Operation: admissionv1.Create, Name: obj.GetName(), Namespace: obj.GetNamespace(),
		Object: runtime.RawExtension{Raw: raw}, DryRun: ptr.To(dry),
		Kind: metav1.GroupVersionKind{Group: udnv1.GroupVersion.Group, Version: udnv1.GroupVersion.Version, Kind: kind}}})
}

// forbidden says why resp is not a 403 refusal whose message holds want.
func forbidden(resp admission.Response, want string) error {
	if resp.Allowed || resp.Result == nil || resp.Result.Code != 403 || !strings.Contains(resp.Result.Message, want) {
		return fmt.Errorf("allowed %v, %+v; want 403 with %q", resp.Allowed, resp.Result, want)
	}
	return nil
}

func secondary(i int) udnv1.NetworkSpec {
	return testobj.Layer2(udnv1.NetworkRoleSecondary, udnv1.CIDR(fmt.Sprintf("10.180.%d.0/24", i)))
}

// A namespace holds at most --max-networks-per-namespace UDNs: one more is
// refused naming the rule and the limit, dry run or not, while another
// namespace is not affected; deleting one makes room.
func TestNamespaceNetworkLimit(t *testing.T) {
	const limit = 3
	h := newLimitHandlers(t, network.Limits{PerNamespace: limit, Cluster: testLimits.Cluster})
	c := synced(startEnv(t).Client)
	namespace(t, c, "limited", false, nil)
	for i := range limit {
		if resp := h.create(t, testobj.MakeUDN("limited", fmt.Sprintf("n%d", i)).Spec(secondary(i)).Obj(), false); !resp.Allowed {
			t.Fatalf("UDN %d of %d: %+v", i+1, limit, resp.Result)
		}
		if err := c.Create(ctx, testobj.MakeUDN("limited", fmt.Sprintf("n%d", i)).Spec(secondary(i)).Obj()); err != nil {
			t.Fatal(err)
		}
	}
	want := fmt.Sprintf("namespace limited already has %d UserDefinedNetworks, the most one namespace may have (the manager's --%s=%d): "+
		"each takes one of the cluster's %d network IDs. Delete one, or ask a cluster administrator to raise the limit",
		limit, network.FlagMaxNetworksPerNamespace, limit, testLimits.Cluster)
	over := testobj.MakeUDN("limited", "over").Spec(secondary(10)).Obj()
	for _, dry := range []bool{true, false} {
		if err := forbidden(h.create(t, over, dry), want); err != nil {
			t.Errorf("dry run %v: %v", dry, err)
		}
	}
	if resp := h.create(t, testobj.MakeUDN("limited-other", "n0").Spec(secondary(0)).Obj(), true); !resp.Allowed {
		t.Errorf("another namespace: %+v", resp.Result)
	}
	if err := c.Delete(ctx, testobj.MakeUDN("limited", "n0").Spec(secondary(0)).Obj()); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the freed slot admits a new network", func() error {
		if resp := h.create(t, over, true); !resp.Allowed {
			return fmt.Errorf("after a delete made room: %+v", resp.Result)
		}
		return nil
	})
}

// Creates admitted at once cannot pass the limit together, though the cache
// shows none of them: an admitted create counts until its object appears
// (a dry run never counts), so exactly the limit's worth is admitted.
func TestNamespaceNetworkLimitUnderConcurrentCreates(t *testing.T) {
	const limit, attempts = 4, 40
	h := newLimitHandlers(t, network.Limits{PerNamespace: limit, Cluster: testLimits.Cluster})
	for i := range attempts {
		if resp := h.create(t, testobj.MakeUDN("burst", fmt.Sprintf("dry%d", i)).Spec(secondary(i)).Obj(), true); !resp.Allowed {
			t.Fatalf("dry run %d: %+v", i, resp.Result)
		}
	}
	var wg sync.WaitGroup
	allowed := make([]bool, attempts)
	for i := range attempts {
		wg.Go(func() {
			allowed[i] = h.create(t, testobj.MakeUDN("burst", fmt.Sprintf("n%d", i)).Spec(secondary(i)).Obj(), false).Allowed
		})
	}
	wg.Wait()
	n := 0
	for _, a := range allowed {
		if a {
			n++
		}
	}
	if n != limit {
		t.Errorf("%d creates at once: %d admitted, want %d", attempts, n, limit)
	}
}

// When the cluster's network IDs are all held, a new UDN and a new CUDN are
// refused at admission, naming the cause: with the cluster's limit one
// above what exists, one network is admitted and the next refused.
func TestClusterNetworkIDsExhausted(t *testing.T) {
	startEnv(t)
	var udns udnv1.UserDefinedNetworkList
	var cudns udnv1.ClusterUserDefinedNetworkList
	if err := shared.mgr.GetCache().List(ctx, &udns); err != nil {
		t.Fatal(err)
	}
	if err := shared.mgr.GetCache().List(ctx, &cudns); err != nil {
		t.Fatal(err)
	}
	held := len(udns.Items) + len(cudns.Items)
	h := newLimitHandlers(t, network.Limits{Cluster: held + 1})
	if resp := h.create(t, testobj.MakeUDN("ids", "last-free").Spec(secondary(1)).Obj(), false); !resp.Allowed {
		t.Fatalf("the last free network ID: refused: %+v", resp.Result)
	}
	want := fmt.Sprintf("all %d network IDs of the cluster are held by its %d UserDefinedNetworks and ClusterUserDefinedNetworks", held+1, held+1)
	if err := forbidden(h.create(t, testobj.MakeUDN("ids-other", "one-too-many").Spec(secondary(2)).Obj(), false), want); err != nil {
		t.Errorf("a UDN with no network ID left: %v", err)
	}
	if err := forbidden(h.create(t, testobj.MakeCUDN("one-too-many").SelectLabels(map[string]string{"none": "none"}).Spec(secondary(3)).Obj(), false), want); err != nil {
		t.Errorf("a CUDN with no network ID left: %v", err)
	}
}
