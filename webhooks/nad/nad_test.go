package nad

import (
	"context"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
	"github.com/udnkit/udnkit/webhooks/internal/webhooktest"
	"github.com/udnkit/udnkit/webhooks/network"
)

// nadOf renders the NAD udnkit writes for a UDN or CUDN (netconf.NewNAD) in
// namespace.
func nadOf(t *testing.T, obj client.Object, spec udnv1.NetworkSpec, namespace string) *nadv1.NetworkAttachmentDefinition {
	t.Helper()
	kind := udnv1.KindUserDefinedNetwork
	if _, ok := obj.(*udnv1.ClusterUserDefinedNetwork); ok {
		kind = udnv1.KindClusterUserDefinedNetwork
	}
	meta := metav1.ObjectMeta{Name: obj.GetName(), Namespace: obj.GetNamespace(), UID: obj.GetUID()}
	ids, err := ovnk.DecodeNetworkIDs(obj.GetAnnotations())
	if err != nil {
		t.Fatal(err)
	}
	nad, err := netconf.NewNAD(netconf.NADSource{Kind: kind, Meta: meta, Spec: spec}, namespace, ovnk.DefaultClusterConfig(), nil, ids)
	if err != nil {
		t.Fatal(err)
	}
	return nad
}

func annotated(nad *nadv1.NetworkAttachmentDefinition, key, value string) *nadv1.NetworkAttachmentDefinition {
	nad.Annotations[key] = value
	return nad
}

func TestNADValidator(t *testing.T) {
	blue := testobj.MakeUDN("bob", "blue").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.100.0.0/16")).Obj()
	blue.UID = types.UID("uid-blue")
	blue.Annotations = map[string]string{ovnk.AnnotationNetworkID: "7"}
	red := testobj.MakeUDN("alice", "red").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.100.0.0/16")).Obj()
	red.UID = types.UID("uid-red")
	shared := testobj.MakeCUDN("shared").Selector(metav1.LabelSelector{}).Spec(blue.Spec.Network()).Obj()
	shared.UID = "uid-shared"
	v := &Validator{Client: webhooktest.IndexedReader(t, network.IndexFields, blue, red, shared)}
	spec := blue.Spec.Network()

	forgedOwner := func(nad *nadv1.NetworkAttachmentDefinition, uid types.UID) *nadv1.NetworkAttachmentDefinition {
		nad.OwnerReferences[0].UID = uid
		return nad
	}
	renamed := func(nad *nadv1.NetworkAttachmentDefinition, network string) *nadv1.NetworkAttachmentDefinition {
		nad.Spec.Config = strings.Replace(nad.Spec.Config, `"name":"alice_red"`, `"name":"`+network+`"`, 1)
		return nad
	}
	for _, tc := range []struct {
		desc string
		old  *nadv1.NetworkAttachmentDefinition
		nad  *nadv1.NetworkAttachmentDefinition
		// want are substrings of the one spec.config error; empty: admitted.
		want []string
	}{
		{desc: "a UDN's own NAD", nad: nadOf(t, blue, spec, "bob")},
		{desc: "a CUDN's own NAD in any namespace", nad: nadOf(t, shared, spec, "alice")},
		{desc: "a user's secondary network of OVN-Kubernetes' type", nad: testobj.MakeNAD("alice", "mine").Config(`{"cniVersion":"1.1.0","name":"tenant-net","netAttachDefName":"alice/mine","topology":"layer2","type":"ovn-k8s-cni-overlay"}`).Obj()},
		{desc: "another CNI may use any name", nad: testobj.MakeNAD("alice", "bridge").Config(`{"cniVersion":"1.0.0","name":"bob_blue","type":"bridge"}`).Obj()},
		{desc: "a user NAD naming another tenant's network", nad: testobj.MakeNAD("alice", "blue").Config(`{"name":"bob_blue","type":"ovn-k8s-cni-overlay"}`).Obj(),
			want: []string{`network name "bob_blue" belongs to UserDefinedNetwork bob/blue`}},
		{desc: "the same, spelled with a JSON escape", nad: testobj.MakeNAD("alice", "blue").Config(`{"name":"bob\u005fblue","type":"ovn-k8s-cni-overlay"}`).Obj(),
			want: []string{`network name "bob_blue" belongs to UserDefinedNetwork bob/blue`}},
		{desc: "a user NAD naming a CUDN's network", nad: testobj.MakeNAD("alice", "shared").Config(`{"name":"cluster_udn_shared","type":"ovn-k8s-cni-overlay"}`).Obj(),
			want: []string{`network name "cluster_udn_shared" belongs to ClusterUserDefinedNetwork shared`}},
		{desc: "a network name claimed before its UDN exists", nad: testobj.MakeNAD("alice", "x").Config(`{"name":"bob_future","type":"ovn-k8s-cni-overlay"}`).Obj(),
			want: []string{`network name "bob_future" is reserved for UserDefinedNetwork bob/future, which does not exist`}},
		{desc: "a copy of a UDN's NAD in another namespace", nad: func() *nadv1.NetworkAttachmentDefinition {
			nad := nadOf(t, blue, spec, "bob")
			nad.Namespace = "alice"
			return nad
		}(), want: []string{`network name "bob_blue" belongs to UserDefinedNetwork bob/blue`}},
		{desc: "a fake owner reference (UID)", nad: forgedOwner(nadOf(t, blue, spec, "bob"), "uid-forged"),
			want: []string{`network name "bob_blue" belongs to UserDefinedNetwork bob/blue; only its own NetworkAttachmentDefinitions`,
				"the controller UserDefinedNetwork bob/blue has UID uid-blue, not uid-forged"}},
		{desc: "a network's own NAD with another network ID", nad: annotated(nadOf(t, blue, spec, "bob"), ovnk.AnnotationNetworkID, "8"),
			want: []string{`network name "bob_blue" belongs to UserDefinedNetwork bob/blue`, `k8s.ovn.org/network-id="8" is not 7, its controller's`}},
		{desc: "a UDN's NAD renamed to name another network", old: nadOf(t, red, spec, "alice"), nad: renamed(nadOf(t, red, spec, "alice"), "bob_blue"),
			want: []string{`network name "bob_blue" belongs to UserDefinedNetwork bob/blue`,
				`spec.config name "bob_blue" is not "alice_red", the network of its controller UserDefinedNetwork alice/red`}},
		{desc: "a UDN's NAD renamed to a network of no UDN", old: nadOf(t, red, spec, "alice"), nad: renamed(nadOf(t, red, spec, "alice"), "free"),
			want: []string{`a UserDefinedNetwork or ClusterUserDefinedNetwork controls this NetworkAttachmentDefinition, which fails udnkit's ownership rule: spec.config name "free" is not "alice_red"`}},
		{desc: "an update that only removes the owner (garbage collector orphaning)", old: nadOf(t, blue, spec, "bob"), nad: func() *nadv1.NetworkAttachmentDefinition {
			nad := nadOf(t, blue, spec, "bob")
			nad.OwnerReferences = nil
			return nad
		}()},
		{desc: "an update adding a fake owner to an unchanged config", old: testobj.MakeNAD("alice", "blue").Config(`{"name":"bob_blue","type":"ovn-k8s-cni-overlay"}`).Obj(),
			nad: forgedOwner(func() *nadv1.NetworkAttachmentDefinition {
				n := nadOf(t, blue, spec, "bob")
				n.Namespace = "alice"
				return n
			}(), "uid-blue"),
			want: []string{`network name "bob_blue" belongs to UserDefinedNetwork bob/blue`}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var err error
			if tc.old == nil {
				_, err = v.ValidateCreate(context.Background(), tc.nad)
			} else {
				_, err = v.ValidateUpdate(context.Background(), tc.old, tc.nad)
			}
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("got %v, want a 403", err)
			}
			status := err.(apierrors.APIStatus).Status()
			if !strings.Contains(status.Message, "spec.config: Forbidden: ") {
				t.Errorf("message %q does not name spec.config", status.Message)
			}
			for _, w := range tc.want {
				if !strings.Contains(status.Message, w) {
					t.Errorf("message %q\nlacks %q", status.Message, w)
				}
			}
		})
	}
	if _, err := v.ValidateDelete(context.Background(), nadOf(t, blue, spec, "bob")); err != nil {
		t.Errorf("delete refused: %v", err)
	}
}
