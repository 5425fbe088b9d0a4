package controllers

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/dataplane/controllers/pods"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/kubevirt"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/reconcilers"
	"github.com/udnkit/udnkit/reconcilers/addresses"
)

// podStack is a stack whose dataplane writes pod ports, in node-a's zone.
func podStack(t *testing.T) *stack {
	s := newStack(t)
	o := s.opts()
	o.Zone, o.Local, o.Cluster.MTU = "node-a", zone.InZone("node-a"), ovnk.DefaultMTU
	if _, err := Setup(s.ctx, s.mgr, o); err != nil {
		t.Fatal(err)
	}
	return s
}

// primaryLayer2Stack is an addressedPodStack with a primary namespace with
// a Primary Layer2 UDN of subnets, and nodes node-a and node-b.
func primaryLayer2Stack(t *testing.T, ns, name string, subnets ...udnv1.CIDR) *stack {
	s := addressedPodStack(t)
	s.create(testobj.MakeNamespace(ns).Primary().Obj(),
		testobj.MakeUDN(ns, name).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, subnets...)).Obj(),
		testobj.MakeNode("node-a").Obj(), testobj.MakeNode("node-b").Obj())
	return s
}

// addressedPodStack is a running podStack with udnkit's reconcilers and
// address reconciler.
func addressedPodStack(t *testing.T) *stack {
	s := podStack(t)
	if err := reconcilers.SetupWithManager(s.mgr, reconcilers.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if err := addresses.SetupWithManager(s.mgr, ovnk.DefaultClusterConfig()); err != nil {
		t.Fatal(err)
	}
	s.start()
	return s
}

// lsp reads one column of a port ("" when there is no such port).
func (s *stack) lsp(port, column string) string {
	s.t.Helper()
	if s.nbctl("--bare", "--columns=name", "find", "Logical_Switch_Port", "name="+port) == "" {
		return ""
	}
	return s.nbctl("get", "Logical_Switch_Port", port, column)
}

func (s *stack) hasPort(port string) bool {
	return s.nbctl("--bare", "--columns=name", "find", "Logical_Switch_Port", "name="+port) != ""
}

func (s *stack) uid(pod *corev1.Pod) string {
	s.t.Helper()
	var p corev1.Pod
	if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
		s.t.Fatal(err)
	}
	return string(p.UID)
}

// A Primary Layer2 UDN, its pods addressed by udnkit's address reconciler:
// the zone of node-a holds node-a's pod's port and node-b's pod's port as
// type remote (east-west traffic crosses the transit switch), each with
// upstream's addresses, port security, options and external IDs; a port
// removed behind udnkit's back comes back; a deleted pod's port goes.
func TestPodPortsOnAPrimaryLayer2Network(t *testing.T) {
	s := primaryLayer2Stack(t, "tenant-blue", "blue", "10.100.0.0/16", "fd00:100::/64")
	local := testobj.MakePod("tenant-blue", "pod1").Node("node-a").Running().Obj()
	remote := testobj.MakePod("tenant-blue", "pod2").Node("node-b").Running().Obj()
	s.create(local, remote)
	const lp, rp = "tenant.blue.blue_tenant-blue_pod1", "tenant.blue.blue_tenant-blue_pod2"
	s.eventually("both pods' ports", func() bool { return s.hasPort(lp) && s.hasPort(rp) })

	ips := podIPs2(s, local, "tenant-blue/blue")
	if got := s.lsp(lp, "addresses"); !strings.Contains(got, " "+ips[0]+" "+ips[1]) {
		t.Errorf("addresses %s, want the MAC then %v", got, ips)
	}
	if a, ps := s.lsp(lp, "addresses"), s.lsp(lp, "port_security"); a != ps {
		t.Errorf("port_security %s, want the addresses %s", ps, a)
	}
	opts := s.lsp(lp, "options")
	for _, want := range []string{"iface-id-ver=\"" + s.uid(local) + "\"", "requested-chassis=\"" + chassisOf("node-a") + "\"", "requested-tnl-key="} {
		if !strings.Contains(opts, want) {
			t.Errorf("local port options %s, want %s", opts, want)
		}
	}
	ids := s.lsp(lp, "external_ids")
	for _, want := range []string{`namespace=tenant-blue`, `pod="true"`, `"k8s.ovn.org/nad"="tenant-blue/blue"`,
		`"k8s.ovn.org/network"=tenant-blue_blue`, `"k8s.ovn.org/topology"=layer2`} {
		if !strings.Contains(ids, want) {
			t.Errorf("local port external_ids %s, want %s", ids, want)
		}
	}
	if typ := s.lsp(lp, "type"); typ != `""` {
		t.Errorf("local port type %s, want none", typ)
	}
	if typ, opts := s.lsp(rp, "type"), s.lsp(rp, "options"); typ != "remote" || !strings.Contains(opts, chassisOf("node-b")) {
		t.Errorf("node-b's pod: type %s options %s, want remote on node-b's chassis", typ, opts)
	}
	if sw := s.nbctl("lsp-get-ls", lp); !strings.Contains(sw, "tenant.blue_blue_ovn_layer2_switch") {
		t.Errorf("port on %s, want the network's layer2 switch", sw)
	}

	s.nbctl("lsp-del", lp)
	s.eventually("the removed port healed", func() bool { return s.hasPort(lp) })

	if err := s.c.Delete(s.ctx, local, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	s.eventually("the deleted pod's port removed", func() bool { return !s.hasPort(lp) })
	if !s.hasPort(rp) {
		t.Errorf("the other pod's port went with the deleted pod's")
	}
}

// podIPs2 waits for a pod's addresses on a NAD and returns them without
// their prefix lengths.
func podIPs2(s *stack, pod *corev1.Pod, nad string) []string {
	s.t.Helper()
	var ips []string
	s.eventually("pod "+pod.Name+" addressed", func() bool {
		var p corev1.Pod
		if s.c.Get(s.ctx, client.ObjectKeyFromObject(pod), &p) != nil {
			return false
		}
		ips = nil
		if pn, err := podannotation.DecodePodNetwork(p.Annotations, nad); err == nil && pn != nil {
			for _, a := range pn.IPAddresses {
				ips = append(ips, strings.Split(a, "/")[0])
			}
		}
		return len(ips) > 0
	})
	return ips
}

const (
	greenL3Conf = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"tenant-green_green","netAttachDefName":"tenant-green/green",` +
		`"topology":"layer3","role":"secondary","subnets":"10.128.0.0/14/23"}`
	redL2Conf = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"tenant-red_back","netAttachDefName":"tenant-red/back",` +
		`"topology":"layer2","role":"secondary","subnets":"10.50.0.0/16"}`
	redLocalnetConf = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"tenant-red_phys","netAttachDefName":"tenant-red/phys",` +
		`"topology":"localnet","role":"secondary","subnets":"192.168.100.0/24","physicalNetworkName":"physnet-a","vlanID":100}`
)

func entry(nad, ip, mac string) string {
	return `{"` + nad + `":{"ip_addresses":["` + ip + `"],"mac_address":"` + mac + `","role":"secondary"}}`
}

// A Secondary Layer3 network and a Localnet network, NADs and pod
// annotations as OVN-Kubernetes' cluster manager would write them: the
// Layer3 pod of node-a gets its port on node-a's switch once the node has
// its host subnet, the pod of node-b (another zone) none; a malformed annotation leaves the port as it was
// and raises a Warning; a finished pod's port goes. The Localnet network
// gets its switch, its localnet port on physnet-a with VLAN 100, and its
// pod's port, all removed with its NAD; a Secondary Layer2 network its
// switch (the transit switch of its network ID) with a local and a remote
// port.
func TestPodPortsOnSecondaryAndLocalnetNetworks(t *testing.T) {
	s := podStack(t)
	s.start()
	nodeA := testobj.MakeNode("node-a").Obj()
	s.create(namespace("tenant-green"), namespace("tenant-red"), nodeA, testobj.MakeNode("node-b").Obj())
	// The node switch the Layer3 topology writes.
	s.nbctl("ls-add", "tenant.green_green_node-a")
	s.createNAD(labeledNAD("tenant-green", "green", greenL3Conf, nil), labeledNAD("tenant-red", "phys", redLocalnetConf, nil),
		labeledNAD("tenant-red", "back", redL2Conf, map[string]string{ovnk.AnnotationNetworkID: "3"}))

	l3a := testobj.MakePod("tenant-green", "pod1").Node("node-a").Running().
		PodNetworks(entry("tenant-green/green", "10.128.0.5/23", "0a:58:0a:80:00:05")).Obj()
	l3b := testobj.MakePod("tenant-green", "pod2").Node("node-b").Running().
		PodNetworks(entry("tenant-green/green", "10.128.2.5/23", "0a:58:0a:80:02:05")).Obj()
	ln := testobj.MakePod("tenant-red", "pod3").Node("node-a").Running().
		PodNetworks(entry("tenant-red/phys", "192.168.100.5/24", "0a:58:c0:a8:64:05")).Obj()
	s.create(l3b, l3a, ln)
	backA := testobj.MakePod("tenant-red", "pod4").Node("node-a").Running().PodNetworks(
		`{"tenant-red/back":{"ip_addresses":["10.50.0.4/16"],"mac_address":"0a:58:0a:32:00:04","tunnel_id":10,"role":"secondary"}}`).Obj()
	backB := testobj.MakePod("tenant-red", "pod5").Node("node-b").Running().PodNetworks(
		`{"tenant-red/back":{"ip_addresses":["10.50.0.5/16"],"mac_address":"0a:58:0a:32:00:05","tunnel_id":11,"role":"secondary"}}`).Obj()
	s.create(backA, backB)
	const backSwitch, backLocal, backRemote = "tenant.red_back_ovn_layer2_switch", "tenant.red.back_tenant-red_pod4", "tenant.red.back_tenant-red_pod5"
	s.eventually("the Secondary Layer2 switch and both pods' ports", func() bool { return s.hasPort(backLocal) && s.hasPort(backRemote) })
	if oc := s.nbctl("get", "Logical_Switch", backSwitch, "other_config"); !strings.Contains(oc, `requested-tnl-key="16711686"`) ||
		!strings.Contains(oc, `interconn-ts=`+backSwitch) || !strings.Contains(oc, `subnet="10.50.0.0/16"`) {
		t.Errorf("Secondary Layer2 switch other_config %s, want the transit switch of network ID 3", oc)
	}
	if typ, opts := s.lsp(backRemote, "type"), s.lsp(backRemote, "options"); typ != "remote" || !strings.Contains(opts, `requested-tnl-key="11"`) {
		t.Errorf("node-b's Secondary Layer2 pod: type %s options %s, want remote with its tunnel key", typ, opts)
	}
	// The network's three load balancer groups, the cluster-wide and switch
	// ones on its switch (as upstream's Layer2 controller for any role).
	backGroups := ovnk.NamesFor("tenant-red_back")
	groupUUID := func(name string) string {
		return s.nbctl("--bare", "--columns=_uuid", "find", "Load_Balancer_Group", "name="+name)
	}
	if lbg := s.nbctl("--bare", "--columns=load_balancer_group", "list", "Logical_Switch", backSwitch); groupUUID(backGroups.ClusterRouterLBGroup()) == "" ||
		len(strings.Fields(lbg)) != 2 || !strings.Contains(lbg, groupUUID(backGroups.ClusterLBGroup())) ||
		!strings.Contains(lbg, groupUUID(backGroups.ClusterSwitchLBGroup())) {
		t.Errorf("Secondary Layer2 switch load_balancer_group %q, want the cluster-wide and switch groups of the network's three", lbg)
	}
	const l3Port, l3Remote, lnPort = "tenant.green.green_tenant-green_pod1", "tenant.green.green_tenant-green_pod2", "tenant.red.phys_tenant-red_pod3"
	s.eventually("the Localnet pod's port", func() bool { return s.hasPort(lnPort) })
	if s.hasPort(l3Port) {
		t.Errorf("a Layer3 pod got a port before its node had host subnets of the network")
	}
	// The cluster manager gives node-a its host subnet of the network.
	nodeA.Annotations[ovnk.AnnotationNodeSubnets] = `{"tenant-green_green":["10.128.0.0/23"]}`
	if err := s.c.Update(s.ctx, nodeA); err != nil {
		t.Fatal(err)
	}
	s.eventually("the Layer3 pod's port", func() bool { return s.hasPort(l3Port) })
	if s.hasPort(l3Remote) {
		t.Errorf("node-b's Layer3 pod has a port in node-a's zone")
	}
	if got := s.lsp(l3Port, "addresses"); got != `["0a:58:0a:80:00:05 10.128.0.5"]` {
		t.Errorf("Layer3 port addresses %s", got)
	}
	if sw := s.nbctl("lsp-get-ls", l3Port); !strings.Contains(sw, "tenant.green_green_node-a") {
		t.Errorf("Layer3 port on %s, want node-a's switch", sw)
	}
	if opts := s.lsp(l3Port, "options"); strings.Contains(opts, "requested-tnl-key") {
		t.Errorf("Layer3 port options %s: a tunnel key outside Layer2", opts)
	}
	const lnSwitch, lnLocalnet = "tenant.red_phys_ovn_localnet_switch", "tenant.red_phys_ovn_localnet_port"
	if sw := s.nbctl("lsp-get-ls", lnPort); !strings.Contains(sw, lnSwitch) {
		t.Errorf("Localnet pod port on %s, want %s", sw, lnSwitch)
	}
	if typ, opts, tag := s.lsp(lnLocalnet, "type"), s.lsp(lnLocalnet, "options"), s.lsp(lnLocalnet, "tag_request"); typ != "localnet" ||
		opts != `{network_name=physnet-a}` || tag != "100" {
		t.Errorf("localnet port: type %s options %s tag_request %s, want localnet on physnet-a with VLAN 100", typ, opts, tag)
	}
	if oc := s.nbctl("get", "Logical_Switch", lnSwitch, "other_config"); oc != `{subnet="192.168.100.0/24"}` {
		t.Errorf("Localnet switch other_config %s", oc)
	}

	// A malformed entry: the port stays as built, and a Warning says why.
	before := s.lsp(l3Port, "addresses")
	var cur corev1.Pod
	if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(l3a), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Annotations[ovnk.AnnotationPodNetworks] = `{"tenant-green/green":{"ip_addresses":["10.128.0.5/23"],"mac_address":"not-a-mac"}}`
	if err := s.c.Update(s.ctx, &cur); err != nil {
		t.Fatal(err)
	}
	s.eventually("a PodPortFailed Warning on the pod", func() bool {
		var evs eventsv1.EventList
		if s.c.List(s.ctx, &evs, client.InNamespace("tenant-green")) != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Reason == pods.ReasonPodPortFailed && e.Regarding.Name == "pod1" {
				return true
			}
		}
		return false
	})
	if got := s.lsp(l3Port, "addresses"); got != before {
		t.Errorf("after a malformed annotation the port's addresses are %s, want %s kept", got, before)
	}

	// The pod finishes: its port goes.
	cur.Status.Phase = corev1.PodSucceeded
	if err := s.c.Status().Update(s.ctx, &cur); err != nil {
		t.Fatal(err)
	}
	s.eventually("the finished pod's port removed", func() bool { return !s.hasPort(l3Port) })
	if !s.hasPort(lnPort) {
		t.Errorf("the Localnet pod's port went with another network's pod")
	}

	// The Localnet network's NAD goes: its switch, localnet port and pod
	// port go with it; the other networks' rows stay.
	if err := s.c.Delete(s.ctx, labeledNAD("tenant-red", "phys", "", nil)); err != nil {
		t.Fatal(err)
	}
	s.eventually("the Localnet network's rows removed", func() bool {
		return !s.hasPort(lnPort) && !s.hasPort(lnLocalnet) &&
			s.nbctl("--bare", "--columns=name", "find", "Logical_Switch", "name="+lnSwitch) == ""
	})
	if !s.hasPort(backLocal) {
		t.Errorf("the Secondary Layer2 pod's port went with the Localnet network")
	}

	// The Secondary Layer2 network's NAD goes: its load balancer groups go
	// with its switch.
	if err := s.c.Delete(s.ctx, labeledNAD("tenant-red", "back", "", nil)); err != nil {
		t.Fatal(err)
	}
	s.eventually("the Secondary Layer2 network's switch and load balancer groups removed", func() bool {
		return s.nbctl("--bare", "--columns=name", "find", "Logical_Switch", "name="+backSwitch) == "" &&
			groupUUID(backGroups.ClusterLBGroup()) == "" && groupUUID(backGroups.ClusterSwitchLBGroup()) == "" &&
			groupUUID(backGroups.ClusterRouterLBGroup()) == ""
	})
}

// A KubeVirt VM's live migration on a Primary Layer2 network, as
// upstream's pod controller handles it: until the target's domain is ready
// its port is disabled without addresses (the source keeps the VM's
// traffic); once ready, the target's port is enabled with the addresses
// and the source's disabled without them. Each port stays bound to its own
// node's chassis.
func TestPodPortsFollowALiveMigration(t *testing.T) {
	s := primaryLayer2Stack(t, "tenant-vm", "vmnet", "10.150.0.0/16")
	vmPod := func(name, node string) *corev1.Pod {
		return testobj.MakePod("tenant-vm", name).Node(node).Running().VM("vm1").
			Labels(map[string]string{kubevirt.LabelVM: "vm1"}).Annotation(kubevirt.AnnotationAllowLiveMigration, "").Obj()
	}
	src, dst := vmPod("virt-launcher-vm1-a", "node-a"), vmPod("virt-launcher-vm1-b", "node-b")
	dns := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ovnk.DNSService.Namespace, Name: ovnk.DNSService.Name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}}
	s.create(dns, src)
	ip := podIPs2(s, src, "tenant-vm/vmnet")[0]
	time.Sleep(1100 * time.Millisecond) // a later creation timestamp: the target is the newer pod
	s.create(dst)
	const sp, dp = "tenant.vm.vmnet_tenant-vm_virt-launcher-vm1-a", "tenant.vm.vmnet_tenant-vm_virt-launcher-vm1-b"
	s.eventually("the target's port disabled, the source's enabled", func() bool {
		return s.lsp(dp, "enabled") == "false" && s.lsp(dp, "addresses") == "[]" && strings.Contains(s.lsp(sp, "addresses"), " "+ip)
	})
	if e := s.lsp(sp, "enabled"); e != "[]" {
		t.Errorf("source port enabled %s during the migration, want unset", e)
	}
	if ps := s.lsp(dp, "port_security"); !strings.Contains(ps, " "+ip) {
		t.Errorf("target port_security %s, want the VM's address %s", ps, ip)
	}

	var cur corev1.Pod
	if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(dst), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Annotations[kubevirt.AnnotationMigrationTargetReady] = "2026-11-29T04:00:00Z"
	if err := s.c.Update(s.ctx, &cur); err != nil {
		t.Fatal(err)
	}
	s.eventually("the target's port enabled, the source's disabled", func() bool {
		return s.lsp(dp, "enabled") == "true" && strings.Contains(s.lsp(dp, "addresses"), " "+ip) &&
			s.lsp(sp, "enabled") == "false" && s.lsp(sp, "addresses") == "[]"
	})
	for port, node := range map[string]string{sp: "node-a", dp: "node-b"} {
		if opts := s.lsp(port, "options"); !strings.Contains(opts, chassisOf(node)) {
			t.Errorf("%s options %s, want requested-chassis %s", port, opts, chassisOf(node))
		}
	}
	vmDHCP(t, s, sp, dp, dns.Spec.ClusterIP)
}

// vmDHCP checks that both ports of a live-migrating VM name one
// DHCP_Options row holding upstream's values: the VM's network's gateway as
// router, the DNS service's ClusterIP, lease 3500 and the VM's hostname.
func vmDHCP(t *testing.T, s *stack, src, dst, dnsIP string) {
	t.Helper()
	row := s.lsp(src, "dhcpv4_options")
	if row == "[]" || row == "" || s.lsp(dst, "dhcpv4_options") != row {
		t.Fatalf("dhcpv4_options source %s target %s, want one DHCP_Options row on both", row, s.lsp(dst, "dhcpv4_options"))
	}
	opts := s.nbctl("get", "DHCP_Options", row, "options")
	for _, want := range []string{"router=\"10.150.0.1\"", "lease_time=\"3500\"", "dns_server=\"" + dnsIP + "\"",
		`hostname="\"vm1\""`, "server_id=\"169.254.1.1\"", "mtu=\"1400\""} {
		if !strings.Contains(opts, want) {
			t.Errorf("VM DHCP options %s lack %s", opts, want)
		}
	}
	if cidr := s.nbctl("get", "DHCP_Options", row, "cidr"); cidr != `"10.150.0.0/16"` {
		t.Errorf("VM DHCP cidr %s, want the network's subnet", cidr)
	}
}

// podNamingBackTwice is an addressedPodStack with namespace ns, its
// Secondary Layer2 UDN "back" of subnet, node node-a, and pod "pod1" on
// node-a naming "back" twice; it returns once both its ports exist.
func podNamingBackTwice(t *testing.T, ns string, subnet udnv1.CIDR) (*stack, *corev1.Pod) {
	s := addressedPodStack(t)
	s.create(namespace(ns), testobj.MakeUDN(ns, "back").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, subnet)).Obj(),
		testobj.MakeNode("node-a").Obj())
	pod := testobj.MakePod(ns, "pod1").Node("node-a").Running().Annotation(ovnk.AnnotationNetworks, "back,back").Obj()
	s.create(pod)
	prefix := strings.ReplaceAll(ns, "-", ".") + ".back"
	first, second := prefix+"_"+ns+"_pod1", prefix+".1_"+ns+"_pod1"
	s.eventually("both interfaces' ports", func() bool { return s.hasPort(first) && s.hasPort(second) })
	return s, pod
}

// A pod naming a Secondary Layer2 NAD twice (two interfaces on one
// network), end to end: udnkit's address reconciler writes two entries,
// "tenant-twice/back" and "tenant-twice/back/1" (upstream's
// GetIndexedNADKey, pkg/util/multi_network.go), with their own addresses
// and tunnel IDs; the dataplane writes two ports, named and labelled by
// their key as upstream's GetLogicalPortName and addLogicalPortToNetwork
// write them ("tenant.twice.back.1_..." and k8s.ovn.org/nad
// "tenant-twice/back/1"), and removes both with the pod.
func TestPodPortsOfANADNamedTwice(t *testing.T) {
	const ns = "tenant-twice"
	s, pod := podNamingBackTwice(t, ns, "10.70.0.0/24")
	const first, second = "tenant.twice.back_tenant-twice_pod1", "tenant.twice.back.1_tenant-twice_pod1"

	for port, key := range map[string]string{first: ns + "/back", second: ns + "/back/1"} {
		ips := podIPs2(s, pod, key)
		if got := s.lsp(port, "addresses"); !strings.HasSuffix(got, " "+ips[0]+`"]`) {
			t.Errorf("%s addresses %s, want its entry %s's address %v", port, got, key, ips)
		}
		if ids := s.lsp(port, "external_ids"); !strings.Contains(ids, `"k8s.ovn.org/nad"="`+key+`"`) || !strings.Contains(ids, `"k8s.ovn.org/network"=tenant-twice_back`) {
			t.Errorf("%s external_ids %s, want k8s.ovn.org/nad %s on network tenant-twice_back", port, ids, key)
		}
		if sw := s.nbctl("lsp-get-ls", port); !strings.Contains(sw, "tenant.twice_back_ovn_layer2_switch") {
			t.Errorf("%s on %s, want the network's switch", port, sw)
		}
	}
	if a, b := podIPs2(s, pod, ns+"/back"), podIPs2(s, pod, ns+"/back/1"); a[0] == b[0] {
		t.Errorf("both interfaces got %s", a[0])
	}
	if k1, k2 := s.lsp(first, "options:requested-tnl-key"), s.lsp(second, "options:requested-tnl-key"); k1 == k2 {
		t.Errorf("both ports have tunnel key %s", k1)
	}

	if err := s.c.Delete(s.ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	s.eventually("both ports removed with the pod", func() bool { return !s.hasPort(first) && !s.hasPort(second) })
}

// A pod's k8s.v1.cni.cncf.io/networks is an ordinary annotation: the API
// server and udnkit's pod webhook let it change on a running pod. When
// "back,back" becomes "back", the address reconciler keeps the
// "tenant-drop/back/1" entry (it only adds entries), and the dataplane
// wires only the keys the selection still names, as upstream's PodNADKeys
// (pkg/util/pod_annotation.go) reads a Secondary network's keys from the
// selection: the repeat's port goes, the first interface's port stays.
func TestPodPortOfARepeatDroppedFromTheSelection(t *testing.T) {
	const ns = "tenant-drop"
	s, pod := podNamingBackTwice(t, ns, "10.71.0.0/24")
	const first, second = "tenant.drop.back_tenant-drop_pod1", "tenant.drop.back.1_tenant-drop_pod1"
	firstAddrs := s.lsp(first, "addresses")

	var cur corev1.Pod
	if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(pod), &cur); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Annotations[ovnk.AnnotationNetworks] = "back"
	if err := s.c.Patch(s.ctx, &cur, patch); err != nil {
		t.Fatal(err)
	}
	s.eventually("the dropped repeat's port removed", func() bool { return !s.hasPort(second) })
	if got := s.lsp(first, "addresses"); got != firstAddrs {
		t.Errorf("the first interface's port addresses %s, want %s kept", got, firstAddrs)
	}
	if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(pod), &cur); err != nil {
		t.Fatal(err)
	}
	if pn, err := podannotation.DecodePodNetwork(cur.Annotations, ns+"/back/1"); err != nil || pn == nil {
		t.Errorf("the repeat's entry left pod-networks (%v); this test no longer shows the dataplane's own filtering", err)
	}
	time.Sleep(time.Second)
	if !s.hasPort(first) || s.hasPort(second) {
		t.Errorf("ports after the change settled: first %v second %v, want only the first", s.hasPort(first), s.hasPort(second))
	}
}
