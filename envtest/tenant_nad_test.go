package envtest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/envtest/manager"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
)

// The refusals of the two NAD guards: the policy udnkit-nad-writers
// (files/policies/nad-writers.yaml, who may write a UDN's NAD) and the NAD
// webhook (webhooks/nad/nad.go, whose network a config names).
const (
	nadPolicyRule  = "Forbidden: only udnkit and OVN-Kubernetes write the NetworkAttachmentDefinitions of UserDefinedNetworks and ClusterUserDefinedNetworks"
	nadWebhookRule = "spec.config: Forbidden: network name "
)

// nadSuite is a namespace admin (alice) who may also write NADs in her
// namespace, as many Multus clusters grant, next to another tenant (bob)
// whose networks udnkit's manager runs: its admission webhooks and its NAD
// reconciler, as the trusted identity managerUser.
type nadSuite struct {
	admin, manager, alice client.Client
	// victims are bob's NADs and networks as the manager wrote them.
	victims []client.Object
}

// TestTenantNADs repeats a hostile tenant's NAD attacks on other tenants'
// networks: each is refused with a message naming the field and the rule,
// and leaves the other tenant's NADs and network IDs as they were; the
// NADs the tenant may write, and the ones udnkit's manager writes, are
// admitted.
func TestTenantNADs(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	env := start(t, envtest.Options{Webhooks: true, AnnotationWriters: &envtest.AnnotationWriters{
		Users: []string{managerUser}, NodeGroup: ovnNodes}})
	ctx := context.Background()
	s := &nadSuite{
		admin:   env.Client,
		manager: impersonate(t, env, managerUser, "system:masters"),
		alice:   impersonate(t, env, "alice", "system:authenticated"),
	}
	startNADManager(t, env)
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "alice"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "bob", Labels: map[string]string{ovnk.LabelPrimaryUserDefinedNetwork: ""}}},
	} {
		must(t, s.admin.Create(ctx, ns))
	}
	// alice: admin of her namespace (with the chart's UDN roles aggregated
	// into admin) and a Role for NADs there.
	must(t, envtest.InstallObjects(ctx, s.admin, envtest.AccessDir()))
	must(t, envtest.AggregateClusterRoles(ctx, s.admin))
	bind(t, s.admin, "alice", "alice", "admin")
	must(t, s.admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "nad-writer", Namespace: "alice"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{nadv1.SchemeGroupVersion.Group}, Resources: []string{"network-attachment-definitions"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}))
	must(t, s.admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-nad-writer", Namespace: "alice"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "nad-writer"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}}}))
	testenv.Eventually(t, "the NAD policy refuses alice a labelled NAD", func() error {
		err := s.alice.Create(ctx, testobj.MakeNAD("alice", "probe").Config(ovnConfig("alice", "probe", "probe")).Managed().Obj(), client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), nadPolicyRule) {
			return fmt.Errorf("not refused by the policy yet: %v", err)
		}
		return nil
	})

	// The normal flow: UDNs and a CUDN, whose NADs the manager writes.
	blue := testobj.MakeUDN("bob", "blue").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.50.0.0/16")).Obj()
	green := testobj.MakeUDN("bob", "green").Spec(testobj.Layer3(udnv1.NetworkRoleSecondary, "10.60.0.0/16")).Obj()
	shared := testobj.MakeCUDN("shared").SelectLabels(map[string]string{corev1.LabelMetadataName: "bob"}).
		Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.1.0.0/24")).Obj()
	red := testobj.MakeUDN("alice", "red").Obj()
	for _, obj := range []client.Object{blue, green, shared} {
		must(t, s.admin.Create(ctx, obj))
	}
	testenv.Eventually(t, "alice creates a UDN", func() error { return s.alice.Create(ctx, red) })
	for _, n := range []struct {
		ns, name string
		owner    client.Object
	}{{"bob", "blue", blue}, {"bob", "green", green}, {"bob", "shared", shared}, {"alice", "red", red}} {
		nad := s.managedNAD(t, n.ns, n.name)
		if ref := metav1.GetControllerOf(nad); ref == nil || ref.UID != n.owner.GetUID() || nad.Labels[ovnk.LabelUserDefinedNetwork] != "" {
			t.Errorf("the manager's NAD %s/%s: owner %v, labels %v", n.ns, n.name, ref, nad.Labels)
		}
		if n.ns == "bob" {
			s.victims = append(s.victims, nad, n.owner)
		}
	}
	before := s.snapshot(t)

	t.Run("forged NADs naming another tenant's network", s.testForgedNetworkNames)
	t.Run("forged network IDs and owners", s.testForgedIDs)
	t.Run("editing her own UDN's NAD", s.testEditOwnNAD)
	t.Run("what a tenant may write", s.testAllowed)

	if after := s.snapshot(t); !equality.Semantic.DeepEqual(before, after) {
		t.Errorf("the other tenant's NADs or network IDs changed:\nbefore %v\nafter  %v", before, after)
	}
}

// testForgedNetworkNames: a NAD in alice's namespace whose config names
// bob's Layer2 or Layer3 network, with udnkit's label (the policy refuses
// the label) or without it (the webhook refuses the name).
func (s *nadSuite) testForgedNetworkNames(t *testing.T) {
	ctx := context.Background()
	for _, victim := range []netConf{
		{network: "bob_blue", topology: "layer2", role: "primary", subnets: "10.99.0.0/16"},
		{network: "bob_green", topology: "layer3", role: "secondary", subnets: "0.0.0.0/0/24"},
		{network: "cluster_udn_shared", topology: "layer2", role: "secondary", subnets: "10.99.0.0/16"},
	} {
		network := victim.network
		// The victim's network on alice's subnet, in alice's namespace.
		forged := func(name string) *testobj.NADWrapper {
			c := victim
			c.namespace, c.name = "alice", name
			return testobj.MakeNAD("alice", name).Config(c.String())
		}
		name := strings.ReplaceAll(network, "_", "-")
		err := s.alice.Create(ctx, forged(name+"-labelled").Managed().Obj())
		refusedNAD(t, "a labelled NAD naming "+network, err,
			"metadata.labels[k8s.ovn.org/user-defined-network]: "+nadPolicyRule, `not user "alice"`)
		s.expectNoNAD(t, "alice", name+"-labelled")

		err = s.alice.Create(ctx, forged(name).Obj())
		owner, _ := ovnk.OwnerOfNetworkName(network)
		refusedNAD(t, "an unlabelled NAD naming "+network, err,
			nadWebhookRule+fmt.Sprintf("%q belongs to %s", network, owner))
		s.expectNoNAD(t, "alice", name)
	}
	// A network name claimed before its UDN exists.
	err := s.alice.Create(ctx, testobj.MakeNAD("alice", "early").Config(ovnConfig("alice", "early", "bob_later")).Obj())
	refusedNAD(t, "a NAD naming a network whose UDN does not exist yet", err,
		nadWebhookRule+`"bob_later" is reserved for UserDefinedNetwork bob/later, which does not exist`)
	s.expectNoNAD(t, "alice", "early")
}

// testForgedIDs: a rogue Primary NAD over the cluster's default and join
// subnets carrying bob's network ID and tunnel keys, and a NAD with a fake
// UserDefinedNetwork owner and a chosen network ID (what a rebuild at
// restart would read).
func (s *nadSuite) testForgedIDs(t *testing.T) {
	ctx := context.Background()
	victim := s.victims[0].(*nadv1.NetworkAttachmentDefinition)
	id, keys := victim.Annotations[ovnk.AnnotationNetworkID], victim.Annotations[ovnk.AnnotationTunnelKeys]
	if id == "" || keys == "" {
		t.Fatalf("the victim's NAD has no IDs: %v", victim.Annotations)
	}
	rogue := testobj.MakeNAD("alice", "rogue").Config(netConf{namespace: "alice", name: "rogue", network: "rogue", topology: "layer3", role: "primary",
		subnets: "10.244.0.0/16/24", joinSubnet: "100.64.0.0/16"}.String()).Obj()
	rogue.Annotations = map[string]string{ovnk.AnnotationNetworkID: id, ovnk.AnnotationTunnelKeys: keys}
	refusedNAD(t, "a Primary NAD with the victim's network ID and tunnel keys", s.alice.Create(ctx, rogue),
		"metadata.annotations[k8s.ovn.org/network-id], metadata.annotations[k8s.ovn.org/tunnel-keys]: "+nadPolicyRule)
	s.expectNoNAD(t, "alice", "rogue")

	owned := func(name string) *nadv1.NetworkAttachmentDefinition {
		nad := testobj.MakeNAD("alice", name).Config(ovnConfig("alice", name, "alice_"+name)).Obj()
		controller := true
		nad.OwnerReferences = []metav1.OwnerReference{{APIVersion: udnv1.GroupVersion.String(), Kind: udnv1.KindUserDefinedNetwork,
			Name: name, UID: types.UID("00000000-0000-0000-0000-000000000001"), Controller: &controller}}
		return nad
	}
	withID := owned("stolen")
	withID.Annotations = map[string]string{ovnk.AnnotationNetworkID: id}
	refusedNAD(t, "a NAD with a fake UDN owner and the victim's network ID", s.alice.Create(ctx, withID),
		"metadata.annotations[k8s.ovn.org/network-id], metadata.ownerReferences: "+nadPolicyRule)
	s.expectNoNAD(t, "alice", "stolen")
	refusedNAD(t, "a NAD with a fake UDN owner", s.alice.Create(ctx, owned("fake")),
		"metadata.ownerReferences: "+nadPolicyRule)
	s.expectNoNAD(t, "alice", "fake")
}

// testEditOwnNAD: alice edits the NAD udnkit wrote for her own UDN.
func (s *nadSuite) testEditOwnNAD(t *testing.T) {
	ctx := context.Background()
	orig := s.managedNAD(t, "alice", "red")
	edited := orig.DeepCopy()
	edited.Spec.Config = strings.Replace(edited.Spec.Config, `"name":"alice_red"`, `"name":"bob_blue"`, 1)
	if edited.Spec.Config == orig.Spec.Config {
		t.Fatalf("the NAD's config does not name alice_red: %s", orig.Spec.Config)
	}
	refusedNAD(t, "alice points her UDN's NAD at bob's network", s.alice.Update(ctx, edited), "spec.config: "+nadPolicyRule)
	unlabelled := orig.DeepCopy()
	delete(unlabelled.Labels, ovnk.LabelUserDefinedNetwork)
	refusedNAD(t, "alice removes udnkit's label", s.alice.Update(ctx, unlabelled),
		"metadata.labels[k8s.ovn.org/user-defined-network]: "+nadPolicyRule)
	renumbered := annotate(orig.DeepCopy(), ovnk.AnnotationNetworkID, s.victims[0].GetAnnotations()[ovnk.AnnotationNetworkID])
	refusedNAD(t, "alice gives her NAD bob's network ID", s.alice.Update(ctx, renumbered),
		"metadata.annotations[k8s.ovn.org/network-id]: "+nadPolicyRule)
	if now := s.managedNAD(t, "alice", "red"); now.ResourceVersion != orig.ResourceVersion {
		t.Errorf("alice's refused edits changed her NAD: %v", now)
	}
}

// testAllowed: what stays open to a tenant with NAD rights, and the
// manager's own writes.
func (s *nadSuite) testAllowed(t *testing.T) {
	ctx := context.Background()
	// Her own secondary networks of OVN-Kubernetes' type, named like no UDN,
	// and NADs of other CNIs whatever their names.
	own := testobj.MakeNAD("alice", "tenant-l2").Config(netConf{namespace: "alice", name: "tenant-l2", network: "tenant-l2", topology: "layer2", role: "secondary",
		subnets: "10.70.0.0/16"}.String()).Obj()
	if err := s.alice.Create(ctx, own); err != nil {
		t.Errorf("alice cannot write her own secondary network: %v", err)
	} else {
		own.Spec.Config = strings.Replace(own.Spec.Config, "10.70.0.0/16", "10.71.0.0/16", 1)
		if err := s.alice.Update(ctx, own); err != nil {
			t.Errorf("alice cannot change her own secondary network: %v", err)
		}
	}
	if err := s.alice.Create(ctx, testobj.MakeNAD("alice", "macvlan").Config(`{"cniVersion":"1.0.0","name":"bob_blue","type":"macvlan","master":"eth1"}`).Obj()); err != nil {
		t.Errorf("alice cannot write a macvlan NAD: %v", err)
	}
	// Her UDN's NAD: other labels are hers; a deleted one comes back.
	red := s.managedNAD(t, "alice", "red")
	red.Labels["team"] = "red"
	if err := s.alice.Update(ctx, red); err != nil {
		t.Errorf("alice cannot label her UDN's NAD: %v", err)
	}
	if err := s.alice.Delete(ctx, red); err != nil {
		t.Errorf("alice cannot delete her UDN's NAD: %v", err)
	}
	testenv.Eventually(t, "the manager writes alice's deleted NAD again", func() error {
		nad := &nadv1.NetworkAttachmentDefinition{}
		if err := s.admin.Get(ctx, client.ObjectKey{Namespace: "alice", Name: "red"}, nad); err != nil {
			return err
		}
		if nad.UID == red.UID || nad.DeletionTimestamp != nil {
			return fmt.Errorf("still the deleted NAD")
		}
		return nil
	})
	// The manager writes a new UDN's NAD with its IDs.
	must(t, s.alice.Create(ctx, testobj.MakeUDN("alice", "late").Obj()))
	if nad := s.managedNAD(t, "alice", "late"); nad.Annotations[ovnk.AnnotationNetworkID] == "" {
		t.Errorf("the manager's new NAD has no network ID: %v", nad.Annotations)
	}
}

// managedNAD waits for the manager's NAD of a UDN or CUDN, with its network
// ID.
func (s *nadSuite) managedNAD(t *testing.T, namespace, name string) *nadv1.NetworkAttachmentDefinition {
	t.Helper()
	nad := &nadv1.NetworkAttachmentDefinition{}
	testenv.Eventually(t, "the manager writes NAD "+namespace+"/"+name, func() error {
		if err := s.admin.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, nad); err != nil {
			return err
		}
		if nad.Annotations[ovnk.AnnotationNetworkID] == "" || nad.DeletionTimestamp != nil {
			return fmt.Errorf("no network ID yet: %v", nad.Annotations)
		}
		return nil
	})
	return nad
}

func (s *nadSuite) expectNoNAD(t *testing.T, namespace, name string) {
	t.Helper()
	err := s.admin.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &nadv1.NetworkAttachmentDefinition{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("NAD %s/%s exists after a refused create: %v", namespace, name, err)
	}
}

// snapshot is what another tenant's attack must not change: the victims'
// NADs whole, and their networks' IDs.
func (s *nadSuite) snapshot(t *testing.T) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, v := range s.victims {
		key := client.ObjectKeyFromObject(v).String()
		switch v.(type) {
		case *nadv1.NetworkAttachmentDefinition:
			nad := &nadv1.NetworkAttachmentDefinition{}
			must(t, s.admin.Get(context.Background(), client.ObjectKeyFromObject(v), nad))
			out["NAD "+key] = []any{nad.ResourceVersion, nad.Labels, nad.Annotations, nad.OwnerReferences, nad.Spec.Config}
		default:
			obj := v.DeepCopyObject().(client.Object)
			must(t, s.admin.Get(context.Background(), client.ObjectKeyFromObject(v), obj))
			a := obj.GetAnnotations()
			out[fmt.Sprintf("%T %s", v, key)] = []string{a[ovnk.AnnotationNetworkID], a[ovnk.AnnotationTunnelKeys]}
		}
	}
	return out
}

// startNADManager runs udnkit's manager in-process as managerUser, with the
// admission webhooks (served where the harness's webhook configurations
// call) and the NAD reconciler.
func startNADManager(t *testing.T, env *envtest.Environment) {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: managerUser, Groups: []string{"system:masters"}}
	manager.Start(context.Background(), t, cfg, []string{"--controllers=admission,nad"}, manager.ServeWebhooks(env))
	must(t, manager.WaitForWebhooks(context.Background(), env))
}

// refusedNAD fails unless err is a 403 whose message holds every want.
func refusedNAD(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: accepted", what)
		return
	}
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: %v\nwant a 403", what, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %v\nwant a message with %q", what, err, w)
		}
	}
}

// netConf is an OVN-Kubernetes NetConf of NAD namespace/name for network.
type netConf struct{ namespace, name, network, topology, role, subnets, joinSubnet string }

func (c netConf) String() string {
	s := `{"cniVersion":"1.1.0"`
	if c.joinSubnet != "" {
		s += `,"joinSubnet":"` + c.joinSubnet + `"`
	}
	s += `,"name":"` + c.network + `","netAttachDefName":"` + c.namespace + "/" + c.name + `","role":"` + c.role + `"`
	if c.subnets != "" {
		s += `,"subnets":"` + c.subnets + `"`
	}
	return s + `,"topology":"` + c.topology + `","type":"ovn-k8s-cni-overlay"}`
}

// ovnConfig is a Secondary Layer2 NetConf without subnets.
func ovnConfig(namespace, name, network string) string {
	return netConf{namespace: namespace, name: name, network: network, topology: "layer2", role: "secondary"}.String()
}
