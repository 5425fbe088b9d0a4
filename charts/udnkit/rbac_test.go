package udnkitchart_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/cmd/udnkit/app"
	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/envtest/manager"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testmgr"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/internal/testobj/ovnkrows"
	"github.com/udnkit/udnkit/ovnk"
)

// The manager runs as the chart's ServiceAccount with exactly the chart's
// RBAC (its rendered ClusterRoles, Roles and bindings, nothing else), every
// component on, against real OVN databases: the webhooks decide, the NAD,
// node and address reconcilers write, the dataplane programs OVN, the leader
// election Lease is taken. The same run with one rule pruned from the
// rendered manager ClusterRole fails, so the check can catch a missing rule.
func TestManagerRunsUnderTheChartsRBAC(t *testing.T) {
	objs, err := render(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := runUnderChartRBAC(t, objs, "full", nil, 60*time.Second); err != nil {
		t.Fatalf("with the chart's RBAC: %v", err)
	}
	// Without Nodes in the manager's ClusterRole the node reconciler cannot
	// write node IDs.
	pruned := func(rules []any) []any {
		var out []any
		for _, r := range rules {
			m := r.(map[string]any)
			var keep []any
			for _, res := range toStrings(m["resources"]) {
				if res != "nodes" {
					keep = append(keep, res)
				}
			}
			if len(keep) > 0 {
				m["resources"] = keep
				out = append(out, m)
			}
		}
		return out
	}
	// (Without it the manager cannot list Nodes either: its caches never
	// sync and nothing is written at all.)
	if err := runUnderChartRBAC(t, objs, "without the nodes rule", pruned, 15*time.Second); err == nil {
		t.Fatal("with Nodes pruned from the manager's ClusterRole the manager still did everything")
	} else {
		t.Logf("without Nodes in the ClusterRole: %v", err)
	}
}

// runUnderChartRBAC installs the rendered RBAC (mutating the manager
// ClusterRole's rules when prune is set), runs the manager as the chart's
// ServiceAccount, and returns the first thing a user would miss.
func runUnderChartRBAC(t *testing.T, objs []*unstructured.Unstructured, what string, prune func([]any) []any, wait time.Duration) error {
	testenv.Real(t, "kube-apiserver and ovsdb-server")
	t.Helper()
	sa := ""
	for _, o := range objs {
		if o.GetKind() == "ServiceAccount" {
			sa = o.GetName()
		}
	}
	if sa == "" {
		t.Fatal("the chart renders no ServiceAccount")
	}
	user := "system:serviceaccount:" + releaseNamespace + ":" + sa
	// The policies trust the manager's ServiceAccount, as the chart's do.
	env, err := envtest.Start(envtest.Options{Webhooks: true, AnnotationWriters: &envtest.AnnotationWriters{Users: []string{user}}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	ctx := context.Background()
	c := env.Client
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}))
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue
		}
		u := o.DeepCopy()
		if u.GetKind() == "ClusterRole" && strings.HasSuffix(u.GetName(), "udnkit-manager") && prune != nil {
			rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
			must(unstructured.SetNestedSlice(u.Object, prune(rules), "rules"))
		}
		if u.GetNamespace() == "" && (u.GetKind() == "Role" || u.GetKind() == "RoleBinding" || u.GetKind() == "ServiceAccount") {
			u.SetNamespace(releaseNamespace)
		}
		must(c.Create(ctx, u))
	}

	dir := t.TempDir()
	dbs, err := ovsdbserver.StartPair(ctx, dir)
	must(err)
	defer dbs.Stop()

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + releaseNamespace, "system:authenticated"}}
	base := managerArgs(t, objs)
	args := append(base[:len(base):len(base)],
		"--ovn-nb-address="+dbs.NB.Address(), "--ovn-sb-address="+dbs.SB.Address(),
		"--preconfigured-udn-addresses-enable", "--metrics-bind-address=0", "--health-probe-bind-address=0")
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mgr, err := manager.New(mctx, cfg, args, func(o *app.Options) {
		o.LeaderElectionNamespace = releaseNamespace
		manager.ServeWebhooks(env)(o)
	})
	must(err)
	run := testmgr.Run(mctx, mgr)
	defer func() { _ = run.Stop() }()
	must(manager.WaitForWebhooks(ctx, env))

	// Admission: the webhooks read namespaces and networks from their cache.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-rbac", Labels: map[string]string{ovnk.LabelPrimaryUserDefinedNetwork: ""}}}
	must(c.Create(ctx, ns))
	must(c.Create(ctx, testobj.MakeNode("node-rbac").Obj()))
	l2 := func(name string, subnet udnv1.CIDR, role udnv1.NetworkRole) *udnv1.UserDefinedNetwork {
		return testobj.MakeUDN(ns.Name, name).Spec(testobj.Layer2(role, subnet)).Obj()
	}
	if err := c.Create(ctx, l2("overlapping", "10.244.8.0/24", udnv1.NetworkRoleSecondary)); !apierrors.IsInvalid(err) {
		return fmt.Errorf("admission: an overlapping UDN is not refused: %v", err)
	}
	must(c.Create(ctx, l2("blue", "10.100.0.0/24", udnv1.NetworkRolePrimary)))
	pod := testobj.MakePod(ns.Name, "p").Node("node-rbac").Obj()
	// The default EndpointSlice Kubernetes would write for a Service of
	// the pod (envtest runs no EndpointSlice controller); the pod is read
	// by name, as the mirror controller reads it.
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "svc-rbac", Labels: map[string]string{
			discoveryv1.LabelServiceName: "svc", discoveryv1.LabelManagedBy: ovnk.EndpointSliceDefaultControllerName}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.5"},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns.Name, Name: pod.Name}}},
	}

	checks := []struct {
		what string
		ok   func() bool
	}{
		{"nad: the UDN's NetworkAttachmentDefinition", func() bool {
			return c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "blue"}, &nadv1.NetworkAttachmentDefinition{}) == nil
		}},
		{"nodes: the node's k8s.ovn.org/node-id", func() bool {
			var n corev1.Node
			return c.Get(ctx, client.ObjectKey{Name: "node-rbac"}, &n) == nil && n.Annotations[ovnk.AnnotationNodeID] != ""
		}},
		{"ipam: the pod's k8s.ovn.org/pod-networks", func() bool {
			if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); apierrors.IsNotFound(err) {
				_ = c.Create(ctx, pod.DeepCopy())
				return false
			}
			return pod.Annotations[ovnk.AnnotationPodNetworks] != ""
		}},
		{"nad: the mirror of the pod's Service's EndpointSlice", func() bool {
			if err := c.Get(ctx, client.ObjectKeyFromObject(slice), &discoveryv1.EndpointSlice{}); apierrors.IsNotFound(err) {
				_ = c.Create(ctx, slice.DeepCopy())
				return false
			}
			var list discoveryv1.EndpointSliceList
			return c.List(ctx, &list, client.InNamespace(ns.Name), client.MatchingLabels{discoveryv1.LabelManagedBy: ovnk.EndpointSliceMirrorControllerName}) == nil &&
				len(list.Items) == 1 && len(list.Items[0].Endpoints) == 1
		}},
		{"dataplane: the network's transit router in OVN", func() bool {
			out, _ := ovnkrows.NB(dbs.NB.Address()).Run("--bare", "--columns=name", "list", "Logical_Router")
			return strings.Contains(out, ovnk.NamesFor(ovnk.UDNNetworkName(ns.Name, "blue")).TransitRouter())
		}},
		{"leader election: the Lease", func() bool {
			var leases metav1.PartialObjectMetadataList
			leases.SetGroupVersionKind(schemaLeaseList)
			return c.List(ctx, &leases, client.InNamespace(releaseNamespace)) == nil && len(leases.Items) > 0
		}},
	}
	deadline := time.Now().Add(wait)
	for _, ch := range checks {
		for !ch.ok() {
			if time.Now().After(deadline) {
				return fmt.Errorf("%s never appeared", ch.what)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

var schemaLeaseList = coordinationv1.SchemeGroupVersion.WithKind("LeaseList")
