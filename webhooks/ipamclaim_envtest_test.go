package webhooks_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	ipamclaimsv1alpha1 "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/webhooks/pod"
)

func claimRef(name string) map[string]string {
	return nse(`{"name": "default", "namespace": "ovn-kubernetes", "ipam-claim-reference": "` + name + `"}`)
}

// setOwnerPod writes the claim's status.ownerPod as the address reconciler
// does when it allocates for a pod (the suite runs no reconciler).
func setOwnerPod(t *testing.T, c client.Client, ns, name, owner string) {
	t.Helper()
	var cl ipamclaimsv1alpha1.IPAMClaim
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cl); err != nil {
		t.Fatal(err)
	}
	cl.Status.OwnerPod = &ipamclaimsv1alpha1.OwnerPod{Name: owner}
	cl.Status.IPs = []string{}
	if err := c.Status().Update(ctx, &cl); err != nil {
		t.Fatal(err)
	}
	// The webhooks read claims from the manager's cache: wait until it shows
	// the new owner, or a check right after this races the watch.
	testenv.Eventually(t, "the webhooks' cache shows "+ns+"/"+name+"'s owner pod "+owner, func() error {
		var cached ipamclaimsv1alpha1.IPAMClaim
		if err := shared.mgr.GetCache().Get(ctx, client.ObjectKeyFromObject(&cl), &cached); err != nil {
			return err
		}
		if cached.Status.OwnerPod == nil || cached.Status.OwnerPod.Name != owner {
			return fmt.Errorf("owner pod %v", cached.Status.OwnerPod)
		}
		return nil
	})
}

// expectConflict checks that err is a 409 whose message holds every want.
func expectConflict(t testing.TB, err error, want ...string) {
	t.Helper()
	if !apierrors.IsConflict(err) {
		t.Fatalf("err = %v, want 409 Conflict", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err.Error(), w)
		}
	}
}

// One IPAMClaim serves the pods of one VM: its source and target pods
// during a live migration share it; a pod of another VM, or of none, is
// refused naming the pod and VM that hold it, or the VM the claim belongs
// to; once the holder is gone the claim is free.
func TestIPAMClaimServesOneVM(t *testing.T) {
	env := startEnv(t)
	c := synced(env.Client)
	namespace(t, c, "claims", true, nil)
	// Persistent: the deprecated annotation is in use with OKEP-5233 off too.
	spec := predefinedNetwork()
	spec.Layer2.IPAM = &udnv1.IPAMConfig{Lifecycle: udnv1.IPAMLifecyclePersistent}
	if err := c.Create(ctx, testobj.MakeUDN("claims", "vms").Spec(spec).Obj()); err != nil {
		t.Fatal(err)
	}
	claim(t, c, "claims", "vm-a")
	source := testobj.MakePod("claims", "virt-launcher-a-1").VM("vm-a").Annotations(claimRef("vm-a")).Obj()
	if err := c.Create(ctx, source); err != nil {
		t.Fatalf("the first pod naming a free claim: %v", err)
	}
	setOwnerPod(t, c, "claims", "vm-a", source.Name)

	t.Run("the VM's migration target shares it", func(t *testing.T) {
		if err := c.Create(ctx, testobj.MakePod("claims", "virt-launcher-a-2").VM("vm-a").Annotations(claimRef("vm-a")).Obj()); err != nil {
			t.Fatal(err)
		}
	})
	for _, tc := range []struct {
		name, vm string
		ann      map[string]string
		runs     string
	}{
		{"a pod of another VM", "vm-b", claimRef("vm-a"), "this pod runs VM vm-b"},
		{"a pod of no VM", "", claimRef("vm-a"), "this pod runs no VM"},
		{"another VM through the deprecated annotation", "vm-b", map[string]string{ovnk.AnnotationPrimaryUDNIPAMClaim: "vm-a"}, "this pod runs VM vm-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testobj.MakePod("claims", "intruder").VM(tc.vm).Annotations(tc.ann).Obj()
			expectConflict(t, c.Create(ctx, p), "IPAMClaim claims/vm-a is held by pod virt-launcher-a-1 of VM vm-a (its status.ownerPod)", tc.runs)
			expectAbsent(t, c, p)
		})
	}
	t.Run("a claim made for a VM serves only that VM", func(t *testing.T) {
		owned := &ipamclaimsv1alpha1.IPAMClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "claims", Name: "vm-c",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm-c", UID: "00000000-0000-0000-0000-0000000000c1"}}},
			Spec: ipamclaimsv1alpha1.IPAMClaimSpec{Network: "claims_vms", Interface: "ovn-udn1"}}
		if err := c.Create(ctx, owned); err != nil {
			t.Fatal(err)
		}
		p := testobj.MakePod("claims", "virt-launcher-d").VM("vm-d").Annotations(claimRef("vm-c")).Obj()
		expectConflict(t, c.Create(ctx, p), "IPAMClaim claims/vm-c belongs to VM vm-c; only that VM's pods may use it, and this pod runs VM vm-d.")
		if err := c.Create(ctx, testobj.MakePod("claims", "virt-launcher-c").VM("vm-c").Annotations(claimRef("vm-c")).Obj()); err != nil {
			t.Errorf("the claim's own VM: %v", err)
		}
	})
	t.Run("once its holder is gone the claim is free", func(t *testing.T) {
		if err := c.Delete(ctx, source); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, testobj.MakePod("claims", "virt-launcher-b").VM("vm-b").Annotations(claimRef("vm-a")).Obj(), client.DryRunAll); err != nil {
			t.Error(err)
		}
	})
	t.Run("OKEP-5233 off: the deprecated annotation in use is checked too", func(t *testing.T) {
		setOwnerPod(t, c, "claims", "vm-a", "virt-launcher-a-2")
		cfg := testConfig()
		cfg.PreconfiguredUDNAddresses = false
		d := &pod.Defaulter{Client: shared.mgr.GetCache(), APIReader: shared.mgr.GetAPIReader(), Config: cfg, Decoder: admission.NewDecoder(env.Scheme)}
		handle := func(p *corev1.Pod) admission.Response {
			raw, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			return d.Handle(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "test", Operation: admissionv1.Create,
				Namespace: p.Namespace, Object: runtime.RawExtension{Raw: raw}}})
		}
		legacy := func(vm string) *corev1.Pod {
			return testobj.MakePod("claims", "legacy").VM(vm).Annotations(map[string]string{ovnk.AnnotationPrimaryUDNIPAMClaim: "vm-a"}).Obj()
		}
		resp := handle(legacy("vm-b"))
		if resp.Allowed || resp.Result.Code != 409 || !strings.Contains(resp.Result.Message, "held by pod virt-launcher-a-2 of VM vm-a") {
			t.Errorf("another VM: allowed %v, %+v; want 409 naming the holder", resp.Allowed, resp.Result)
		}
		if resp := handle(legacy("vm-a")); !resp.Allowed || len(resp.Patches) != 0 {
			t.Errorf("the holder's VM: allowed %v, %d patches, %+v; want admitted unchanged", resp.Allowed, len(resp.Patches), resp.Result)
		}
	})
}

// A claim reference that is no IPAMClaim name (such as ns/name) is a 422
// naming the field that holds it, not a server error.
func TestMalformedClaimReference(t *testing.T) {
	env := startEnv(t)
	c := synced(env.Client)
	namespace(t, c, "claim-refs", true, nil)
	if err := c.Create(ctx, testobj.MakeUDN("claim-refs", "vms").Spec(predefinedNetwork()).Obj()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ann  map[string]string
		path string
	}{
		{"ipam-claim-reference", claimRef("claim-refs/my-claim"), "metadata.annotations[v1.multus-cni.io/default-network].ipam-claim-reference"},
		{"deprecated annotation", map[string]string{ovnk.AnnotationPrimaryUDNIPAMClaim: "claim-refs/my-claim"}, "metadata.annotations[k8s.ovn.org/primary-udn-ipamclaim]"},
		{"upper case", claimRef("My-Claim"), "metadata.annotations[v1.multus-cni.io/default-network].ipam-claim-reference"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testobj.MakePod("claim-refs", "bad").Annotations(tc.ann).Obj()
			err := c.Create(ctx, p)
			expectInvalid(t, err, tc.path, "must be the name of an IPAMClaim in the pod's namespace")
			if tc.name != "upper case" && !strings.Contains(err.Error(), "without a namespace") {
				t.Errorf("%v does not say the namespace is not part of it", err)
			}
			expectAbsent(t, c, p)
		})
	}
}
