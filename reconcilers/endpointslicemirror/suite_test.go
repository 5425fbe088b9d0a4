package endpointslicemirror_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testmgr"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/reconcilers/endpointslicemirror"
)

// managerSA is the ServiceAccount the chart runs udnkit's manager as; the
// admission policies trust its user (and nobody else here).
const managerSA = "udnkit"

var (
	ctx = context.Background()
	env *envtest.Environment
	// admin writes what Kubernetes itself would (Services, pods, default
	// EndpointSlices); it is not trusted by udnkit's policies.
	admin client.Client
	// udnkit is the manager's identity: it runs the mirror controller and
	// writes the pods' k8s.ovn.org/pod-networks as udnkit's address
	// reconciler (or OVN-Kubernetes) would.
	udnkit  client.Client
	running *testmgr.Running
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("UDNKIT_TEST_LOG") != "" {
		log.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		log.SetLogger(logr.Discard())
	}
	var err error
	env, err = envtest.Start(envtest.Options{Policies: true, ServiceClusterIPRange: "10.0.0.0/24,fd00:10:96::/112",
		AnnotationWriters: &envtest.AnnotationWriters{ServiceAccount: managerSA}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	admin = env.Client
	udnkit = impersonate(managerUser(), "system:masters")
	if err := startManager(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = running.Stop() }()
	return m.Run()
}

func managerUser() string {
	return "system:serviceaccount:" + envtest.ParamsNamespace + ":" + managerSA
}

// startManager starts a manager running only the mirror controller, with
// one worker, as udnkit's ServiceAccount.
func startManager() error {
	mgr, err := testmgr.New(impersonated(managerUser(), "system:masters"), env.Scheme)
	if err != nil {
		return err
	}
	if err := endpointslicemirror.SetupWithManager(mgr, endpointslicemirror.Options{MaxConcurrentReconciles: 1}); err != nil {
		return err
	}
	running = testmgr.Run(ctx, mgr)
	return nil
}

func requireEnv(t *testing.T) {
	t.Helper()
	testenv.Real(t, "kube-apiserver")
}

func impersonated(user string, groups ...string) *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return cfg
}

func impersonate(user string, groups ...string) client.Client {
	c, err := client.New(impersonated(user, groups...), client.Options{Scheme: env.Scheme})
	if err != nil {
		panic(err)
	}
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// namespace creates a namespace, asking for a Primary UDN when primary.
func namespace(t *testing.T, name string, primary bool) {
	t.Helper()
	w := testobj.MakeNamespace(name)
	if primary {
		w = w.Primary()
	}
	must(t, admin.Create(ctx, w.Obj()))
}

// service creates a dual-stack ClusterIP Service selecting app=name.
func service(t *testing.T, ns, name string) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name}, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicyRequireDualStack),
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	must(t, admin.Create(ctx, svc))
	return svc
}

// backend is a pod behind a Service: its default-network addresses (what
// the default slices list) and, once known, its addresses on the Primary
// network.
type backend struct {
	name, node  string
	defaultIPs  []string
	hostNetwork bool
	pod         *corev1.Pod
}

// createPod creates b's pod (scheduled on b.node, with b.defaultIPs in
// status.podIPs), without k8s.ovn.org/pod-networks.
func createPod(t *testing.T, ns string, b *backend, app string) {
	t.Helper()
	p := testobj.MakePod(ns, b.name).Node(b.node).Labels(map[string]string{"app": app}).Running().Obj()
	p.Spec.HostNetwork = b.hostNetwork
	must(t, admin.Create(ctx, p))
	for _, ip := range b.defaultIPs {
		p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	p.Status.PodIP = b.defaultIPs[0]
	p.Status.Phase = corev1.PodRunning
	must(t, admin.Status().Update(ctx, p))
	b.pod = p
}

// annotatePod writes the pod's k8s.ovn.org/pod-networks entry for nadKey,
// as udnkit, with the codec every writer of it uses, and the
// k8s.v1.cni.cncf.io/networks a pod with a Secondary entry carries
// (testobj.PodNetworkAnnotations).
func annotatePod(t *testing.T, b *backend, nadKey string, pn podannotation.PodNetwork) {
	t.Helper()
	var p corev1.Pod
	must(t, udnkit.Get(ctx, client.ObjectKeyFromObject(b.pod), &p))
	v, err := podannotation.WithPodNetwork(p.Annotations, nadKey, pn)
	must(t, err)
	patch := client.MergeFrom(p.DeepCopy())
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	maps.Copy(p.Annotations, testobj.PodNetworkAnnotations(v))
	must(t, udnkit.Patch(ctx, &p, patch))
	b.pod = &p
}

// layer2Entry is a Primary Layer2 entry as udnkit's address reconciler
// writes it (ovnk/podannotation.Layer2PrimaryPodNetwork).
func layer2Entry(t *testing.T, ips ...string) podannotation.PodNetwork {
	t.Helper()
	var prefixes []netip.Prefix
	var gateways []netip.Addr
	for _, ip := range ips {
		p := netip.MustParsePrefix(ip)
		prefixes = append(prefixes, p)
		gateways = append(gateways, p.Masked().Addr().Next())
	}
	mac := ovnk.MACFromIP(prefixes[0].Addr())
	pn, err := podannotation.Layer2PrimaryPodNetwork(prefixes, mac, gateways,
		[]netip.Prefix{netip.MustParsePrefix("10.96.0.0/16"), netip.MustParsePrefix("fd00:10:96::/112")},
		[]netip.Prefix{netip.MustParsePrefix("100.65.0.0/16"), netip.MustParsePrefix("fd99::/64")}, 10, "")
	must(t, err)
	return pn
}

// layer3Entry is a Primary Layer3 entry as OVN-Kubernetes'
// ovnkube-controller writes it: the pod's address in its node's host
// subnet, the node's gateway (.1), the role.
func layer3Entry(ips ...string) podannotation.PodNetwork {
	pn := podannotation.PodNetwork{Role: podannotation.RolePrimary}
	for _, ip := range ips {
		p := netip.MustParsePrefix(ip)
		pn.IPAddresses = append(pn.IPAddresses, p.String())
		pn.GatewayIPs = append(pn.GatewayIPs, p.Masked().Addr().Next().String())
	}
	pn.MACAddress = ovnk.MACFromIP(netip.MustParsePrefix(ips[0]).Addr()).String()
	if len(ips) == 1 {
		pn.IPAddress, pn.GatewayIP = pn.IPAddresses[0], pn.GatewayIPs[0]
	}
	return pn
}

// tenant is a namespace admin of ns who may also write EndpointSlices
// there, as a cluster that lets users run their own endpoint controllers
// grants.
func tenant(t *testing.T, user, ns string) client.Client {
	t.Helper()
	must(t, admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "endpointslice-writer", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{discoveryv1.GroupName}, Resources: []string{"endpointslices"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}))
	must(t, admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-endpointslice-writer", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "endpointslice-writer"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}))
	return impersonate(user, "system:authenticated")
}

// oneBackend sets up namespace ns with a Primary Layer2 UDN "net" on
// subnet, one pod "<app>-0" on node-a with defaultIP and its address udnIP
// on the network, and the Service app.
func oneBackend(t *testing.T, ns, subnet, app, defaultIP, udnIP string) (*corev1.Service, *backend) {
	t.Helper()
	namespace(t, ns, true)
	must(t, admin.Create(ctx, testobj.MakeUDN(ns, "net").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, udnv1.CIDR(subnet))).Obj()))
	b := &backend{name: app + "-0", node: "node-a", defaultIPs: []string{defaultIP}}
	createPod(t, ns, b, app)
	prefix := netip.MustParsePrefix(subnet)
	annotatePod(t, b, ns+"/net", layer2Entry(t, netip.PrefixFrom(netip.MustParseAddr(udnIP), prefix.Bits()).String()))
	return service(t, ns, app), b
}
