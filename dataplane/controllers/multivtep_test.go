package controllers

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers"
)

func blueNAD() *nadv1.NetworkAttachmentDefinition {
	return &nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "tenant-blue",
			Labels:      map[string]string{ovnk.LabelUserDefinedNetwork: ""},
			Annotations: map[string]string{ovnk.AnnotationNetworkID: "1", ovnk.AnnotationTunnelKeys: "[16711685,16715780]"}},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: l2Config},
	}
}

// vtepPod is a pod of ns1/tenant-blue on node with its pod-networks entry.
func vtepPod(name, node, ip, encap string) *corev1.Pod {
	return vtepPodOf("ns1/tenant-blue", name, node, ip, encap)
}

// vtepPodOf is a pod in nad's namespace with a pod-networks entry for nad.
func vtepPodOf(nad, name, node, ip, encap string) *corev1.Pod {
	ns, _, _ := strings.Cut(nad, "/")
	mac := ovnk.MACFromIP(netip.MustParseAddr(ip)).String()
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{
		ovnk.AnnotationPodNetworks: fmt.Sprintf(`{%q:{"ip_addresses":["%s/24"],"mac_address":"%s","role":"primary","encap_ip":"%s"}}`,
			nad, ip, mac, encap)}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
}

// OKEP-5535 for a primary Layer2 network, from the API state: pods on a
// remote node with three VTEPs get remote ports on the layer2 switch whose
// Southbound Port_Binding.encap is the Encap row of their encap_ip; local
// pods and a pod with an unknown encap IP get none; a port goes with its pod
// and all go with the NAD.
func TestMultiVTEPFromAPIState(t *testing.T) {
	s := vtepStack(t, "10.0.0.2", "10.0.0.3", "10.0.0.4")

	nodeA := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Annotations: map[string]string{ovnk.AnnotationNodeID: "2"}}}
	nodeB := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b", Annotations: map[string]string{ovnk.AnnotationNodeID: "3",
		ovnk.AnnotationNodeEncapIPs:                   `["10.0.0.2","10.0.0.3","10.0.0.4"]`,
		ovnk.AnnotationNodeTransitSwitchPortTunnelIDs: "[3,4,5]"}}}
	pod1 := vtepPod("pod-1", "node-b", "203.203.0.5", "10.0.0.3")
	s.create(nodeA, nodeB, namespace("ns1"))
	created := time.Now()
	s.createNAD(blueNAD())
	s.create(pod1,
		vtepPod("local", "node-a", "203.203.0.6", "10.0.1.2"),
		vtepPod("bad", "node-b", "203.203.0.7", "10.9.9.9"))

	ports := func() string {
		return normalized(s.nbctl("--format=csv", "--data=bare", "--no-headings", "--columns=name,type,addresses,options",
			"find", "Logical_Switch_Port", "type=remote", `external_ids:"k8s.ovn.org/udnkit-piece"=multi-vtep`))
	}
	encapOf := s.encapOf
	const port1, port2 = "ns1.tenant.blue_ns1_pod-1", "ns1.tenant.blue_ns1_pod-2"
	s.eventually("pod-1's remote port and encap", func() bool {
		return ports() == port1+",remote,0a:58:cb:cb:00:05 203.203.0.5,requested-chassis=5e1f0c1a-node-b" &&
			strings.Contains(s.sbctl("--bare", "--columns=logical_port", "list", "Port_Binding"), port1) &&
			encapOf(port1) == `"10.0.0.3"`
	})
	// The network's first reconcile finds no switch yet: the Layer2
	// topology's Apply wakes it, well before the TopologyWait backstop.
	if took := time.Since(created); took >= zone.TopologyWait*3/4 {
		t.Errorf("pod-1's remote port came %v after the NAD: the multi-VTEP controller waited for its backstop (%v), not for the topology's Apply", took, zone.TopologyWait)
	}

	// A NAD with udnkit's label and no owner names the network, and a pod
	// of its namespace on node-b claims a VTEP of it: the dataplane ignores
	// the NAD, so the pod gets no port on the network's switch.
	s.create(namespace("attacker"), labeledNAD("attacker", "evil", l2Conf("ns1_tenant-blue", "attacker/evil", "203.203.0.0/24", ""),
		idAnnotations("1", "[16711685,16715780]")), vtepPodOf("attacker/evil", "evil-pod", "node-b", "203.203.0.66", "10.0.0.2"))
	s.consistently("the network's remote ports with a forged NAD's pod on node-b", 2*time.Second,
		port1+",remote,0a:58:cb:cb:00:05 203.203.0.5,requested-chassis=5e1f0c1a-node-b", ports)

	// A pod on another VTEP of the same node: its own port and Encap.
	s.create(vtepPod("pod-2", "node-b", "203.203.0.8", "10.0.0.4"))
	s.eventually("pod-2's remote port and encap", func() bool {
		got := ports()
		return strings.Contains(got, port2+",remote,0a:58:cb:cb:00:08 203.203.0.8,requested-chassis=5e1f0c1a-node-b") &&
			strings.Count(got, "\n") == 1 && s.sbctl("--bare", "--columns=logical_port", "find", "Port_Binding", "logical_port="+port2) != "" &&
			encapOf(port2) == `"10.0.0.4"`
	})
	if got := encapOf(port1); got != `"10.0.0.3"` {
		t.Errorf("pod-1's encap changed to %s", got)
	}

	// pod-1 goes: its port goes, pod-2's stays.
	if err := s.c.Delete(s.ctx, pod1, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	s.eventually("pod-1's port removed", func() bool {
		got := ports()
		return !strings.Contains(got, port1) && strings.HasPrefix(got, port2+",")
	})

	// The NAD goes: every port of the network goes.
	if err := s.c.Delete(s.ctx, blueNAD()); err != nil {
		t.Fatal(err)
	}
	s.eventually("ports removed with the network", func() bool {
		return s.nbctl("--bare", "--columns=name", "list", "Logical_Switch_Port") == ""
	})

	// Rejected annotations name the annotation and the field.
	bad := vtepPod("p", "node-b", "203.203.0.9", "10.0.0.300")
	if _, _, err := zone.Layer2PodPortFromPod(bad, "ns1/tenant-blue"); err == nil ||
		!strings.Contains(err.Error(), `pod ns1/p annotation k8s.ovn.org/pod-networks["ns1/tenant-blue"].encap_ip`) {
		t.Errorf("bad encap_ip: err = %v", err)
	}
	noMAC := vtepPod("p", "node-b", "203.203.0.9", "10.0.0.3")
	noMAC.Annotations[ovnk.AnnotationPodNetworks] = `{"ns1/tenant-blue":{"ip_addresses":["203.203.0.9/24"],"encap_ip":"10.0.0.3"}}`
	if _, _, err := zone.Layer2PodPortFromPod(noMAC, "ns1/tenant-blue"); err == nil ||
		!strings.Contains(err.Error(), `pod ns1/p annotation k8s.ovn.org/pod-networks["ns1/tenant-blue"].mac_address`) {
		t.Errorf("missing mac_address: err = %v", err)
	}
	if _, ok, err := zone.Layer2PodPortFromPod(vtepPod("p", "node-b", "203.203.0.9", ""), "ns1/tenant-blue"); ok || err != nil {
		t.Errorf("pod without encap_ip: ok = %v, err = %v; want left out", ok, err)
	}
	if _, err := zone.VTEPNodeFromNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{
		ovnk.AnnotationNodeEncapIPs: `["10.0.0.2","x"]`}}}); err == nil ||
		!strings.Contains(err.Error(), `node n annotation k8s.ovn.org/node-encap-ips: "x" is not an IP`) {
		t.Errorf("bad encap IP: err = %v", err)
	}
}

// OKEP-5535 for a primary Layer3 network, through the whole chain: the
// reconcilers give the UDN its NAD and node-b (three VTEPs, another zone)
// its tunnel IDs and host subnet; a pod there on its second VTEP gets the
// tstor-node-b_encap1 remote port and the node-subnet route via it, a pod on
// the third VTEP a second port and a /32; both go with their pods, and the
// Layer3 topology's transit switch (node-a's local port) stays.
func TestLayer3MultiVTEPFromAPIState(t *testing.T) {
	s := newStack(t)
	if err := reconcilers.SetupWithManager(s.mgr, reconcilers.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	s.remoteChassis("node-b", "172.18.0.3", "172.18.0.4", "172.18.0.5")
	o := s.opts()
	o.Local = func(n *corev1.Node) bool { return n.Name != "node-b" }
	o.Policy.EgressIP = true // the subnet policies, whose router must stay, are EgressIP's
	rs, err := Setup(s.ctx, s.mgr, o)
	if err != nil {
		t.Fatal(err)
	}
	rs.MultiVTEP.EncapRetry = 100 * time.Millisecond
	s.start()
	ns := namespace("tenant-green")
	ns.Labels = map[string]string{ovnk.LabelPrimaryUserDefinedNetwork: ""}
	s.create(ns, &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-green", Name: "green"},
		Spec: udnv1.UserDefinedNetworkSpec{Topology: udnv1.NetworkTopologyLayer3, Layer3: &udnv1.Layer3Config{
			Role: udnv1.NetworkRolePrimary, Subnets: []udnv1.Layer3Subnet{{CIDR: "10.200.0.0/16", HostSubnet: 24}}}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Annotations: map[string]string{ovnk.AnnotationNodeEncapIPs: `["172.18.0.2"]`}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b", Annotations: map[string]string{ovnk.AnnotationNodeEncapIPs: `["172.18.0.3","172.18.0.4","172.18.0.5"]`}}})

	var tunnelIDs []int
	var subnet netip.Prefix
	s.eventually("node-b's tunnel IDs and host subnet", func() bool {
		var n corev1.Node
		if s.c.Get(s.ctx, client.ObjectKey{Name: "node-b"}, &n) != nil ||
			json.Unmarshal([]byte(n.Annotations[ovnk.AnnotationNodeTransitSwitchPortTunnelIDs]), &tunnelIDs) != nil {
			return false
		}
		subnets, err := zone.NodeSubnetsFromNode(&n, "tenant-green_green")
		if err != nil || len(subnets) != 1 || len(tunnelIDs) != 3 {
			return false
		}
		subnet = subnets[0]
		return true
	})
	podIP := func(host byte) string {
		a := subnet.Addr().As4()
		a[3] = host
		return netip.AddrFrom4(a).String()
	}
	pod := func(name, ip, encap string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-green", Name: name, Annotations: map[string]string{
			ovnk.AnnotationPodNetworks: fmt.Sprintf(`{"tenant-green/green":{"ip_addresses":["%s/24"],"mac_address":"%s","role":"primary","encap_ip":"%s"}}`,
				ip, ovnk.MACFromIP(netip.MustParseAddr(ip)), encap)}},
			Spec: corev1.PodSpec{NodeName: "node-b", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	}
	const ts, cr = "tenant.green_green_transit_switch", "tenant.green_green_ovn_cluster_router"
	// OKEP-5535's table: the port at tunnel ID k has 100.88.0.k and MAC 0a:58:64:58:00:k.
	tsp := func(id int) string { return fmt.Sprintf("0a:58:64:58:00:%02x 100.88.0.%d/16", id, id) }
	ports := func() string {
		return normalized(s.nbctl("--format=csv", "--data=bare", "--no-headings", "--columns=name,type,addresses", "find", "Logical_Switch_Port", "type=remote"))
	}
	routes := func() string { return normalized(s.nbctl("lr-route-list", cr)) }

	// The Layer3 topology applies once node-b has its annotations, racing
	// the pod's multi-VTEP port for the transit switch: the multi-VTEP
	// controller only references the switch and waits while it is missing.
	p1 := pod("pod-1", podIP(5), "172.18.0.4")
	s.create(p1)
	s.eventually("the encap1 port and the node-subnet route", func() bool {
		return ports() == "tenant.green_green_tstor-node-b_encap1,remote,"+tsp(tunnelIDs[1]) &&
			strings.Contains(routes(), fmt.Sprintf("%s 100.88.0.%d dst-ip", subnet, tunnelIDs[1]))
	})
	p2 := pod("pod-2", podIP(6), "172.18.0.5")
	s.create(p2)
	s.eventually("the encap2 port and the /32", func() bool {
		return strings.Contains(ports(), "tenant.green_green_tstor-node-b_encap2,remote,"+tsp(tunnelIDs[2])) &&
			strings.Contains(routes(), fmt.Sprintf("%s 100.88.0.%d dst-ip", podIP(6), tunnelIDs[2]))
	})
	s.eventually("each remote transit port's Port_Binding.encap is its VTEP's Encap", func() bool {
		return s.encapOf("tenant.green_green_tstor-node-b_encap1") == `"172.18.0.4"` && s.encapOf("tenant.green_green_tstor-node-b_encap2") == `"172.18.0.5"`
	})
	// The Layer3 topology created the transit switch, with its columns and
	// node-a's port; the multi-VTEP piece only added its ports.
	if got := s.nbctl("--bare", "--columns=external_ids", "find", "Logical_Switch", "name="+ts); !strings.Contains(got, "k8s.ovn.org/udnkit-piece=topology") {
		t.Errorf("the transit switch udnkit created is not the Layer3 topology's: %q", got)
	}
	if got := s.nbctl("--bare", "--columns=other_config", "find", "Logical_Switch", "name="+ts); !strings.Contains(got, "requested-tnl-key=") ||
		!strings.Contains(got, "interconn-ts="+ts) {
		t.Errorf("the transit switch lacks the topology's other_config: %q", got)
	}
	if s.nbctl("--bare", "--columns=name", "find", "Logical_Switch_Port", "name=tenant.green_green_tstor-node-a") == "" {
		t.Error("the transit switch lacks the Layer3 topology's port of node-a")
	}
	for _, p := range []*corev1.Pod{p1, p2} {
		if err := s.c.Delete(s.ctx, p, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	s.eventually("ports and routes go with the pods; the topology's transit switch stays with node-a's port only", func() bool {
		return ports() == "" && !strings.Contains(routes(), "100.88.0.") &&
			s.nbctl("--bare", "--columns=name", "find", "Logical_Switch_Port", "name=tenant.green_green_tstor-node-a") != "" &&
			len(strings.Fields(s.nbctl("--bare", "--columns=ports", "find", "Logical_Switch", "name="+ts))) == 1
	})
	// The subnet policies' router stays.
	if !strings.Contains(normalized(s.nbctl("lr-policy-list", cr)), "102 ip4.src == 10.200.0.0/16 && ip4.dst == 10.200.0.0/16 allow") {
		t.Errorf("the cluster router lost its subnet policies:\n%s", s.nbctl("lr-policy-list", cr))
	}
	if _, err := zone.NodeSubnetsFromNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{
		ovnk.AnnotationNodeSubnets: `{"net":["10.1.0.0/33"]}`}}}, "net"); err == nil || !strings.Contains(err.Error(), `node n annotation k8s.ovn.org/node-subnets["net"]`) {
		t.Errorf("bad node subnet: err = %v", err)
	}
}
