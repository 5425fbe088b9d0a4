package controllers

import (
	"slices"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/ovnk"
)

// The UDN-enabled services (upstream's default list) as a real apiserver
// has them: default/kubernetes, which the apiserver creates itself, is
// routed from the start; kube-dns, missing at first, gets no route and
// causes no failing reconcile, gets its spec.clusterIP routed to the
// management port of its family once created dual-stack (not its second
// family, as upstream), and loses it once deleted. A Service not listed is
// neither cached nor routed.
func TestLayer2RoutesTheUDNEnabledServices(t *testing.T) {
	s := newStackWith(t, envtest.Options{ServiceClusterIPRange: "10.0.0.0/24,fd00:10:96::/112"})
	o := s.opts()
	o.Cluster = ovnk.DefaultClusterConfig()
	r, err := Setup(s.ctx, s.mgr, o)
	if err != nil {
		t.Fatal(err)
	}
	errorsBefore, _ := reconcileErrors(t, "dataplane-layer2")
	s.start()

	var api corev1.Service
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, &api); err != nil {
		t.Fatal(err)
	}
	s.create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", Annotations: map[string]string{ovnk.AnnotationNodeID: "2"}}}, namespace("ns1"))
	s.createNAD(&nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "tenant-blue",
			Labels:      map[string]string{ovnk.LabelUserDefinedNetwork: ""},
			Annotations: map[string]string{ovnk.AnnotationNetworkID: "1", ovnk.AnnotationTunnelKeys: "[16711685,16715780]"}},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: l2Config},
	})
	apiRoute := api.Spec.ClusterIP + " 203.203.0.2 default/kubernetes"
	s.eventually("the API service routed", func() bool { return s.serviceRoutes() == apiRoute })

	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "metrics"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}}}
	if err := s.c.Create(s.ctx, namespace("kube-system")); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	s.create(other)
	dualStack := corev1.IPFamilyPolicyRequireDualStack
	dns := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"},
		Spec: corev1.ServiceSpec{IPFamilyPolicy: &dualStack, ClusterIP: "10.0.0.10", ClusterIPs: []string{"10.0.0.10", "fd00:10:96::a"},
			Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}}
	s.create(dns)
	want := strings.Join([]string{apiRoute, "10.0.0.10 203.203.0.2 kube-system/kube-dns"}, "\n")
	s.eventually("kube-dns's spec.clusterIP routed", func() bool { return s.serviceRoutes() == want })

	var cached corev1.ServiceList
	if err := r.Layer2.Services.List(s.ctx, &cached); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, svc := range cached.Items {
		names = append(names, svc.Namespace+"/"+svc.Name)
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "default/kubernetes,kube-system/kube-dns" {
		t.Errorf("the service cache holds %v, want exactly the listed services", names)
	}

	if err := s.c.Delete(s.ctx, dns); err != nil {
		t.Fatal(err)
	}
	s.eventually("kube-dns's route removed", func() bool { return s.serviceRoutes() == apiRoute })
	if n, ok := reconcileErrors(t, "dataplane-layer2"); !ok {
		t.Error("no failed-reconcile count of dataplane-layer2")
	} else if n -= errorsBefore; n != 0 {
		t.Errorf("%v failed reconciles while a listed service was missing, created and deleted, want none", n)
	}
}

// serviceRoutes lists the routes to UDN-enabled services as
// "ip_prefix nexthop service", sorted, each checked to be a dst-ip route on
// the network's transit router with the network's external IDs.
func (s *stack) serviceRoutes() string {
	s.t.Helper()
	out := s.nbctl("--format=csv", "--data=bare", "--no-headings", "--columns=_uuid,ip_prefix,nexthop,policy,external_ids",
		"find", "Logical_Router_Static_Route", "external_ids:"+ovnk.ExternalIDUDNEnabledService+"!=\"\"")
	onTR := s.nbctl("--bare", "--columns=static_routes", "find", "Logical_Router", "name=ns1_tenant.blue_transit_router")
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		if l == "" {
			continue
		}
		f := strings.SplitN(l, ",", 5)
		ids := map[string]string{}
		for _, kv := range strings.Fields(f[4]) {
			k, v, _ := strings.Cut(kv, "=")
			ids[k] = v
		}
		if f[3] != "dst-ip" || !strings.Contains(onTR, f[0]) || ids[ovnk.ExternalIDNetwork] != "ns1_tenant-blue" || ids[ovnk.ExternalIDTopology] != "layer2" {
			s.t.Errorf("service route %s: policy %s, on the transit router %v, external_ids %s", f[1], f[3], strings.Contains(onTR, f[0]), f[4])
		}
		rows = append(rows, f[1]+" "+f[2]+" "+ids[ovnk.ExternalIDUDNEnabledService])
	}
	slices.Sort(rows)
	return strings.Join(rows, "\n")
}

// reconcileErrors is controller-runtime's failed-reconcile count of a
// controller (every manager of the test binary adds to it); ok is false
// before the controller has started.
func reconcileErrors(t *testing.T, controller string) (n float64, ok bool) {
	t.Helper()
	m, ok := testenv.Metric(t, "controller_runtime_reconcile_errors_total", map[string]string{"controller": controller})
	return m.GetCounter().GetValue(), ok
}
