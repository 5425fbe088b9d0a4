package envtest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
)

// The identities of the tenant suite. The manager is trusted by the
// annotation-writer policies (as the chart trusts its ServiceAccount); the
// harness's admin (system:masters) is not, like any cluster admin the chart's
// values do not list.
const (
	managerUser = "system:serviceaccount:udnkit-system:udnkit"
	ovnNodes    = "system:ovn-nodes"
	refusal     = "can only be added, changed or removed by udnkit or OVN-Kubernetes"
)

type tenantSuite struct {
	env *envtest.Environment
	// admin is system:masters but not a trusted annotation writer; adminUser
	// is its name.
	admin     client.Client
	adminUser string
	// manager is the trusted udnkit ServiceAccount (also system:masters, so
	// RBAC never decides its requests: the policies do).
	manager client.Client
	// alice is the admin of namespace alice, through the aggregated admin role.
	alice client.Client
	// bob may view namespace alice, carol edit it.
	bob, carol client.Client
	// nodeA is OVN-Kubernetes' per-node identity of node-a (ovnkube-identity).
	nodeA client.Client
}

// TestTenant: a namespace admin manages her UDNs through the chart's
// aggregated ClusterRoles and nothing else, and nobody but udnkit and
// OVN-Kubernetes writes the OVN annotations udnkit trusts.
func TestTenant(t *testing.T) {
	env := start(t, envtest.Options{Policies: true, AnnotationWriters: &envtest.AnnotationWriters{
		Users: []string{managerUser}, NodeGroup: ovnNodes}})
	ctx := context.Background()
	s := &tenantSuite{
		env:     env,
		admin:   env.Client,
		manager: impersonate(t, env, managerUser, "system:masters"),
		alice:   impersonate(t, env, "alice", "system:authenticated"),
		bob:     impersonate(t, env, "bob", "system:authenticated"),
		carol:   impersonate(t, env, "carol", "system:authenticated"),
		nodeA:   impersonate(t, env, "system:ovn-node:node-a", ovnNodes, "system:masters"),
	}
	admin, err := env.Whoami(ctx, env.Config)
	must(t, err)
	s.adminUser = admin
	for _, name := range []string{"alice", "bob"} {
		must(t, s.admin.Create(ctx, testobj.MakeNamespace(name).Obj()))
	}
	for _, n := range []string{"node-a", "node-b"} {
		must(t, s.manager.Create(ctx, testobj.MakeNode(n).Obj()))
	}
	s.waitForPolicies(t)

	t.Run("RBAC", s.testRBAC)
	t.Run("pod-networks", s.testPodNetworks)
	t.Run("UDN network-id and tunnel-keys", s.testNetworkAnnotations)
	t.Run("node annotations", s.testNodeAnnotations)
}

// testRBAC binds alice to admin, carol to edit and bob to view in namespace
// alice. envtest runs no kube-controller-manager, so AggregateClusterRoles
// fills admin, edit and view from their aggregate-to-* labels as its
// clusterrole-aggregation controller would: they get UDNs only if the chart's
// roles carry the right labels and rules. (Kubernetes' admin includes edit,
// which includes view, so carol's case is what checks udnkit-edit's label.)
func (s *tenantSuite) testRBAC(t *testing.T) {
	ctx := context.Background()
	bind(t, s.admin, "alice", "alice", "admin")
	bind(t, s.admin, "alice", "bob", "view")
	bind(t, s.admin, "alice", "carol", "edit")
	must(t, envtest.AggregateClusterRoles(ctx, s.admin))
	// The binding is live once alice may create a pod (RBAC caches follow a watch).
	testenv.Eventually(t, "alice creates a pod as namespace admin", func() error {
		return s.alice.Create(ctx, testobj.MakePod("alice", "probe").Obj(), client.DryRunAll)
	})
	// Without the chart's roles, Kubernetes' admin grants no UDNs.
	if err := s.alice.Create(ctx, testobj.MakeUDN("alice", "early").Obj(), client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Fatalf("alice created a UDN before the chart's roles were installed: %v", err)
	}

	must(t, envtest.InstallObjects(ctx, s.admin, envtest.AccessDir()))
	must(t, envtest.AggregateClusterRoles(ctx, s.admin))
	testenv.Eventually(t, "alice creates a UDN in her namespace", func() error {
		return s.alice.Create(ctx, testobj.MakeUDN("alice", "blue").Obj())
	})
	blue := &udnv1.UserDefinedNetwork{}
	must(t, s.alice.Get(ctx, client.ObjectKey{Namespace: "alice", Name: "blue"}, blue))
	blue.Labels = map[string]string{"team": "blue"}
	if err := s.alice.Update(ctx, blue); err != nil {
		t.Errorf("alice cannot update her UDN: %v", err)
	}
	if err := s.alice.Delete(ctx, blue); err != nil {
		t.Errorf("alice cannot delete her UDN: %v", err)
	}
	must(t, s.alice.Create(ctx, testobj.MakeUDN("alice", "green").Obj()))
	testenv.Eventually(t, "carol creates a UDN as namespace editor", func() error {
		return s.carol.Create(ctx, testobj.MakeUDN("alice", "carols").Obj())
	})
	if err := s.carol.Delete(ctx, testobj.MakeUDN("alice", "carols").Obj()); err != nil {
		t.Errorf("an editor cannot delete a UDN: %v", err)
	}
	if err := s.carol.Create(ctx, testobj.MakeCUDN("carols").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.1.0.0/24")).Obj(), client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Errorf("an editor creates a CUDN: %v", err)
	}

	// Only her namespace, and no cluster-scoped networks.
	must(t, s.admin.Create(ctx, testobj.MakeUDN("bob", "other").Obj()))
	if err := s.alice.Get(ctx, client.ObjectKey{Namespace: "bob", Name: "other"}, &udnv1.UserDefinedNetwork{}); !apierrors.IsForbidden(err) {
		t.Errorf("alice reads a UDN in namespace bob: %v", err)
	}
	if err := s.alice.List(ctx, &udnv1.UserDefinedNetworkList{}, client.InNamespace("bob")); !apierrors.IsForbidden(err) {
		t.Errorf("alice lists UDNs in namespace bob: %v", err)
	}
	if err := s.alice.Create(ctx, testobj.MakeUDN("bob", "intruder").Obj()); !apierrors.IsForbidden(err) {
		t.Errorf("alice creates a UDN in namespace bob: %v", err)
	}
	if err := s.alice.List(ctx, &udnv1.UserDefinedNetworkList{}); !apierrors.IsForbidden(err) {
		t.Errorf("alice lists UDNs cluster-wide: %v", err)
	}
	if err := s.alice.List(ctx, &udnv1.ClusterUserDefinedNetworkList{}); !apierrors.IsForbidden(err) {
		t.Errorf("alice lists CUDNs: %v", err)
	}
	if err := s.alice.Create(ctx, testobj.MakeCUDN("alices-cudn").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.1.0.0/24")).Obj()); !apierrors.IsForbidden(err) {
		t.Errorf("alice creates a CUDN: %v", err)
	}

	// bob views: reads UDNs, changes nothing.
	testenv.Eventually(t, "bob lists UDNs in namespace alice", func() error {
		return s.bob.List(ctx, &udnv1.UserDefinedNetworkList{}, client.InNamespace("alice"))
	})
	green := &udnv1.UserDefinedNetwork{}
	if err := s.bob.Get(ctx, client.ObjectKey{Namespace: "alice", Name: "green"}, green); err != nil {
		t.Errorf("bob cannot read a UDN he may view: %v", err)
	}
	if err := s.bob.Create(ctx, testobj.MakeUDN("alice", "bobs").Obj(), client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Errorf("a viewer creates a UDN: %v", err)
	}
	green.Labels = map[string]string{"by": "bob"}
	if err := s.bob.Update(ctx, green); !apierrors.IsForbidden(err) {
		t.Errorf("a viewer updates a UDN: %v", err)
	}
	if err := s.bob.Delete(ctx, green); !apierrors.IsForbidden(err) {
		t.Errorf("a viewer deletes a UDN: %v", err)
	}
	if err := s.bob.List(ctx, &udnv1.ClusterUserDefinedNetworkList{}); !apierrors.IsForbidden(err) {
		t.Errorf("a viewer lists CUDNs: %v", err)
	}
}

func (s *tenantSuite) testPodNetworks(t *testing.T) {
	ctx := context.Background()
	key := ovnk.AnnotationPodNetworks
	forged := `{"alice/blue":{"ip_addresses":["10.0.0.9/24"],"mac_address":"0a:58:0a:00:00:09","role":"primary"}}`
	genuine := `{"alice/blue":{"ip_addresses":["10.0.0.5/24"],"mac_address":"0a:58:0a:00:00:05","role":"primary"}}`
	testenv.Eventually(t, "alice creates pods", func() error { return s.alice.Create(ctx, testobj.MakePod("alice", "ready").Obj(), client.DryRunAll) })

	// Create: forged by alice is refused; by the manager accepted.
	refused(t, "alice creates a pod with pod-networks", s.alice.Create(ctx, annotate(testobj.MakePod("alice", "forged").Obj(), key, forged)), key, "alice")
	must(t, s.alice.Create(ctx, testobj.MakePod("alice", "web").Obj()))
	if err := s.manager.Create(ctx, annotate(testobj.MakePod("alice", "by-manager").Obj(), key, genuine)); err != nil {
		t.Errorf("the manager cannot create a pod with pod-networks: %v", err)
	}

	// Update: the manager writes it, alice can neither change nor remove it,
	// but may change other annotations while it stays.
	web := &corev1.Pod{}
	must(t, s.manager.Get(ctx, client.ObjectKey{Namespace: "alice", Name: "web"}, web))
	refused(t, "alice adds pod-networks", s.alice.Update(ctx, annotate(web.DeepCopy(), key, forged)), key, "alice")
	annotate(web, key, genuine)
	if err := s.manager.Update(ctx, web); err != nil {
		t.Fatalf("the manager cannot write pod-networks: %v", err)
	}
	refused(t, "alice changes pod-networks", s.alice.Update(ctx, annotate(web.DeepCopy(), key, forged)), key, "alice")
	removed := web.DeepCopy()
	delete(removed.Annotations, key)
	refused(t, "alice removes pod-networks", s.alice.Update(ctx, removed), key, "alice")
	if err := s.alice.Update(ctx, annotate(web.DeepCopy(), "example.com/owner", "alice")); err != nil {
		t.Errorf("alice cannot change another annotation of her pod: %v", err)
	}

	// Cluster admins are not trusted, through the status and binding
	// subresources either.
	must(t, s.admin.Get(ctx, client.ObjectKeyFromObject(web), web))
	refused(t, "an admin changes pod-networks through pods/status", s.admin.Status().Update(ctx, annotate(web.DeepCopy(), key, forged)), key, s.adminUser)
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "alice", Annotations: map[string]string{key: forged}},
		Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}
	refused(t, "an admin binds a pod with pod-networks", s.admin.SubResource("binding").Create(ctx, web.DeepCopy(), binding), key, s.adminUser)

	// OVN-Kubernetes' node identity writes the pods of its own node only.
	must(t, s.admin.Create(ctx, testobj.MakePod("alice", "on-a").Node("node-a").Obj()))
	must(t, s.admin.Create(ctx, testobj.MakePod("alice", "on-b").Node("node-b").Obj()))
	onA, onB := &corev1.Pod{}, &corev1.Pod{}
	must(t, s.nodeA.Get(ctx, client.ObjectKey{Namespace: "alice", Name: "on-a"}, onA))
	must(t, s.nodeA.Get(ctx, client.ObjectKey{Namespace: "alice", Name: "on-b"}, onB))
	if err := s.nodeA.Status().Update(ctx, annotate(onA, key, genuine)); err != nil {
		t.Errorf("node-a's identity cannot write pod-networks of a pod on node-a: %v", err)
	} else if got := &(corev1.Pod{}); s.admin.Get(ctx, client.ObjectKeyFromObject(onA), got) != nil || got.Annotations[key] != genuine {
		t.Errorf("pod-networks written through pods/status did not persist: %v", got.Annotations)
	}
	refused(t, "node-a's identity writes pod-networks of a pod on node-b", s.nodeA.Status().Update(ctx, annotate(onB, key, genuine)), key, "system:ovn-node:node-a")
}

func (s *tenantSuite) testNetworkAnnotations(t *testing.T) {
	ctx := context.Background()
	id, keys := ovnk.AnnotationNetworkID, ovnk.AnnotationTunnelKeys
	refused(t, "alice creates a UDN with network-id", s.alice.Create(ctx, annotate(testobj.MakeUDN("alice", "forged-id").Obj(), id, "7")), id, "alice")
	refused(t, "alice creates a UDN with tunnel-keys", s.alice.Create(ctx, annotate(testobj.MakeUDN("alice", "forged-keys").Obj(), keys, "[16711681]")), keys, "alice")
	err := s.alice.Create(ctx, annotate(annotate(testobj.MakeUDN("alice", "forged-both").Obj(), id, "7"), keys, "[16711681]"))
	refused(t, "alice creates a UDN with both", err, "The "+id+", "+keys+" annotations", "alice")
	// The commit mark publishes a network's IDs to its NADs when managers
	// run without leader election: a tenant setting it would skip the check.
	mark := ovnk.AnnotationNetworkIDsCommitted
	refused(t, "alice creates a UDN with the commit mark", s.alice.Create(ctx, annotate(testobj.MakeUDN("alice", "forged-mark").Obj(), mark, "7/16711681")), mark, "alice")

	red := testobj.MakeUDN("alice", "red").Obj()
	testenv.Eventually(t, "alice creates a UDN", func() error { return s.alice.Create(ctx, red) })
	must(t, s.manager.Get(ctx, client.ObjectKeyFromObject(red), red))
	annotate(annotate(red, id, "3"), keys, "[16711683]")
	if err := s.manager.Update(ctx, red); err != nil {
		t.Fatalf("the manager cannot write network-id and tunnel-keys: %v", err)
	}
	refused(t, "alice changes tunnel-keys", s.alice.Update(ctx, annotate(red.DeepCopy(), keys, "[16711690]")), keys, "alice")
	noID := red.DeepCopy()
	delete(noID.Annotations, id)
	refused(t, "alice removes network-id", s.alice.Update(ctx, noID), id, "alice")
	refused(t, "alice adds the commit mark", s.alice.Update(ctx, annotate(red.DeepCopy(), mark, "3/16711683")), mark, "alice")
	labelled := red.DeepCopy()
	labelled.Labels = map[string]string{"tier": "gold"}
	if err := s.alice.Update(ctx, labelled); err != nil {
		t.Errorf("alice cannot label her annotated UDN: %v", err)
	}

	refused(t, "an admin creates a CUDN with tunnel-keys", s.admin.Create(ctx, annotate(testobj.MakeCUDN("forged").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.1.0.0/24")).Obj(), keys, "[16711681]")), keys, s.adminUser)
	c := annotate(testobj.MakeCUDN("trusted").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.1.0.0/24")).Obj(), id, "4")
	if err := s.manager.Create(ctx, c); err != nil {
		t.Errorf("the manager cannot create a CUDN with network-id: %v", err)
	}
	refused(t, "an admin changes a CUDN's network-id", s.admin.Update(ctx, annotate(c.DeepCopy(), id, "5")), id, s.adminUser)
}

func (s *tenantSuite) testNodeAnnotations(t *testing.T) {
	ctx := context.Background()
	node := func(c client.Client, name string) *corev1.Node {
		n := &corev1.Node{}
		must(t, c.Get(ctx, client.ObjectKey{Name: name}, n))
		return n
	}
	for _, key := range []string{ovnk.AnnotationNodeID, ovnk.AnnotationNodeSubnets,
		ovnk.AnnotationNodeTransitSwitchPortTunnelIDs, ovnk.AnnotationLayer2TopologyVersion} {
		refused(t, "an admin creates a node with "+key, s.admin.Create(ctx, annotate(testobj.MakeNode("forged").Obj(), key, "1")), key, s.adminUser)
		refused(t, "an admin adds "+key, s.admin.Update(ctx, annotate(node(s.admin, "node-b"), key, "1")), key, s.adminUser)
	}
	b := annotate(node(s.manager, "node-b"), ovnk.AnnotationNodeID, "2")
	annotate(b, ovnk.AnnotationNodeSubnets, `{"default":["10.244.1.0/24"]}`)
	if err := s.manager.Update(ctx, b); err != nil {
		t.Fatalf("the manager cannot write node-id and node-subnets: %v", err)
	}
	refused(t, "an admin changes node-subnets through nodes/status",
		s.admin.Status().Update(ctx, annotate(node(s.admin, "node-b"), ovnk.AnnotationNodeSubnets, `{"default":["10.244.9.0/24"]}`)),
		ovnk.AnnotationNodeSubnets, s.adminUser)
	noID := node(s.admin, "node-b")
	delete(noID.Annotations, ovnk.AnnotationNodeID)
	refused(t, "an admin removes node-id", s.admin.Update(ctx, noID), ovnk.AnnotationNodeID, s.adminUser)
	if err := s.admin.Update(ctx, annotate(node(s.admin, "node-b"), ovnk.AnnotationNodeEncapIPs, `["172.18.0.7"]`)); err != nil {
		t.Errorf("an admin cannot set node-encap-ips, which udnkit does not protect: %v", err)
	}

	// OVN-Kubernetes' node identity: its own layer2-topology-version only.
	if err := s.nodeA.Status().Update(ctx, annotate(node(s.nodeA, "node-a"), ovnk.AnnotationLayer2TopologyVersion, "2.0")); err != nil {
		t.Errorf("node-a's identity cannot set its layer2-topology-version: %v", err)
	}
	refused(t, "node-a's identity sets node-b's layer2-topology-version",
		s.nodeA.Status().Update(ctx, annotate(node(s.nodeA, "node-b"), ovnk.AnnotationLayer2TopologyVersion, "2.0")),
		ovnk.AnnotationLayer2TopologyVersion, "system:ovn-node:node-a")
	refused(t, "node-a's identity sets its own node-id",
		s.nodeA.Status().Update(ctx, annotate(node(s.nodeA, "node-a"), ovnk.AnnotationNodeID, "9")),
		ovnk.AnnotationNodeID, "system:ovn-node:node-a")
}

// waitForPolicies polls, with dry-run requests by an untrusted admin, until
// each of the three annotation-writer policies refuses (a policy is enforced
// 0.1-1 s after it is created), so every later verdict is the policy's.
func (s *tenantSuite) waitForPolicies(t *testing.T) {
	ctx := context.Background()
	probes := map[string]func() error{
		"pods": func() error {
			return s.admin.Create(ctx, annotate(testobj.MakePod("alice", "probe").Obj(), ovnk.AnnotationPodNetworks, "{}"), client.DryRunAll)
		},
		"nodes": func() error {
			return s.admin.Create(ctx, annotate(testobj.MakeNode("probe").Obj(), ovnk.AnnotationNodeID, "1"), client.DryRunAll)
		},
		"networks": func() error {
			return s.admin.Create(ctx, annotate(testobj.MakeUDN("alice", "probe").Obj(), ovnk.AnnotationNetworkID, "1"), client.DryRunAll)
		},
	}
	for name, probe := range probes {
		testenv.Eventually(t, "the "+name+" policy refuses", func() error {
			if err := probe(); err == nil || !strings.Contains(err.Error(), refusal) {
				return fmt.Errorf("not refused yet: %v", err)
			}
			return nil
		})
	}
}

// refused fails unless err is a 403 whose message names the annotation (or
// the given text) and the user, as the policy's messageExpression does.
func refused(t *testing.T, what string, err error, annotation, user string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: accepted", what)
		return
	}
	msg := err.Error()
	if !apierrors.IsForbidden(err) || !strings.Contains(msg, annotation) || !strings.Contains(msg, refusal) || !strings.Contains(msg, `not by user "`+user+`"`) {
		t.Errorf("%s: %v\nwant a 403 naming %s and user %q", what, err, annotation, user)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func impersonate(t *testing.T, env *envtest.Environment, user string, groups ...string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func bind(t *testing.T, c client.Client, namespace, user, clusterRole string) {
	t.Helper()
	must(t, c.Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-" + clusterRole, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}))
}

func annotate[T client.Object](obj T, key, value string) T {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	obj.SetAnnotations(a)
	return obj
}
