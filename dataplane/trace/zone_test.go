package trace

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	dpzone "github.com/udnkit/udnkit/dataplane/controllers/zone"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/controllers/layer2"
	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/internal/testobj/ovnkrows"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
)

// node is one cluster node of the fixture: its ID, its node IPs (Node
// status InternalIP addresses, also the gateway router's external address)
// and the physical gateway its GR's default route points at.
type node struct {
	name string
	id   int
	ips  []netip.Prefix
	gws  []netip.Addr
}

// chassis is the node's OVN chassis (system-id), which ovnkube-node
// publishes in k8s.ovn.org/node-chassis-id: not the node's name.
func (n node) chassis() string {
	return "0f6e5a1c-9d7b-4c1e-8a3b-" + fmt.Sprintf("%012x", []byte(n.name))
}

// chassisOf is the chassis of the fixture's node named name.
func chassisOf(name string) string { return node{name: name}.chassis() }

// The three nodes every trace uses.
var nodes = []node{
	{"node-a", 2, pfx("172.18.0.2/24", "fc00:f853:ccd:e793::2/64"), addrs("172.18.0.1", "fc00:f853:ccd:e793::1")},
	{"node-b", 3, pfx("172.18.0.3/24", "fc00:f853:ccd:e793::3/64"), addrs("172.18.0.1", "fc00:f853:ccd:e793::1")},
	{"node-c", 4, pfx("172.18.0.4/24", "fc00:f853:ccd:e793::4/64"), addrs("172.18.0.1", "fc00:f853:ccd:e793::1")},
}

// zone is one node's OVN zone: its own NB, SB and ovn-northd, as
// OVN-Kubernetes interconnect runs one per node.
type zone struct {
	t     *testing.T
	ctx   context.Context
	local node
	db    *ovsdbserver.Local
	ovn   *dataplane.Client
}

func newZone(t *testing.T, local node) *zone {
	testenv.Real(t, "ovsdb-server, ovn-northd and ovn-trace")
	t.Helper()
	if _, err := ovsdbserver.Tool("ovn-trace"); err != nil {
		t.Fatal(err)
	}
	// Unix socket paths are limited to ~108 bytes: keep the directory short.
	dir, err := os.MkdirTemp("", "trace")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	db, err := ovsdbserver.StartLocal(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Stop)
	c, err := dataplane.NewClient(ctx, db.NB.Address(), db.SB.Address())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &zone{t: t, ctx: ctx, local: local, db: db, ovn: c}
}

func (z *zone) nbctl(args ...string) string {
	z.t.Helper()
	return ovnkrows.NB(z.db.NB.Address()).Must(z.t, args...)
}

func (z *zone) sbctl(args ...string) string {
	z.t.Helper()
	return ovnkrows.SB(z.db.SB.Address()).Must(z.t, args...)
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := ovsdbserver.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// trace compiles the Northbound rows (ovn-northd) and runs one packet
// through the logical flows of datapath, returning ovn-trace's report.
func (z *zone) trace(datapath, microflow string) string {
	z.t.Helper()
	z.nbctl("--wait=sb", "sync")
	return run(z.t, "ovn-trace", "--db="+z.db.SB.Address(), "--no-leader-only", datapath, microflow)
}

// ids are the external_ids OVN-Kubernetes puts on a user-defined network's
// rows (util.GenerateExternalIDsForSwitchOrRouter), as ovn-nbctl arguments.
func ids(network string) []string { return ovnkrows.Network{Name: network, Topology: "layer2"}.IDs() }

// ovnkGateway creates what OVN-Kubernetes' gateway controller owns for the
// local node on a Layer2 network (ovnkrows.WriteGateway): the gateway router
// with its chassis, the external switch with the localnet port and the
// etor-/rtoe- pair carrying the node IPs, and the GR's default routes via
// the physical gateway. (No NAT: ovn-trace has no connection tracking to
// un-NAT a reply.)
func (z *zone) ovnkGateway(network string) {
	z.t.Helper()
	n := z.local
	err := ovnkrows.WriteGateway(ovnkrows.NB(z.db.NB.Address()), ovnkrows.Gateway{
		Network: ovnkrows.Network{Name: network, Topology: "layer2"}, Node: n.name, Chassis: n.chassis(),
		MAC: ovnk.MACFromIP(n.ips[0].Addr()).String(), IPs: n.ips, NextHops: n.gws})
	if err != nil {
		z.t.Fatal(err)
	}
}

// pod is a pod's port on the layer2 switch, as OVN-Kubernetes creates it:
// local pods a VIF port, pods of other zones a remote port with
// requested-chassis and their tunnel key.
type pod struct {
	namespace, name, node string
	ips                   []netip.Addr
	tunnelKey             int
}

func (p pod) mac() string { return ovnk.MACFromIP(p.ips[0]).String() }

func (p pod) addresses() string { return ovnkrows.Addresses(p.ips...) }

// ovnkPod adds the pod's port to the network's layer2 switch
// (ovnkrows.WritePodPort).
func (z *zone) ovnkPod(network, nad string, p pod) string {
	z.t.Helper()
	row := ovnkrows.PodPort{Network: ovnkrows.Network{Name: network, Topology: "layer2"}, NAD: nad,
		Switch: ovnk.NamesFor(network).Switch(), Namespace: p.namespace, Pod: p.name, Chassis: chassisOf(p.node),
		Addresses: p.addresses(), TunnelID: p.tunnelKey, Remote: p.node != z.local.name}
	if err := ovnkrows.WritePodPort(ovnkrows.NB(z.db.NB.Address()), row); err != nil {
		z.t.Fatal(err)
	}
	return row.Name()
}

// ovnkManagementPort adds the local node's management port <prefix>k8s-<node>
// to the layer2 switch, at the subnets' second address.
func (z *zone) ovnkManagementPort(network string, subnets []netip.Prefix) string {
	z.t.Helper()
	var ips []netip.Addr
	for _, s := range subnets {
		a, _ := ovnk.AddrAt(s, 2)
		ips = append(ips, a)
	}
	port, err := ovnkrows.WriteManagementPort(ovnkrows.NB(z.db.NB.Address()), network, z.local.name, ips...)
	if err != nil {
		z.t.Fatal(err)
	}
	return port
}

// api is the API state the manager reads, behind a fake client.
type api struct {
	objs []client.Object
}

func scheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, nadv1.AddToScheme, udnv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// nodeObject is a Node as the reconcilers leave it: node ID, topology
// version 2.0 and the node IPs in status.
func nodeObject(n node) *corev1.Node {
	w := testobj.MakeNode(n.name).Annotations(map[string]string{
		ovnk.AnnotationNodeID:                fmt.Sprint(n.id),
		ovnk.AnnotationNodeChassisID:         n.chassis(),
		ovnk.AnnotationLayer2TopologyVersion: ovnk.Layer2TopologyVersionTransitRouter,
	})
	for _, ip := range n.ips {
		w.InternalIPs(ip.Addr())
	}
	return w.Obj()
}

// udnNAD renders a UDN's NAD exactly as the NAD reconciler does, with its
// network ID and tunnel keys.
func udnNAD(t *testing.T, namespace, name string, spec udnv1.NetworkSpec, cluster ovnk.ClusterConfig, ids ovnk.NetworkIDs) *nadv1.NetworkAttachmentDefinition {
	t.Helper()
	transit, err := netconf.TransitSubnetsFor(spec, cluster)
	if err != nil {
		t.Fatal(err)
	}
	nad, err := netconf.NewNAD(netconf.NADSource{Kind: udnv1.KindUserDefinedNetwork,
		Meta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(namespace + "-" + name)}, Spec: spec}, namespace, cluster, transit, ids)
	if err != nil {
		t.Fatal(err)
	}
	return nad
}

// apiState is a client of the API state: objs, nad and the UDN that owns
// it (udnNAD's owner reference), with the dataplane's NAD indexes.
func apiState(t *testing.T, nad client.Object, objs ...client.Object) client.Client {
	t.Helper()
	owner := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: nad.GetNamespace(), Name: nad.GetName(),
		UID: nad.GetOwnerReferences()[0].UID, Annotations: nad.GetAnnotations()}}
	return fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(append(objs, nad, owner)...).
		WithIndex(&nadv1.NetworkAttachmentDefinition{}, dpzone.NADNetworkField, dpzone.NADNetwork).
		WithIndex(&nadv1.NetworkAttachmentDefinition{}, dpzone.AnyNetworkField, dpzone.AnyNetwork).Build()
}

// programLayer2 runs the manager's Layer2 reconciler for the zone on the API state.
func (z *zone) programLayer2(cluster ovnk.ClusterConfig, nad *nadv1.NetworkAttachmentDefinition, objs ...client.Object) {
	z.t.Helper()
	c := apiState(z.t, nad, objs...)
	r := &layer2.Reconciler{Client: c, OVN: z.ovn, Cluster: cluster, EgressIP: true,
		Local: func(n *corev1.Node) bool { return n.Name == z.local.name }}
	if _, err := r.Reconcile(z.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: nad.Namespace, Name: nad.Name}}); err != nil {
		z.t.Fatalf("layer2 reconcile: %v", err)
	}
}

func pfx(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}
