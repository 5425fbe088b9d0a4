package controllers

import (
	"context"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testmgr"
	"github.com/udnkit/udnkit/ovnk"
)

// stack is a real apiserver, a real pair of OVN databases and an unstarted
// manager for one test.
type stack struct {
	t   testing.TB
	ctx context.Context
	dir string
	db  *ovsdbserver.Pair
	mgr ctrl.Manager
	c   client.Client
}

func newStack(t testing.TB) *stack {
	t.Helper()
	return newStackWith(t, envtest.Options{})
}

// newStackWith is newStack with the apiserver started with opts.
func newStackWith(t testing.TB, opts envtest.Options) *stack {
	testenv.Real(t, "kube-apiserver and ovsdb-server")
	t.Helper()
	env, err := envtest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	dir, err := os.MkdirTemp("", "ovnc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	db, err := ovsdbserver.StartPair(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Stop)
	ctrl.SetLogger(logr.Discard())
	mgr, err := testmgr.New(env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	return &stack{t: t, ctx: ctx, dir: dir, db: db, mgr: mgr, c: env.Client}
}

// opts are Setup's options for the stack's databases.
func (s *stack) opts() Options {
	return Options{NBAddress: s.db.NB.Address(), SBAddress: s.db.SB.Address()}
}

// dualStackOpts are opts with the default cluster facts plus an IPv6
// cluster subnet, and local the zone's one node.
func (s *stack) dualStackOpts(local string) Options {
	o := s.opts()
	o.Cluster = ovnk.DefaultClusterConfig()
	o.Cluster.ClusterSubnets = append(o.Cluster.ClusterSubnets, netip.MustParsePrefix("fd00:10:244::/48"))
	o.Local = func(n *corev1.Node) bool { return n.Name == local }
	return o
}

// start runs the manager until the test ends; the test's cleanup waits for
// it to stop before it stops the databases and the apiserver.
func (s *stack) start() {
	running := testmgr.Run(s.ctx, s.mgr)
	s.t.Cleanup(func() { _ = running.Stop() })
}

// create creates objs; a Node gets the k8s.ovn.org/node-chassis-id
// ovnkube-node publishes (chassisOf its name) unless it has one: a test of a
// node without it creates the Node with s.c.Create.
func (s *stack) create(objs ...client.Object) {
	s.t.Helper()
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			if _, has := n.Annotations[ovnk.AnnotationNodeChassisID]; !has {
				metav1.SetMetaDataAnnotation(&n.ObjectMeta, ovnk.AnnotationNodeChassisID, chassisOf(n.Name))
			}
		}
		if err := s.c.Create(s.ctx, o); err != nil {
			s.t.Fatal(err)
		}
	}
}

// createNAD creates each NAD as udnkit's NAD reconciler writes it: after its
// owner, a UserDefinedNetwork of the NAD's name in its namespace (created
// unless it exists), with that owner as its controller.
func (s *stack) createNAD(nads ...*nadv1.NetworkAttachmentDefinition) {
	s.t.Helper()
	for _, nad := range nads {
		own(s.t, s.ctx, s.c, nad)
		s.create(nad)
	}
}

// own gets or creates nad's owner UDN (recording the NAD's network ID and
// tunnel keys, as udnkit's reconciler writes them on both) and makes it nad's
// controller.
func own(t testing.TB, ctx context.Context, c client.Client, nad *nadv1.NetworkAttachmentDefinition) *udnv1.UserDefinedNetwork {
	t.Helper()
	ids := map[string]string{}
	for _, k := range []string{ovnk.AnnotationNetworkID, ovnk.AnnotationTunnelKeys} {
		if v, ok := nad.Annotations[k]; ok {
			ids[k] = v
		}
	}
	udn := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: nad.Namespace, Name: nad.Name, Annotations: ids},
		Spec: udnv1.UserDefinedNetworkSpec{Topology: udnv1.NetworkTopologyLayer2,
			Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRoleSecondary, Subnets: udnv1.DualStackCIDRs{"10.99.0.0/16"}}}}
	if err := c.Get(ctx, client.ObjectKeyFromObject(udn), udn); apierrors.IsNotFound(err) {
		err = c.Create(ctx, udn)
		if err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	yes := true
	nad.OwnerReferences = []metav1.OwnerReference{{APIVersion: udnv1.GroupVersion.String(), Kind: udnv1.KindUserDefinedNetwork,
		Name: udn.Name, UID: udn.UID, Controller: &yes, BlockOwnerDeletion: &yes}}
	return udn
}

func (s *stack) nbctl(args ...string) string { return s.ctl("ovn-nbctl", s.db.NB.Address(), args...) }
func (s *stack) sbctl(args ...string) string { return s.ctl("ovn-sbctl", s.db.SB.Address(), args...) }

func (s *stack) ctl(tool, db string, args ...string) string {
	s.t.Helper()
	out, err := ovsdbserver.Command(tool, append([]string{"--db=" + db}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("%s %v: %v: %s", tool, args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// chassisOf is a node's chassis (its k8s.ovn.org/node-chassis-id) in these
// tests: not the node's name, as on a real cluster.
func chassisOf(node string) string { return "5e1f0c1a-" + node }

// remoteChassis runs ovn-northd and registers node's chassis of another zone
// with one geneve Encap per IP, as OVN-Kubernetes' interconnect does.
func (s *stack) remoteChassis(node string, ips ...string) {
	s.t.Helper()
	northd, err := ovsdbserver.StartNorthd(s.dir, s.db.NB, s.db.SB)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(northd.Stop)
	if err := ovsdbserver.AddChassis(s.db.SB, chassisOf(node), node, true, ips...); err != nil {
		s.t.Fatal(err)
	}
}

// encapOf is the IP of the Encap a port's Port_Binding points at ("" without one).
func (s *stack) encapOf(port string) string {
	s.t.Helper()
	if s.sbctl("--bare", "--columns=logical_port", "find", "Port_Binding", "logical_port="+port) == "" {
		return ""
	}
	uuid := s.sbctl("get", "Port_Binding", port, "encap")
	if uuid == "[]" {
		return ""
	}
	return s.sbctl("get", "Encap", uuid, "ip")
}

// eventually polls ok for up to a minute and fails with the NB contents.
func (s *stack) eventually(what string, ok func() bool) {
	s.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: not reached; NB:\n%s", what, s.nbctl("show"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// normalized returns ovn-nbctl output with runs of blanks folded, one line per entry.
func normalized(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}
