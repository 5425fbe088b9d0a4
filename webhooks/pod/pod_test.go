package pod

import (
	"context"
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
)

// With preconfigured-udn-addresses-enable off the pod validator admits every
// pod unchanged, and the defaulter every pod without the deprecated claim
// annotation (which the address reconciler still reads on Persistent
// networks, so the defaulter checks it), without reading anything from the
// cluster (no client here: a read would panic on the nil client).
func TestPodWebhooksOffAdmitEverything(t *testing.T) {
	cfg := ovnk.DefaultClusterConfig()
	if cfg.PreconfiguredUDNAddresses {
		t.Fatal("the feature is on by default")
	}
	bad := testobj.MakePod("ns", "p").Annotations(map[string]string{
		ovnk.AnnotationDefaultNetwork: `{"name":`, ovnk.AnnotationPrimaryUDNIPAMClaim: "claim"}).Obj()
	v := &Validator{Config: cfg}
	if w, err := v.ValidateCreate(context.Background(), bad); err != nil || w != nil {
		t.Errorf("create: %v %v", w, err)
	}
	changed := bad.DeepCopy()
	changed.Annotations[ovnk.AnnotationDefaultNetwork] = "other"
	if w, err := v.ValidateUpdate(context.Background(), bad, changed); err != nil || w != nil {
		t.Errorf("update: %v %v", w, err)
	}
	delete(bad.Annotations, ovnk.AnnotationPrimaryUDNIPAMClaim)
	raw, err := json.Marshal(bad)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	d := &Defaulter{Config: cfg, Decoder: admission.NewDecoder(scheme)}
	resp := d.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Namespace: "ns", Object: runtime.RawExtension{Raw: raw}}})
	if !resp.Allowed || len(resp.Patches) != 0 || len(resp.Warnings) != 0 {
		t.Errorf("defaulter: %+v", resp)
	}
}

// The pod validator keeps only v1.multus-cni.io/default-network fixed (and
// the chart's pod-default-network-immutable policy the same); a running
// pod's k8s.v1.cni.cncf.io/networks may change ("back,back" to "back"), so
// the dataplane, not admission, must leave an element since removed
// unwired (podannotation.AttachedKeys).
func TestPodValidatorLetsTheNetworksSelectionChange(t *testing.T) {
	cfg := ovnk.DefaultClusterConfig()
	cfg.PreconfiguredUDNAddresses = true
	v := &Validator{Config: cfg}
	old := testobj.MakePod("ns", "p").Annotations(map[string]string{
		ovnk.AnnotationDefaultNetwork: "ns/blue", ovnk.AnnotationNetworks: "back,back"}).Obj()
	cur := old.DeepCopy()
	cur.Annotations[ovnk.AnnotationNetworks] = "back"
	if w, err := v.ValidateUpdate(context.Background(), old, cur); err != nil || w != nil {
		t.Errorf("a networks change: %v %v, want admitted", w, err)
	}
	cur.Annotations[ovnk.AnnotationDefaultNetwork] = "ns/green"
	if _, err := v.ValidateUpdate(context.Background(), old, cur); err == nil {
		t.Error("a default-network change admitted, want refused")
	}
}
