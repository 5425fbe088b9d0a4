package controllers

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/dataplane/topology/policy"
	"github.com/udnkit/udnkit/ovnk"
)

// The zone's rows, applied only when what they are built from changes,
// still follow each change, against a real apiserver and ovsdb-server: a
// node's new host address reaches the node-ips set, its new default
// subnet the isolation port group's allow-from-host ACL, and a
// UDN-enabled service created after the networks (the cluster's DNS) the
// udn-enabled-svc sets.
func TestZoneRowsFollowNodesAndServices(t *testing.T) {
	s, _ := policyStack(t, true)
	nodeIPs := func() []string {
		return s.column("Address_Set", "addresses", "external_ids:k8s.ovn.org/name=node-ips")
	}
	s.eventually("the zone's node-ips set", func() bool { return slices.Equal(nodeIPs(), []string{"192.0.2.2", "2001:db8::2"}) })
	fromHost := func() string {
		got := s.column("ACL", "match", "external_ids:k8s.ovn.org/name=AllowHostPrimaryUDN")
		return strings.Join(got, "\n")
	}
	if got := fromHost(); !strings.HasSuffix(got, "(ip4.src==10.244.2.2 || ip6.src==fd00:10:244:3::2)") {
		t.Fatalf("isolation allow-from-host ACL match %q", got)
	}

	var node corev1.Node
	if err := s.c.Get(s.ctx, client.ObjectKey{Name: "node-a"}, &node); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Annotations[ovnk.AnnotationHostCIDRs] = `["192.0.2.2/24","192.0.2.9/24","2001:db8::2/64"]`
	if err := s.c.Patch(s.ctx, &node, patch); err != nil {
		t.Fatal(err)
	}
	s.eventually("node-a's new host address in node-ips", func() bool {
		return slices.Equal(nodeIPs(), []string{"192.0.2.2 192.0.2.9", "2001:db8::2"})
	})

	patch = client.MergeFrom(node.DeepCopy())
	node.Annotations[ovnk.AnnotationNodeSubnets] = `{"default":["10.244.7.0/24","fd00:10:244:3::/64"],` +
		`"ns2_tenant-green":["10.200.1.0/24","2001:db8:200:2::/64"]}`
	if err := s.c.Patch(s.ctx, &node, patch); err != nil {
		t.Fatal(err)
	}
	s.eventually("node-a's new default subnet in the allow-from-host ACL", func() bool {
		return strings.HasSuffix(fromHost(), "(ip4.src==10.244.7.2 || ip6.src==fd00:10:244:3::2)")
	})

	svcIPs := func() string {
		return strings.Join(s.column("Address_Set", "addresses", "external_ids:k8s.ovn.org/name=udn-enabled-svc-cluster-ips"), " ")
	}
	if strings.Contains(svcIPs(), "10.0.0.53") {
		t.Fatalf("udn-enabled-svc addresses %q before the DNS service", svcIPs())
	}
	s.create(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ovnk.DNSService.Namespace, Name: ovnk.DNSService.Name},
		Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.53", Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}})
	s.eventually("the DNS service's ClusterIP in udn-enabled-svc", func() bool { return strings.Contains(svcIPs(), "10.0.0.53") })
}

// The zone's rows deleted by another client come back with no change of
// what they are built from: the resync of the zone's rows applies them again.
func TestZoneRowsHealAForeignDeletion(t *testing.T) {
	s, _ := policyStack(t, true)
	pg := policy.IsolationPortGroup()
	nodeIPs := func() []string {
		return s.column("Address_Set", "addresses", "external_ids:k8s.ovn.org/name=node-ips")
	}
	s.eventually("the zone's rows", func() bool {
		return len(s.column("Port_Group", "name", "name="+pg)) == 1 && slices.Equal(nodeIPs(), []string{"192.0.2.2", "2001:db8::2"})
	})
	s.nbctl("pg-del", pg)
	s.eventually("the isolation port group back", func() bool { return len(s.column("Port_Group", "name", "name="+pg)) == 1 })
	for _, set := range s.column("Address_Set", "_uuid", "external_ids:k8s.ovn.org/name=node-ips") {
		s.nbctl("clear", "Address_Set", set, "addresses")
	}
	s.eventually("the node-ips addresses back", func() bool { return slices.Equal(nodeIPs(), []string{"192.0.2.2", "2001:db8::2"}) })
}
