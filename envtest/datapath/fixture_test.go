package datapath_test

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/controllers/layer2"
	"github.com/udnkit/udnkit/dataplane/controllers/layer3"
	"github.com/udnkit/udnkit/dataplane/controllers/networkpolicy"
	"github.com/udnkit/udnkit/dataplane/controllers/pods"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// The fixture writes what OVN-Kubernetes' node side owns (the Node objects
// as ovnkube-node and the cluster manager publish them, with their
// l3-gateway-config and Layer3 host subnets, each pod's namespace plumbed by
// its port's iface-id as its CNI does, and the flows ovnkube-node keeps on
// breth0) and runs udnkit's own Layer2, Layer3 and pod-port reconcilers in
// every zone for what udnkit writes, the gateway routers' external side,
// the management ports and every pod's port among it, on Layer2, Layer3
// and Localnet networks alike. A pod enters the API state with its
// k8s.ovn.org/pod-networks as udnkit's address allocator writes it; the
// fixture only plumbs its namespace by the port's iface-id. Only the tests
// that simulate OVN-Kubernetes itself (upgrade_test.go) write pod ports as
// its pod controller does (datapath.WritePodPort).

var cfg = ovnk.DefaultClusterConfig()

// ovnClients are the dataplane's connections, one per zone.
var (
	clientsMu  sync.Mutex
	ovnClients = map[string]*dataplane.Client{}
)

func ovnClient(t testing.TB, n *datapath.Node) *dataplane.Client {
	t.Helper()
	clientsMu.Lock()
	defer clientsMu.Unlock()
	if c, ok := ovnClients[n.Name]; ok {
		return c
	}
	c, err := dataplane.NewClient(context.Background(), n.Zone.NB.Address(), n.Zone.SB.Address())
	if err != nil {
		t.Fatalf("connect the dataplane to %s's zone: %v", n.Name, err)
	}
	ovnClients[n.Name] = c
	return c
}

// gatewayless are the nodes whose Node has no l3-gateway-config (as
// before their ovnkube-node has set its gateway up); guarded by knownMu.
var gatewayless = map[string]bool{}

// setGatewayless takes the l3-gateway-config off node n's Node in every
// later API state (off), or gives it back.
func setGatewayless(n *datapath.Node, off bool) {
	knownMu.Lock()
	defer knownMu.Unlock()
	gatewayless[n.Name] = off
}

// nodeObject is a Node as ovnkube-node publishes it (datapath.OVNKNode)
// and udnkit's reconcilers leave it: node ID (the node's index + 2),
// topology version 2.0; without its l3-gateway-config while gatewayless.
func nodeObject(t testing.TB, i int, n *datapath.Node) *corev1.Node {
	t.Helper()
	node, err := datapath.OVNKNode(n)
	if err != nil {
		t.Fatal(err)
	}
	knownMu.Lock()
	if gatewayless[n.Name] {
		delete(node.Annotations, ovnk.AnnotationL3GatewayConfig)
	}
	knownMu.Unlock()
	node.Annotations[ovnk.AnnotationNodeID] = strconv.Itoa(i + 2)
	node.Annotations[ovnk.AnnotationLayer2TopologyVersion] = ovnk.Layer2TopologyVersionTransitRouter
	addLayer3HostSubnets(t, node)
	return node
}

// network is one UDN: a Primary Layer2 one unless layer3 or secondary says otherwise.
type network struct {
	namespace, name string
	subnets         []netip.Prefix
	nad             *nadv1.NetworkAttachmentDefinition
	layer3          bool
	// secondary marks a Secondary network: its pods' entries are
	// SecondaryPodNetwork's, without gateways or routes.
	secondary bool
	// id is the network ID.
	id int
	// cudn marks a namespace's share of a ClusterUserDefinedNetwork (the
	// CUDN is name): its NAD in namespace, whose owner is the CUDN.
	cudn bool
	// localnet marks a Localnet network (always Secondary).
	localnet bool
}

func (n *network) ovnName() string {
	if n.cudn {
		return ovnk.CUDNNetworkName(n.name)
	}
	return ovnk.UDNNetworkName(n.namespace, n.name)
}

// ovnk is the network as OVN-Kubernetes' controllers read it.
func (n *network) ovnk() *datapath.Network {
	topology := "layer2"
	switch {
	case n.layer3:
		topology = "layer3"
	case n.localnet:
		topology = ovnk.TopologyLocalnet
	}
	return &datapath.Network{Name: n.ovnName(), NAD: n.key(), Topology: topology, Subnets: n.subnets, ID: n.id}
}
func (n *network) key() string { return n.namespace + "/" + n.name }
func (n *network) names() ovnk.Layer2Names {
	return ovnk.NamesFor(n.ovnName())
}

// gateway is the network's default gateway of a family (the subnet's
// first address).
func (n *network) gateway(v6 bool) netip.Addr { return n.ovnk().Gateway(v6) }

// newNetwork renders a Primary Layer2 UDN's NAD (newLayer2Network).
func newNetwork(t testing.TB, namespace, name string, id int, subnets ...string) *network {
	t.Helper()
	return newLayer2Network(t, udnv1.NetworkRolePrimary, namespace, name, id, subnets...)
}

// newLayer2Network renders a Layer2 UDN's NAD of the role as the NAD
// reconciler does, with network ID id and, for a Primary network, tunnel
// keys from the interconnect range.
func newLayer2Network(t testing.TB, role udnv1.NetworkRole, namespace, name string, id int, subnets ...string) *network {
	t.Helper()
	return renderLayer2(t, &network{namespace: namespace, name: name, id: id, secondary: role == udnv1.NetworkRoleSecondary}, subnets...)
}

// newCUDNLayer2 renders a Primary Layer2 ClusterUserDefinedNetwork's NADs,
// one per namespace (as the CUDN's namespace selector picks them), with
// network ID id: one network value per namespace, all of the same OVN network.
func newCUDNLayer2(t testing.TB, name string, id int, namespaces []string, subnets ...string) []*network {
	t.Helper()
	var out []*network
	for _, ns := range namespaces {
		out = append(out, renderLayer2(t, &network{namespace: ns, name: name, id: id, cudn: true}, subnets...))
	}
	return out
}

// renderLayer2 gives n (its namespace, name, id, role and owner kind set)
// its subnets and NAD.
func renderLayer2(t testing.TB, n *network, subnets ...string) *network {
	t.Helper()
	role := udnv1.NetworkRolePrimary
	if n.secondary {
		role = udnv1.NetworkRoleSecondary
	}
	spec := udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{Role: role}}
	for _, s := range subnets {
		spec.Layer2.Subnets = append(spec.Layer2.Subnets, udnv1.CIDR(s))
		n.subnets = append(n.subnets, netip.MustParsePrefix(s))
	}
	transit, err := netconf.TransitSubnetsFor(spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ids := ovnk.NetworkIDs{ID: n.id, HasID: true}
	if !n.secondary {
		ids.TunnelKeys = []int{16715776 + 2*n.id, 16715777 + 2*n.id}
	}
	src := netconf.NADSource{Kind: udnv1.KindUserDefinedNetwork,
		Meta: metav1.ObjectMeta{Namespace: n.namespace, Name: n.name, UID: types.UID(n.namespace + "-" + n.name)}, Spec: spec}
	if n.cudn {
		src.Kind, src.Meta = udnv1.KindClusterUserDefinedNetwork, metav1.ObjectMeta{Name: n.name, UID: types.UID("cudn-" + n.name)}
	}
	n.nad, err = netconf.NewNAD(src, n.namespace, cfg, transit, ids)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// known are the networks every apiState so far was given: later API states
// keep them, so no test's reconcile collects another test's rows as rows of
// a deleted network. (A pass that deleted their datapaths while creating
// the new network's would also abort OVN 26.03.1's ovn-northd, which
// asserts in ods_assign_array_index when one run deletes a datapath and
// adds another, and nothing would be bound in that zone again.)
var (
	knownMu sync.Mutex
	known   = map[string]*network{}
	// knownPods are the Pods every later API state holds, by
	// namespace/name: what udnkit's pod-port reconciler reads.
	knownPods = map[string]*corev1.Pod{}
	// knownObjects are further objects every later API state holds
	// (Namespaces, NetworkPolicies), by objectKey.
	knownObjects = map[string]client.Object{}
)

// objectKey names an object of knownObjects: its Go type, namespace and name.
func objectKey(o client.Object) string {
	return fmt.Sprintf("%T/%s/%s", o, o.GetNamespace(), o.GetName())
}

// setObjects puts the objects into every later API state, replacing those
// of the same type and name.
func setObjects(objs ...client.Object) {
	knownMu.Lock()
	defer knownMu.Unlock()
	for _, o := range objs {
		knownObjects[objectKey(o)] = o.DeepCopyObject().(client.Object)
	}
}

// dropObjects takes the objects out of every later API state.
func dropObjects(objs ...client.Object) {
	knownMu.Lock()
	defer knownMu.Unlock()
	for _, o := range objs {
		delete(knownObjects, objectKey(o))
	}
}

// setPods puts the Pods into every later API state, replacing those of
// the same names.
func setPods(objs ...*corev1.Pod) {
	knownMu.Lock()
	defer knownMu.Unlock()
	for _, o := range objs {
		knownPods[o.Namespace+"/"+o.Name] = o.DeepCopy()
	}
}

// dropPod takes a pod out of every later API state, as its deletion does.
func dropPod(namespace, name string) {
	knownMu.Lock()
	defer knownMu.Unlock()
	delete(knownPods, namespace+"/"+name)
}

// apiState is the API state every zone's reconcilers read: the Nodes, the
// known Pods and objects, the networks' NADs and the UDNs that own them (the dataplane programs only
// NADs whose owner exists with their IDs), with the dataplane's NAD indexes;
// with nets, every network an earlier API state had.
func apiState(t testing.TB, c *datapath.Cluster, nets ...*network) client.Client {
	t.Helper()
	knownMu.Lock()
	for _, n := range nets {
		known[n.key()] = n
	}
	nets = nets[:0:0]
	for _, key := range slices.Sorted(maps.Keys(known)) {
		nets = append(nets, known[key])
	}
	var objs []client.Object
	for _, key := range slices.Sorted(maps.Keys(knownPods)) {
		objs = append(objs, knownPods[key].DeepCopy())
	}
	for _, key := range slices.Sorted(maps.Keys(knownObjects)) {
		objs = append(objs, knownObjects[key].DeepCopyObject().(client.Object))
	}
	knownMu.Unlock()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, nadv1.AddToScheme, udnv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	// MultiNetworkPolicies are read unstructured, as the cluster has no Go type for them.
	mnp := networkpolicy.MultiNetworkPolicyGVK
	s.AddKnownTypeWithName(mnp, &unstructured.Unstructured{})
	s.AddKnownTypeWithName(mnp.GroupVersion().WithKind(mnp.Kind+"List"), &unstructured.UnstructuredList{})
	b := fake.NewClientBuilder().WithScheme(s).
		WithIndex(&nadv1.NetworkAttachmentDefinition{}, zone.NADNetworkField, zone.NADNetwork).
		WithIndex(&nadv1.NetworkAttachmentDefinition{}, zone.AnyNetworkField, zone.AnyNetwork)
	for i, n := range c.Nodes {
		b = b.WithObjects(nodeObject(t, i, n))
	}
	cudns := map[string]bool{}
	for _, net := range nets {
		meta := metav1.ObjectMeta{Namespace: net.namespace, Name: net.name, UID: net.nad.GetOwnerReferences()[0].UID, Annotations: net.nad.GetAnnotations()}
		var owner client.Object = &udnv1.UserDefinedNetwork{ObjectMeta: meta}
		if net.cudn {
			// One CUDN owns the NADs of all its namespaces.
			meta.Namespace = ""
			owner = &udnv1.ClusterUserDefinedNetwork{ObjectMeta: meta}
			if cudns[net.name] {
				owner = nil
			}
			cudns[net.name] = true
		}
		b = b.WithObjects(net.nad.DeepCopy())
		if owner != nil {
			b = b.WithObjects(owner)
		}
	}
	return b.WithObjects(objs...).Build()
}

// reconcileAll runs r on every network's NAD.
func reconcileAll(t testing.TB, zone *datapath.Node, r reconcile.Reconciler, nets ...*network) {
	t.Helper()
	for _, net := range nets {
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: net.nad.Namespace, Name: net.nad.Name}}
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatalf("udnkit's reconciler in %s's zone: %v", zone.Name, err)
		}
	}
}

// program runs udnkit's Layer2 and pod-port reconcilers in every zone,
// each zone local to its own node, on the same API state.
func program(t testing.TB, c *datapath.Cluster, nets ...*network) {
	t.Helper()
	for _, zone := range c.Nodes {
		state, local := apiState(t, c, nets...), localTo(zone)
		// The suite's clusters run EgressIP: its 102 no-reroute policies are in the path.
		reconcileAll(t, zone, &layer2.Reconciler{Client: state, OVN: ovnClient(t, zone), Cluster: cfg, Local: local, EgressIP: true}, nets...)
		reconcileAll(t, zone, podPortReconciler(t, zone, state), nets...)
	}
}

// localTo says a node is zone's own (a zone per node).
func localTo(zone *datapath.Node) func(*corev1.Node) bool {
	return func(n *corev1.Node) bool { return n.Name == zone.Name }
}

// podPortReconciler is udnkit's pod-port reconciler of zone on state.
func podPortReconciler(t testing.TB, zone *datapath.Node, state client.Client) *pods.Reconciler {
	return &pods.Reconciler{Client: state, OVN: ovnClient(t, zone), Cluster: cfg, Local: localTo(zone)}
}

// programLayer3 runs udnkit's Layer3 and pod-port reconcilers in every
// zone, each zone local to its own node, on the same API state: the
// OKEP-5377 policies, the network's whole topology (as Setup builds it)
// and its pods' ports.
func programLayer3(t *testing.T, c *datapath.Cluster, nets ...*network) {
	t.Helper()
	for _, zone := range c.Nodes {
		state := apiState(t, c, nets...)
		reconcileAll(t, zone, &layer3.Reconciler{Client: state, OVN: ovnClient(t, zone), Topology: true, Cluster: cfg,
			Local: localTo(zone), EgressIP: true}, nets...)
		reconcileAll(t, zone, podPortReconciler(t, zone, state), nets...)
	}
}

// pod is a pod of a network: its address is the subnets' address at
// offset index (on Layer3 its node's host subnet's), its tunnel ID the one
// OVN-Kubernetes' cluster manager would allocate (none on Layer3).
type pod struct {
	net       *network
	name      string
	node      *datapath.Node
	index     uint64
	tunnelID  int
	datapath  *datapath.Pod
	annotated map[string]string
	// encapIP is the pod-networks encap_ip: the node's VTEP its interface
	// is behind ("" on a single-VTEP node).
	encapIP string
	// labels are the Pod's labels.
	labels map[string]string
}

func (p *pod) port() string { return ovnk.PodPortName(p.net.key(), p.net.namespace, p.name) }

// annotation is the pod's k8s.ovn.org/pod-networks, as udnkit's address
// allocator writes it (ovnk's codec), with the k8s.v1.cni.cncf.io/networks
// a pod on a Secondary network carries (encode): for a Primary or
// Secondary Layer2 network, or a Primary Layer3 one (layer3Entry).
func (p *pod) annotation(t testing.TB) map[string]string {
	t.Helper()
	if p.net.layer3 {
		return p.encode(t, p.layer3Entry(t))
	}
	var ips []netip.Prefix
	var gws []netip.Addr
	for _, s := range p.net.subnets {
		ips = append(ips, netip.PrefixFrom(ovnk.MustAddrAt(s, p.index), s.Bits()))
		gws = append(gws, p.net.gateway(s.Addr().Is6()))
	}
	joins := []netip.Prefix{netip.MustParsePrefix("100.65.0.0/16"), netip.MustParsePrefix("fd99::/64")}
	var pn podannotation.PodNetwork
	var err error
	if p.net.secondary {
		pn, err = podannotation.SecondaryPodNetwork(ips, ovnk.MACFromIP(ips[0].Addr()), nil, p.tunnelID)
	} else {
		pn, err = podannotation.Layer2PrimaryPodNetwork(ips, ovnk.MACFromIP(ips[0].Addr()), gws, cfg.ServiceCIDRs, joins, p.tunnelID, p.encapIP)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p.encode(t, pn)
}

// encode is the k8s.ovn.org/pod-networks holding pn as the pod's entry of
// its network and, for a Secondary entry, the k8s.v1.cni.cncf.io/networks
// naming the network's NAD (testobj.PodNetworkAnnotations), without which
// the dataplane wires no Secondary entry.
func (p *pod) encode(t testing.TB, pn podannotation.PodNetwork) map[string]string {
	t.Helper()
	v, err := podannotation.PodNetworks{p.net.key(): pn}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return testobj.PodNetworkAnnotations(v)
}

// layer3Entry is the pod's entry on its Primary Layer3 network as udnkit's
// address allocator writes it (podannotation.Layer3PodNetwork): its
// address at offset index of its node's host subnet (setLayer3Hosts), the
// host subnet's first address as gateway and next hop of the routes to the
// network's subnets, the Service CIDRs and the join subnet.
func (p *pod) layer3Entry(t testing.TB) podannotation.PodNetwork {
	t.Helper()
	knownMu.Lock()
	host, ok := layer3Hosts[p.net.ovnName()][p.node.Name]
	knownMu.Unlock()
	if !ok {
		t.Fatalf("pod %s: node %s has no host subnet of network %s", p.name, p.node.Name, p.net.ovnName())
	}
	h := netip.MustParsePrefix(host)
	ip := netip.PrefixFrom(ovnk.MustAddrAt(h, p.index), h.Bits())
	pn, err := podannotation.Layer3PodNetwork([]netip.Prefix{ip}, ovnk.MACFromIP(ip.Addr()), p.net.subnets, true,
		cfg.ServiceCIDRs, cfg.UDNJoinSubnets, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pn
}

// uid is the pod's UID (its port's iface-id-ver).
func (p *pod) uid() string { return "uid-" + p.net.namespace + "-" + p.name }

// object is the Pod as the cluster has it: running on its node with its
// k8s.ovn.org/pod-networks.
func (p *pod) object(t testing.TB) *corev1.Pod {
	t.Helper()
	o := testobj.MakePod(p.net.namespace, p.name).Node(p.node.Name).Running().Labels(p.labels).Annotations(p.annotation(t)).Obj()
	o.UID = types.UID(p.uid())
	return o
}

// podPorts puts the pods into the API state and runs udnkit's pod-port
// reconciler of their networks in every zone: it writes their ports.
func podPorts(t testing.TB, c *datapath.Cluster, ps ...*pod) {
	t.Helper()
	for _, p := range ps {
		setPods(p.object(t))
	}
	reconcilePodPorts(t, c, ps...)
}

// reconcilePodPorts runs udnkit's pod-port reconciler of the pods'
// networks in every zone.
func reconcilePodPorts(t testing.TB, c *datapath.Cluster, ps ...*pod) {
	t.Helper()
	var nets []*network
	for _, p := range ps {
		if !slices.Contains(nets, p.net) {
			nets = append(nets, p.net)
		}
	}
	for _, zone := range c.Nodes {
		reconcileAll(t, zone, podPortReconciler(t, zone, apiState(t, c, nets...)), nets...)
	}
}

// removePods deletes the pods as their deletion does: out of the API
// state, their namespaces (if started) gone from their nodes; then runs
// udnkit's pod-port reconciler of their networks in every zone and fails
// the test if any zone's Northbound still has one of their ports.
func removePods(t testing.TB, c *datapath.Cluster, ps ...*pod) {
	t.Helper()
	for _, p := range ps {
		dropPod(p.net.namespace, p.name)
		if p.datapath == nil {
			continue
		}
		if err := c.RemovePod(p.datapath); err != nil {
			t.Error(err)
		}
		p.datapath = nil
	}
	reconcilePodPorts(t, c, ps...)
	for _, p := range ps {
		if zones := zonesWithPort(t, c, p); len(zones) > 0 {
			t.Errorf("pod %s/%s is gone from the API state, yet its port %s is still in the Northbound of the zones of %v",
				p.net.namespace, p.name, p.port(), zones)
		}
	}
}

// zonesWithPort are the nodes whose zone's Northbound has the pod's port.
func zonesWithPort(t testing.TB, c *datapath.Cluster, p *pod) []string {
	t.Helper()
	var out []string
	for _, zone := range c.Nodes {
		if zone.NB().Must(t, "--bare", "--columns=name", "find", "Logical_Switch_Port", "name="+strconv.Quote(p.port())) != "" {
			out = append(out, zone.Name)
		}
	}
	return out
}

// startPods creates the pods' namespaces on their nodes, configured from
// their annotations.
func startPods(t testing.TB, c *datapath.Cluster, pods ...*pod) {
	t.Helper()
	for _, p := range pods {
		dp, err := c.AddPod(context.Background(), p.node, datapath.PodSpec{Namespace: p.net.namespace, Name: p.name,
			Annotations: p.annotation(t), NAD: p.net.key(), Port: p.port(), UID: p.uid()})
		if err != nil {
			t.Fatalf("%v\n%s", err, p.node.Logs(20))
		}
		p.datapath = dp
	}
}

// settle waits until every zone's ovn-controller has installed the
// current Northbound contents.
func settle(t testing.TB, c *datapath.Cluster) {
	t.Helper()
	if err := c.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// reachTimeout bounds a reach: the first packets of a new path are lost
// while ovn-controller installs its flows.
const reachTimeout = 10 * time.Second

// tcpPort is where the TCP echo servers listen.
const tcpPort = 8080

// pingInterval is how long a counted ping waits for each reply: long
// enough for a loaded 2-core machine.
const pingInterval = 250 * time.Millisecond

// reach fails the test unless from gets an echo reply from dst.
func reach(t testing.TB, c *datapath.Cluster, from *pod, dst netip.Addr) {
	t.Helper()
	if err := from.datapath.Reach(dst, reachTimeout); err != nil {
		t.Fatalf("%v\n%s%s", err, from.node.Logs(10), strings.Join(zoneShows(c), "\n"))
	}
}

// unreachable fails the test if from gets any echo reply from dst within
// two seconds.
func unreachable(t *testing.T, from *pod, dst netip.Addr) {
	t.Helper()
	n, err := from.datapath.Ping(dst, 10, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		t.Fatalf("%s/%s reached %s (%d echo replies), which it must not", from.net.namespace, from.name, dst, n)
	}
}

func zoneShows(c *datapath.Cluster) []string {
	var out []string
	for _, n := range c.Nodes {
		s, _ := n.NB().Run("show")
		out = append(out, fmt.Sprintf("== %s NB\n%s", n.Name, s))
	}
	return out
}

func runCmd(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// ip is the pod's address of a family.
func (p *pod) ip(v6 bool) netip.Addr { return p.datapath.IP(v6) }

// ovnkLegacyGateway writes, in every zone, the external side of the zone's
// node's gateway router as OVN-Kubernetes writes it on a Layer2 network's
// old topology (datapath.WriteLegacyGateway), joinIP giving each node's
// gateway router join IP.
func ovnkLegacyGateway(t testing.TB, c *datapath.Cluster, net *network, joinIP func(*datapath.Node) netip.Addr) {
	t.Helper()
	if err := c.WriteLegacyGateway(cfg, net.ovnk(), joinIP); err != nil {
		t.Fatal(err)
	}
}

// steer installs on every node's breth0 the flows ovnkube-node's shared
// gateway keeps for the networks' gateway routers (datapath.SteerGateways),
// once udnkit has written their localnet ports; again after a localnet
// port was recreated.
func steer(t testing.TB, c *datapath.Cluster, nets ...*network) {
	t.Helper()
	for _, net := range nets {
		if err := c.SteerGateways(context.Background(), cfg, net.ovnk()); err != nil {
			t.Fatal(err)
		}
	}
}

// seenFromOthers runs during while the external host counts the echo
// requests from every node but own, one count per node.
func seenFromOthers(c *datapath.Cluster, own *datapath.Node, counts *[]int, during func() error) error {
	var others []*datapath.Node
	for _, n := range c.Nodes {
		if n != own {
			others = append(others, n)
		}
	}
	*counts = make([]int, len(others))
	var nest func(i int) error
	nest = func(i int) error {
		if i == len(others) {
			return during()
		}
		var err error
		(*counts)[i], err = c.External.EchoRequestsSeen(others[i].UnderlayIP, func() error { return nest(i + 1) })
		return err
	}
	return nest(0)
}

// managementIP is the network's management port address of a family on
// every node (the subnet's second address).
func (n *network) managementIP(v6 bool) netip.Prefix { return n.ovnk().ManagementIP(v6) }

// masqueradeIP is the external IP of udnkit's management-port SNAT for the
// network (network ID id), IPv4.
func masqueradeIP(t *testing.T, id int) netip.Addr {
	t.Helper()
	ip, err := datapath.MasqueradeIP(cfg, id)
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

// ovnkManagementPorts gives every node the network's management port
// interface as ovnkube-node does, bound to the port udnkit wrote
// (datapath.AddManagementPorts).
func ovnkManagementPorts(t *testing.T, c *datapath.Cluster, net *network) {
	t.Helper()
	if err := c.AddManagementPorts(context.Background(), cfg, net.ovnk()); err != nil {
		t.Fatal(err)
	}
}
