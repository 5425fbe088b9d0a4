package controllers

import (
	"slices"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/dataplane/controllers/pods"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/dataplane/topology/policy"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// One bad node must not stall the cluster: a duplicate node ID or a malformed
// NAD is left out on its own, with a Warning Event and
// udnkit_dataplane_skipped_objects_total, and every network keeps being
// programmed with the good nodes.
func TestOneBadObjectAffectsOnlyItself(t *testing.T) {
	s := newStack(t)
	ctx := s.ctx
	if _, err := Setup(ctx, s.mgr, s.opts()); err != nil {
		t.Fatal(err)
	}
	s.start()
	dupBefore := testutil.ToFloat64(zone.SkippedObjects.WithLabelValues("Node", "DuplicateNodeID"))
	badBefore := testutil.ToFloat64(zone.SkippedObjects.WithLabelValues("Node", zone.ReasonInvalidNodeID))
	nadBefore := testutil.ToFloat64(zone.SkippedObjects.WithLabelValues("NetworkAttachmentDefinition", zone.ReasonMalformedNetwork))
	noChassisBefore := testutil.ToFloat64(zone.SkippedObjects.WithLabelValues("Node", topology.SkipNoChassis))

	node := func(name, id string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{ovnk.AnnotationNodeID: id}}}
	}
	// "node-b2" is younger than node-b (same second: the name decides).
	s.create(node("node-a", "2"), node("node-b", "3"), node("node-b2", "3"), node("node-huge", "99999999"))
	// node-d's ovnkube-node has not published its chassis yet: it waits,
	// reported, and is never given one guessed from its name.
	nodeD := node("node-d", "5")
	if err := s.c.Create(ctx, nodeD); err != nil {
		t.Fatal(err)
	}
	l2 := func(ns, name, subnet, keys string) *nadv1.NetworkAttachmentDefinition {
		return &nadv1.NetworkAttachmentDefinition{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				Labels:      map[string]string{ovnk.LabelUserDefinedNetwork: ""},
				Annotations: map[string]string{ovnk.AnnotationNetworkID: "1", ovnk.AnnotationTunnelKeys: keys}},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"` + ns + `_` + name + `",
 "netAttachDefName":"` + ns + `/` + name + `","topology":"layer2","role":"primary","subnets":"` + subnet + `","mtu":1400}`},
		}
	}
	s.create(namespace("iso1"), namespace("iso2"), namespace("iso3"))
	// iso3's tunnel keys are outside the interconnect range: never sent to OVN.
	bad := l2("iso3", "net", "10.3.0.0/16", "[1,2]")
	s.createNAD(l2("iso1", "net", "10.1.0.0/16", "[16711685,16715780]"), l2("iso2", "net", "10.2.0.0/16", "[16711686,16715781]"), bad)

	for _, tr := range []string{"iso1_net_transit_router", "iso2_net_transit_router"} {
		s.eventually(tr+" programmed with the good nodes", func() bool {
			show := s.nbctl("show", tr)
			return strings.Contains(show, "trtor-GR_"+strings.TrimSuffix(tr, "_transit_router")+"_node-a") &&
				strings.Contains(show, "trtor-GR_"+strings.TrimSuffix(tr, "_transit_router")+"_node-b")
		})
		show := s.nbctl("show", tr)
		if strings.Contains(show, "node-b2") || strings.Contains(show, "node-huge") || strings.Contains(show, "node-d") {
			t.Errorf("%s programs a node that must be left out:\n%s", tr, show)
		}
	}
	if out := s.nbctl("--bare", "--columns=name", "find", "Logical_Router", "name=iso3_net_transit_router"); strings.TrimSpace(out) != "" {
		t.Errorf("the network with out-of-range tunnel keys reached OVN: %q", out)
	}
	if got := s.nbctl("--bare", "--columns=options", "find", "Logical_Router_Port", "name=trtor-GR_iso1_net_node-b"); !strings.Contains(got, "requested-tnl-key=13") {
		t.Errorf("the older node-b keeps ID 3 (its port's tunnel key 10+3): %q", got)
	}

	s.eventually("metrics and events for each bad object", func() bool {
		if testutil.ToFloat64(zone.SkippedObjects.WithLabelValues("Node", "DuplicateNodeID")) <= dupBefore ||
			testutil.ToFloat64(zone.SkippedObjects.WithLabelValues("Node", zone.ReasonInvalidNodeID)) <= badBefore ||
			testutil.ToFloat64(zone.SkippedObjects.WithLabelValues("NetworkAttachmentDefinition", zone.ReasonMalformedNetwork)) <= nadBefore ||
			testutil.ToFloat64(zone.SkippedObjects.WithLabelValues("Node", topology.SkipNoChassis)) <= noChassisBefore {
			return false
		}
		var evs eventsv1.EventList
		if err := s.c.List(ctx, &evs); err != nil {
			return false
		}
		want := map[string]string{"node-b2": "node ID 3 is also older node node-b's", "node-huge": `"99999999" is not a node ID`,
			"net": "tunnel key 1 is outside the interconnect range", "node-d": "node node-d has no k8s.ovn.org/node-chassis-id yet"}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, want[e.Regarding.Name]) && want[e.Regarding.Name] != "" {
				delete(want, e.Regarding.Name)
			}
		}
		return len(want) == 0
	})

	// Once published, node-d joins with that chassis.
	patch := client.MergeFrom(nodeD.DeepCopy())
	metav1.SetMetaDataAnnotation(&nodeD.ObjectMeta, ovnk.AnnotationNodeChassisID, chassisOf("node-d"))
	if err := s.c.Patch(ctx, nodeD, patch); err != nil {
		t.Fatal(err)
	}
	s.eventually("node-d programmed with its published chassis", func() bool {
		gr := s.nbctl("--bare", "--columns=options", "find", "Logical_Router", "name=GR_iso1_net_node-d")
		port := s.nbctl("--bare", "--columns=options", "find", "Logical_Router_Port", "name=trtor-GR_iso1_net_node-d")
		return strings.Contains(gr, "chassis="+chassisOf("node-d")) && strings.Contains(port, "requested-tnl-key=15")
	})
}

// portGroupPorts are the names of a port group's ports, sorted, as
// `ovn-nbctl list Port_Group` shows their UUIDs.
func (s *stack) portGroupPorts(pg string) []string {
	s.t.Helper()
	var out []string
	for _, line := range s.column("Port_Group", "ports", "name="+pg) {
		for _, uuid := range strings.Fields(line) {
			out = append(out, s.nbctl("get", "Logical_Switch_Port", uuid, "name"))
		}
	}
	slices.Sort(out)
	return out
}

// defaultNetworkPod is a pod on node whose k8s.ovn.org/pod-networks holds
// the default network's entry with role, as OVN-Kubernetes writes it.
func defaultNetworkPod(ns, name, node, role string) *corev1.Pod {
	return testobj.MakePod(ns, name).Node(node).Annotation(ovnk.AnnotationPodNetworks,
		`{"default":{"ip_addresses":["10.244.2.9/24","fd00:10:244:3::9/64"],"mac_address":"0a:58:0a:f4:02:09","role":"`+role+`"}}`).Obj()
}

// The zone's isolation port group holds the default-network port of each
// of the zone's pods whose default network role is infrastructure-locked
// (upstream's pods.go addLogicalPort), and follows them: a new pod's port
// joins; a deleted pod leaves (OVN-Kubernetes deletes its port) while the
// other members stay, and a finished one leaves even while its port is
// there; a port whose pod is on another zone's node, or
// whose pod is on the default network (role primary), is never a member.
// The ports are OVN-Kubernetes' (written here mostly before the pod's
// event; one after, as it does: the member then joins when its port
// appears). The network's cluster port groups keep their management
// port only, as upstream's (syncNodeManagementPort is the one writer of
// their ports).
func TestIsolationPortGroupFollowsPods(t *testing.T) {
	s, _ := policyStackWith(t, func(o *Options) { o.Zone, o.Local = "node-a", zone.InZone("node-a") })
	s.create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b", Annotations: map[string]string{ovnk.AnnotationNodeID: "3"}}}, namespace("ns3"))
	// OVN-Kubernetes' default network ports on node-a's switch.
	s.nbctl("ls-add", "node-a")
	for _, p := range []string{"ns1_pod1", "ns1_pod2", "ns1_podb", "ns3_plain"} {
		s.nbctl("lsp-add", "node-a", p)
	}
	pg := policy.IsolationPortGroup()
	members := func(want ...string) func() bool {
		return func() bool { return slices.Equal(s.portGroupPorts(pg), want) }
	}
	infra := podannotation.RoleInfrastructureLocked
	pod1 := defaultNetworkPod("ns1", "pod1", "node-a", infra)
	s.create(pod1, defaultNetworkPod("ns1", "podb", "node-b", infra), defaultNetworkPod("ns3", "plain", "node-a", podannotation.RolePrimary))
	s.eventually("node-a's Primary-UDN pod's default port in the isolation group", members("ns1_pod1"))

	pod2 := defaultNetworkPod("ns1", "pod2", "node-a", infra)
	s.create(pod2)
	s.eventually("a new pod's port joins", members("ns1_pod1", "ns1_pod2"))
	for net, mgmt := range map[string]string{greenNet: greenMgmt, blueNet: "k8s-ns1_tenant.blue_node-a"} {
		s.eventually(net+"'s cluster port group holds its management port only", func() bool {
			return slices.Equal(s.portGroupPorts(policy.ClusterPortGroup(net)), []string{mgmt})
		})
	}

	if err := s.c.Delete(s.ctx, pod1, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	s.nbctl("lsp-del", "ns1_pod1")
	s.eventually("the deleted pod's port leaves, the other stays", members("ns1_pod2"))

	// A finished pod leaves while its port is still there (OVN-Kubernetes
	// not yet done with it): the group's members are udnkit's to plan.
	pod2.Status.Phase = corev1.PodSucceeded
	if err := s.c.Status().Update(s.ctx, pod2); err != nil {
		t.Fatal(err)
	}
	s.eventually("the finished pod's port leaves though it exists", members())
	s.nbctl("lsp-del", "ns1_pod2")

	// OVN-Kubernetes writes a pod's annotation before its port: the port
	// joins once it appears.
	// pod6, created after pod5 with its port, joins: the group was then
	// planned with pod5 and without its port.
	s.nbctl("lsp-add", "node-a", "ns1_pod6")
	s.create(defaultNetworkPod("ns1", "pod5", "node-a", infra), defaultNetworkPod("ns1", "pod6", "node-a", infra))
	s.eventually("pod6 joins, pod5 waits for its port", members("ns1_pod6"))
	s.nbctl("lsp-add", "node-a", "ns1_pod5")
	s.eventually("pod5's port joins once it appears", members("ns1_pod5", "ns1_pod6"))
	s.nbctl("lsp-del", "ns1_pod5")
	s.eventually("pod5's port deleted leaves the group", members("ns1_pod6"))

	// pod1 comes back on node-b, another zone, and a port of its name is
	// on node-a's switch: not this zone's member; nor is a pod whose
	// default network role is not infrastructure-locked.
	s.nbctl("lsp-add", "node-a", "ns1_pod1")
	s.create(defaultNetworkPod("ns1", "pod1", "node-b", infra), defaultNetworkPod("ns1", "pod3", "node-a", "bogus"))
	// pod4, created last, joins: the group then read every pod before it.
	s.nbctl("lsp-add", "node-a", "ns1_pod4")
	s.create(defaultNetworkPod("ns1", "pod4", "node-a", infra))
	s.eventually("pod4 joins; no pod of another zone or without role infrastructure-locked", members("ns1_pod4", "ns1_pod6"))
}

// openPortACLs are the isolation port group's open-port ACLs as
// `ovn-nbctl acl-list` shows them (direction, priority, match, action),
// sorted (none before the group exists).
func (s *stack) openPortACLs() []string {
	s.t.Helper()
	var out []string
	if len(s.column("Port_Group", "name", "name="+policy.IsolationPortGroup())) == 0 {
		return nil
	}
	for _, l := range strings.Split(s.nbctl("acl-list", policy.IsolationPortGroup()), "\n") {
		if strings.Contains(l, "(arp || nd") {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	slices.Sort(out)
	return out
}

// A Primary-UDN pod's k8s.ovn.org/open-default-ports opens those ports
// on its default-network port: the isolation port group gains upstream's
// two OpenPort ACLs for it (udn_isolation.go setUDNPodOpenPortsOps), as
// `ovn-nbctl acl-list` shows them; changing the annotation rewrites them,
// a malformed one leaves the pod closed (no ACL, a Warning Event naming
// the annotation and the broken rule) and removing it deletes them, rows
// and all.
func TestOpenDefaultPorts(t *testing.T) {
	s, _ := policyStackWith(t, func(o *Options) { o.Zone, o.Local = "node-a", zone.InZone("node-a") })
	s.nbctl("ls-add", "node-a")
	s.nbctl("lsp-add", "node-a", "ns1_web")
	s.nbctl("lsp-add", "node-a", "ns1_closed")
	web := defaultNetworkPod("ns1", "web", "node-a", podannotation.RoleInfrastructureLocked)
	web.Annotations[ovnk.AnnotationOpenDefaultPorts] = `[{"protocol":"tcp","port":80},{"protocol":"icmp"}]`
	s.create(web, defaultNetworkPod("ns1", "closed", "node-a", podannotation.RoleInfrastructureLocked))
	acls := func(want ...string) func() bool {
		return func() bool { return slices.Equal(s.openPortACLs(), want) }
	}
	egress := `from-lport 1001 (inport == "ns1_web" && (arp || nd)) allow`
	s.eventually("web's open-port ACLs in the isolation group", acls(
		egress, `to-lport 1001 (outport == "ns1_web" && (arp || nd || (tcp.dst == 80 || icmp))) allow-related`))
	t.Logf("ovn-nbctl acl-list %s:\n%s", policy.IsolationPortGroup(), s.nbctl("acl-list", policy.IsolationPortGroup()))
	if ids := s.column("ACL", "external_ids", `external_ids:"k8s.ovn.org/name"="OpenPort-ns1/web"`, `external_ids:direction=Ingress`); len(ids) != 1 ||
		!strings.Contains(ids[0], "k8s.ovn.org/id=default-network-controller:UDNIsolation:OpenPort-ns1/web:Ingress") {
		t.Errorf("web's ingress ACL external_ids %v", ids)
	}
	if got := s.column("ACL", "tier", `external_ids:"k8s.ovn.org/name"="OpenPort-ns1/web"`); !slices.Equal(got, []string{"0", "0"}) {
		t.Errorf("open-port ACL tiers %v, want 0 (the isolation's)", got)
	}

	annotate := func(v *string) {
		t.Helper()
		cur := &corev1.Pod{}
		if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(web), cur); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(cur.DeepCopy())
		if v == nil {
			delete(cur.Annotations, ovnk.AnnotationOpenDefaultPorts)
		} else {
			cur.Annotations[ovnk.AnnotationOpenDefaultPorts] = *v
		}
		if err := s.c.Patch(s.ctx, cur, patch); err != nil {
			t.Fatal(err)
		}
	}
	udp := "- protocol: udp\n  port: 53"
	annotate(&udp)
	s.eventually("the changed annotation rewrites the ingress ACL", acls(
		egress, `to-lport 1001 (outport == "ns1_web" && (arp || nd || (udp.dst == 53))) allow-related`))

	bad := `[{"protocol":"udp","port":53},{"protocol":"tcp"}]`
	annotate(&bad)
	s.eventually("a malformed annotation closes every port", acls())
	s.eventually("a Warning Event on the pod names the annotation and the rule", func() bool {
		var evs eventsv1.EventList
		if err := s.c.List(s.ctx, &evs, client.InNamespace("ns1")); err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == "web" && e.Type == corev1.EventTypeWarning && e.Reason == pods.ReasonOpenPortsInvalid &&
				strings.Contains(e.Note, ovnk.AnnotationOpenDefaultPorts) && strings.Contains(e.Note, "entry 1: port is required for tcp protocol") {
				return true
			}
		}
		return false
	})
	if got := s.portGroupPorts(policy.IsolationPortGroup()); !slices.Equal(got, []string{"ns1_closed", "ns1_web"}) {
		t.Errorf("isolation members %v: the malformed pod stays isolated", got)
	}

	annotate(&udp)
	s.eventually("fixed, the port opens again", acls(
		egress, `to-lport 1001 (outport == "ns1_web" && (arp || nd || (udp.dst == 53))) allow-related`))
	annotate(nil)
	s.eventually("the removed annotation removes the ACLs", acls())
	if got := s.column("ACL", "_uuid", `external_ids:"k8s.ovn.org/name"="OpenPort-ns1/web"`); len(got) != 0 {
		t.Errorf("open-port ACL rows left behind: %v", got)
	}
}
