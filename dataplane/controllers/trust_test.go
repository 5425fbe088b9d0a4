package controllers

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
)

// nbTables are the Northbound tables the dataplane writes rows in.
var nbTables = []string{"Logical_Router", "Logical_Router_Port", "Logical_Router_Static_Route", "Logical_Router_Policy",
	"NAT", "Logical_Switch", "Logical_Switch_Port", "Address_Set", "Gateway_Chassis"}

// nbRows is every row of nbTables, UUIDs included, one sorted line per row:
// two equal results mean no row was added, removed, replaced or changed.
func (s *stack) nbRows() string {
	s.t.Helper()
	var out []string
	for _, table := range nbTables {
		for _, row := range strings.Split(s.nbctl("--format=csv", "--data=bare", "--no-headings", "list", table), "\n") {
			if row != "" {
				out = append(out, table+": "+row)
			}
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// rowsOf keeps the rows that name network (its OVN names or external_ids).
func rowsOf(rows, network string) string {
	prefix := strings.TrimSuffix(ovnk.NetworkPrefix(network), "_")
	var out []string
	for _, l := range strings.Split(rows, "\n") {
		if strings.Contains(l, prefix) || strings.Contains(l, network) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// consistently fails as soon as got() differs from want within d.
func (s *stack) consistently(what string, d time.Duration, want string, got func() string) {
	s.t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if g := got(); g != want {
			s.t.Fatalf("%s changed:\nbefore:\n%s\nnow:\n%s", what, want, g)
		}
	}
}

// untrustedEvent waits for the dataplane's Warning Event on nad and returns its note.
func (s *stack) untrustedEvent(nad *nadv1.NetworkAttachmentDefinition, reason string) string {
	s.t.Helper()
	var note string
	s.eventually("event "+nadtrust.EventReason+" ("+reason+") on "+nad.Namespace+"/"+nad.Name, func() bool {
		var evs eventsv1.EventList
		if err := s.c.List(s.ctx, &evs, client.InNamespace(nad.Namespace)); err != nil {
			s.t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == nad.Name && e.Type == corev1.EventTypeWarning && e.Reason == nadtrust.EventReason &&
				strings.Contains(e.Note, "("+reason+")") {
				note = e.Note
				return true
			}
		}
		return false
	})
	return note
}

func labeledNAD(ns, name, config string, annotations map[string]string) *nadv1.NetworkAttachmentDefinition {
	return &nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{ovnk.LabelUserDefinedNetwork: ""}, Annotations: annotations},
		Spec:       nadv1.NetworkAttachmentDefinitionSpec{Config: config},
	}
}

func l2Conf(network, nad, subnets, extra string) string {
	return fmt.Sprintf(`{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":%q,"netAttachDefName":%q,"topology":"layer2","role":"primary","subnets":%q%s}`,
		network, nad, subnets, extra)
}

func l3Conf(network, nad, subnets string) string {
	return fmt.Sprintf(`{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":%q,"netAttachDefName":%q,"topology":"layer3","role":"primary","subnets":%q}`,
		network, nad, subnets)
}

func idAnnotations(id, keys string) map[string]string {
	return map[string]string{ovnk.AnnotationNetworkID: id, ovnk.AnnotationTunnelKeys: keys}
}

// A tenant with NAD rights in its own namespace writes NADs with udnkit's
// label (admission is not installed here: the admin client stands in for a
// tenant that got past it). Each one names a victim's network, carries a
// victim's IDs, or claims a victim's owner; the dataplane ignores them all:
// no row of the Northbound database changes, each gets a Warning Event
// naming the failed check, and udnkit_untrusted_nads_total moves for each
// check. A forged NAD that goes queues the real network again, which
// repairs its rows. A tenant's edit of its own NAD to another network's name
// or tunnel keys leaves that network's rows alone, and reverting it brings
// the tenant's rows back.
func TestForgedNADsLeaveOtherNetworksAlone(t *testing.T) {
	s := newStack(t)
	o := s.opts()
	o.Policy.EgressIP = true // the Layer3 network shows as its subnet policy, EgressIP's
	if _, err := Setup(s.ctx, s.mgr, o); err != nil {
		t.Fatal(err)
	}
	s.start()
	s.create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", Annotations: map[string]string{ovnk.AnnotationNodeID: "2"}}},
		namespace("victim"), namespace("victim3"), namespace("tenant"), namespace("attacker"))

	const victimKeys = "[16711681,16715776]"
	victim := labeledNAD("victim", "net", l2Conf("victim_net", "victim/net", "10.100.0.0/24", ""), idAnnotations("1", victimKeys))
	victim3 := labeledNAD("victim3", "net", l3Conf("victim3_net", "victim3/net", "10.200.0.0/16/24"), nil)
	mine := labeledNAD("tenant", "mine", l2Conf("tenant_mine", "tenant/mine", "10.30.0.0/24", ""), idAnnotations("2", "[16711682,16715777]"))
	s.createNAD(victim, victim3, mine)
	s.eventually("the three networks programmed", func() bool {
		routers := s.nbctl("--bare", "--columns=name", "list", "Logical_Router")
		return strings.Contains(routers, "victim_net_transit_router") && strings.Contains(routers, "tenant_mine_transit_router") &&
			strings.Contains(s.nbctl("--bare", "--columns=match", "list", "Logical_Router_Policy"), "10.200.0.0/16")
	})
	before := s.nbRows()
	count := func(reason string) float64 { return nadtrust.Count(zone.DataplaneConsumer, reason) }
	counted := map[string]float64{}
	for _, r := range []string{nadtrust.ReasonNoController, nadtrust.ReasonOwnerNotFound, nadtrust.ReasonOwnerUIDMismatch,
		nadtrust.ReasonNetworkIDMismatch, nadtrust.ReasonNetworkNameMismatch} {
		counted[r] = count(r)
	}

	// A Layer2 NAD naming the victim's network over another subnet, with
	// the victim's IDs and no owner.
	forgedL2 := labeledNAD("attacker", "evil-l2", l2Conf("victim_net", "attacker/evil-l2", "10.66.0.0/24", ""), idAnnotations("1", victimKeys))
	// A Layer3 NAD naming the victim's Layer3 network with 0.0.0.0/0, its
	// owner a UDN that does not exist.
	forgedL3 := labeledNAD("attacker", "evil-l3", l3Conf("victim3_net", "attacker/evil-l3", "0.0.0.0/0/24"), nil)
	yes := true
	forgedL3.OwnerReferences = []metav1.OwnerReference{{APIVersion: udnv1.GroupVersion.String(), Kind: udnv1.KindUserDefinedNetwork,
		Name: "evil-l3", UID: "3b7a5a38-0000-4000-8000-000000000000", Controller: &yes}}
	// A NAD naming the victim's network whose owner reference carries the
	// victim's UDN's UID, beside the attacker's own UDN of the same name.
	stolenUID := labeledNAD("attacker", "net", l2Conf("victim_net", "attacker/net", "10.66.1.0/24", ""), idAnnotations("1", victimKeys))
	own(t, s.ctx, s.c, stolenUID)
	var victimUDN udnv1.UserDefinedNetwork
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: "victim", Name: "net"}, &victimUDN); err != nil {
		t.Fatal(err)
	}
	stolenUID.OwnerReferences[0].UID = victimUDN.UID
	// A Primary NAD of the attacker's own network, owned by its own UDN,
	// over the cluster's default and join subnets and carrying the victim's
	// network ID and tunnel keys (its UDN records those udnkit gave it).
	rogue := labeledNAD("attacker", "rogue", l2Conf("attacker_rogue", "attacker/rogue", "10.128.0.0/14", `,"joinSubnet":"100.64.0.0/16"`),
		idAnnotations("9", "[16711689,16715784]"))
	own(t, s.ctx, s.c, rogue)
	rogue.Annotations = idAnnotations("1", victimKeys)
	s.create(forgedL2, forgedL3, stolenUID, rogue)

	s.consistently("the Northbound rows with forged NADs present", 3*time.Second, before, s.nbRows)
	for nad, reason := range map[*nadv1.NetworkAttachmentDefinition]string{forgedL2: nadtrust.ReasonNoController, forgedL3: nadtrust.ReasonOwnerNotFound,
		stolenUID: nadtrust.ReasonOwnerUIDMismatch, rogue: nadtrust.ReasonNetworkIDMismatch} {
		note := s.untrustedEvent(nad, reason)
		if !strings.Contains(note, "dataplane ignores this NetworkAttachmentDefinition") {
			t.Errorf("event on %s/%s: %q", nad.Namespace, nad.Name, note)
		}
		if count(reason) <= counted[reason] {
			t.Errorf("udnkit_untrusted_nads_total{consumer=dataplane,reason=%s} = %v, did not move", reason, count(reason))
		}
	}

	// The victim's rows are damaged by hand; the forged NAD's deletion
	// queues the victim's network, whose reconcile repairs them.
	s.nbctl("set", "Logical_Router_Port", "trtos-"+ovnk.NamesFor("victim_net").Switch(), `networks="10.66.0.1/24"`)
	if err := s.c.Delete(s.ctx, forgedL2); err != nil {
		t.Fatal(err)
	}
	s.eventually("the victim's rows repaired after the forged NAD went", func() bool { return s.nbRows() == before })
	for _, nad := range []client.Object{forgedL3, stolenUID, rogue} {
		if err := s.c.Delete(s.ctx, nad); err != nil {
			t.Fatal(err)
		}
	}
	s.consistently("the Northbound rows after the forged NADs went", time.Second, before, s.nbRows)

	// The tenant edits its own NAD to name the victim's network, then to
	// carry the victim's tunnel keys: the victim's rows never change (the
	// tenant's own network goes while its NAD fails the rule), and
	// reverting the NAD brings every row back.
	victimRows := rowsOf(before, "victim_net")
	if !strings.Contains(victimRows, "victim_net_transit_router") {
		t.Fatalf("the victim's rows are not found in:\n%s", before)
	}
	for _, edit := range []struct {
		reason string
		change func(*nadv1.NetworkAttachmentDefinition)
	}{
		{nadtrust.ReasonNetworkNameMismatch, func(n *nadv1.NetworkAttachmentDefinition) {
			n.Spec.Config = l2Conf("victim_net", "tenant/mine", "10.30.0.0/24", "")
		}},
		{nadtrust.ReasonNetworkIDMismatch, func(n *nadv1.NetworkAttachmentDefinition) { n.Annotations[ovnk.AnnotationTunnelKeys] = victimKeys }},
	} {
		var cur nadv1.NetworkAttachmentDefinition
		if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(mine), &cur); err != nil {
			t.Fatal(err)
		}
		orig := cur.DeepCopy()
		edit.change(&cur)
		if err := s.c.Update(s.ctx, &cur); err != nil {
			t.Fatal(err)
		}
		s.untrustedEvent(mine, edit.reason)
		s.eventually("the tenant's rows gone while its NAD fails the rule", func() bool {
			return !strings.Contains(s.nbctl("--bare", "--columns=name", "list", "Logical_Router"), "tenant_mine_transit_router")
		})
		s.consistently("the victim's rows with the tenant's NAD edited ("+edit.reason+")", 2*time.Second, victimRows,
			func() string { return rowsOf(s.nbRows(), "victim_net") })
		if count(edit.reason) <= counted[edit.reason] {
			t.Errorf("udnkit_untrusted_nads_total{reason=%s} did not move", edit.reason)
		}
		counted[edit.reason] = count(edit.reason)
		cur.Spec, cur.Annotations = orig.Spec, orig.Annotations
		if err := s.c.Update(s.ctx, &cur); err != nil {
			t.Fatal(err)
		}
		s.eventually("the tenant's rows back once its NAD is reverted", func() bool {
			return rowsOf(s.nbRows(), "victim_net") == victimRows &&
				strings.Contains(s.nbctl("--bare", "--columns=name", "list", "Logical_Router"), "tenant_mine_transit_router")
		})
	}
}

// A CUDN's NADs (one per selected namespace) pass the rule wherever they
// are, so a tenant who can read the CUDN's UID can write a copy in its own
// namespace that passes too. The network's rows follow its oldest NAD that
// passes: the copy, with its own subnets, changes no row, nor does its
// deletion.
func TestCUDNNADCopyDoesNotSteerRows(t *testing.T) {
	s := newStack(t)
	if _, err := Setup(s.ctx, s.mgr, s.opts()); err != nil {
		t.Fatal(err)
	}
	s.start()
	s.create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", Annotations: map[string]string{ovnk.AnnotationNodeID: "2"}}},
		namespace("blue"), namespace("attacker"))
	cudn := &udnv1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: "shared"},
		Spec: udnv1.ClusterUserDefinedNetworkSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "blue"}},
			Network: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2,
				Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.150.0.0/24"}}}}}
	s.create(cudn)
	yes := true
	owned := func(ns, subnets string) *nadv1.NetworkAttachmentDefinition {
		nad := labeledNAD(ns, "shared", l2Conf("cluster_udn_shared", ns+"/shared", subnets, ""), idAnnotations("4", "[16711684,16715779]"))
		nad.OwnerReferences = []metav1.OwnerReference{{APIVersion: udnv1.GroupVersion.String(), Kind: udnv1.KindClusterUserDefinedNetwork,
			Name: cudn.Name, UID: cudn.UID, Controller: &yes}}
		return nad
	}
	s.create(owned("blue", "10.150.0.0/24"))
	const router = "cluster_udn_shared_transit_router"
	s.eventually("the CUDN's network programmed", func() bool {
		return strings.Contains(s.nbctl("--bare", "--columns=name", "list", "Logical_Router"), router)
	})
	before := s.nbRows()
	// The tie-breaker after creationTimestamp is the namespace: "attacker"
	// sorts before "blue", so the copy must lose on its age alone.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	copied := owned("attacker", "10.66.0.0/24")
	s.create(copied)
	s.consistently("the Northbound rows with a copy of the CUDN's NAD", 3*time.Second, before, s.nbRows)
	if err := s.c.Delete(s.ctx, copied); err != nil {
		t.Fatal(err)
	}
	s.consistently("the Northbound rows after the copy went", 2*time.Second, before, s.nbRows)
}
