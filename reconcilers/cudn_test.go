package reconcilers_test

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers"
	"github.com/udnkit/udnkit/reconcilers/internal/rtest"
)

// nadNamespaces lists the namespaces holding a NAD controlled by cudn.
func nadNamespaces(g Gomega, cudn *udnv1.ClusterUserDefinedNetwork) []string {
	var list nadv1.NetworkAttachmentDefinitionList
	g.Expect(k8s.List(ctx, &list, client.HasLabels{ovnk.LabelUserDefinedNetwork})).To(Succeed())
	var out []string
	for _, n := range list.Items {
		if ref := metav1.GetControllerOf(&n); ref != nil && ref.UID == cudn.UID && n.DeletionTimestamp == nil {
			out = append(out, n.Namespace)
		}
	}
	return out
}

func TestCUDNSelectsAndRelabels(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	sel := map[string]string{"tenant": "selectme"}
	a := newNamespace(t, "cudn-a", sel)
	b := newNamespace(t, "cudn-b", sel)
	c := newNamespace(t, "cudn-c", map[string]string{"tenant": "other"})
	cudn := testobj.MakeCUDN("physnet-ext").SelectLabels(sel).Spec(udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLocalnet, Localnet: &udnv1.LocalnetConfig{
		Role: udnv1.NetworkRoleSecondary, PhysicalNetworkName: "physnet-ext", Subnets: udnv1.DualStackCIDRs{"192.0.2.0/24"},
		ExcludeSubnets: []udnv1.CIDR{"192.0.2.0/28"}, MTU: 1500,
		VLAN: &udnv1.VLANConfig{Mode: udnv1.VLANModeAccess, Access: &udnv1.AccessVLANConfig{ID: 200}},
	}}).Obj()
	g.Expect(k8s.Create(ctx, cudn)).To(Succeed())
	expectCondition(t, cudn, metav1.ConditionTrue, udnv1.ReasonNADCreated,
		fmt.Sprintf("NetworkAttachmentDefinition has been created in following namespaces: [%s, %s]", a, b))
	g.Expect(nadNamespaces(g, cudn)).To(ConsistOf(a, b))
	g.Expect(nadConfig(g, a, "physnet-ext")).To(Equal(map[string]any{
		"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": "cluster_udn_physnet-ext", "netAttachDefName": a + "/physnet-ext",
		"topology": "localnet", "role": "secondary", "mtu": 1500.0, "subnets": "192.0.2.0/24", "excludeSubnets": "192.0.2.0/28",
		"physicalNetworkName": "physnet-ext", "vlanID": 200.0,
	}))
	idA := getNAD(g, a, "physnet-ext").Annotations[ovnk.AnnotationNetworkID]
	g.Expect(getNAD(g, b, "physnet-ext").Annotations[ovnk.AnnotationNetworkID]).To(Equal(idA), "one network ID per network")

	// Relabel: c joins, b leaves.
	setLabels(t, c, sel)
	setLabels(t, b, map[string]string{"tenant": "gone"})
	g.Eventually(func(g Gomega) []string { return nadNamespaces(g, cudn) }).WithTimeout(timeout).Should(ConsistOf(a, c))
	expectCondition(t, cudn, metav1.ConditionTrue, udnv1.ReasonNADCreated, fmt.Sprintf("[%s, %s]", a, c))

	// A new namespace appears.
	d := newNamespace(t, "cudn-d", sel)
	g.Eventually(func(g Gomega) []string { return nadNamespaces(g, cudn) }).WithTimeout(timeout).Should(ConsistOf(a, c, d))

	// A namespace leaving while a pod uses the NAD keeps it and says why.
	pod := usePod(t, d, "vm", d+"/physnet-ext")
	setLabels(t, d, nil)
	expectCondition(t, cudn, metav1.ConditionFalse, udnv1.ReasonSyncError, "cannot remove NetworkAttachmentDefinition "+d+"/physnet-ext is in use by pods ["+d+"/vm]")
	g.Expect(nadNamespaces(g, cudn)).To(ContainElement(d))
	deletePod(t, pod)
	g.Eventually(func(g Gomega) []string { return nadNamespaces(g, cudn) }).WithTimeout(timeout).Should(ConsistOf(a, c))
	expectCondition(t, cudn, metav1.ConditionTrue, udnv1.ReasonNADCreated)

	// Deleting the CUDN removes every NAD, then the CUDN.
	g.Expect(k8s.Delete(ctx, cudn)).To(Succeed())
	expectGone(t, cudn)
	g.Expect(nadNamespaces(g, cudn)).To(BeEmpty())
}

func TestCUDNPrimaryLayer2DeletionWaitsForPods(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	sel := map[string]string{"tenant": "migrated"}
	a := newNamespace(t, "migrated", sel)
	b := newNamespace(t, "migrated", sel)
	cudn := testobj.MakeCUDN("network-l2").SelectLabels(sel).Spec(udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{
		Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"192.168.100.0/24"},
		InfrastructureSubnets: []udnv1.NetworkCIDR{"192.168.100.0/30"}, DefaultGatewayIPs: udnv1.DualStackIPs{"192.168.100.2"},
	}}).Obj()
	g.Expect(k8s.Create(ctx, cudn)).To(Succeed())
	expectCondition(t, cudn, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	conf := nadConfig(g, b, "network-l2")
	g.Expect(conf).To(HaveKeyWithValue("name", "cluster_udn_network-l2"))
	g.Expect(conf).To(HaveKeyWithValue("transitSubnet", "100.88.0.0/16"))
	g.Expect(conf).NotTo(HaveKey("infrastructureSubnets"), "preconfigured-udn-addresses-enable is off by default")
	g.Expect(cudn.Status.TransitSubnets).To(Equal(udnv1.DualStackCIDRs{"100.88.0.0/16"}))

	g.Expect(nadNamespaces(g, cudn)).To(ConsistOf(a, b))
	pod := usePod(t, b, "web", b+"/network-l2")
	g.Expect(k8s.Delete(ctx, cudn)).To(Succeed())
	expectCondition(t, cudn, metav1.ConditionFalse, udnv1.ReasonSyncError, "cannot delete the network", b+"/web")
	// The unused NAD goes at once; the used one stays.
	g.Eventually(func(g Gomega) []string { return nadNamespaces(g, cudn) }).WithTimeout(timeout).Should(ConsistOf(b))
	deletePod(t, pod)
	expectGone(t, cudn)
	g.Expect(nadNamespaces(g, cudn)).To(BeEmpty())
}

func setLabels(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	updateObject(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, func(ns *corev1.Namespace) { ns.Labels = labels })
}

func TestCUDNSkipsTerminatingNamespaces(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	sel := map[string]string{"tenant": "terminating"}
	a := newNamespace(t, "term", sel)
	b := newNamespace(t, "term", sel)
	spec := testobj.Layer2(udnv1.NetworkRoleSecondary, "10.90.0.0/16")
	cudn := testobj.MakeCUDN("term-net").SelectLabels(sel).Spec(spec).Obj()
	g.Expect(k8s.Create(ctx, cudn)).To(Succeed())
	g.Eventually(func(g Gomega) []string { return nadNamespaces(g, cudn) }).WithTimeout(timeout).Should(ConsistOf(a, b))

	// No namespace controller runs here, so b stays Terminating: its NAD is
	// released (the finalizer would otherwise block the namespace) and no
	// CUDN creates one there again.
	g.Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: b}})).To(Succeed())
	g.Eventually(func(g Gomega) []string { return nadNamespaces(g, cudn) }).WithTimeout(timeout).Should(ConsistOf(a))
	expectCondition(t, cudn, metav1.ConditionTrue, udnv1.ReasonNADCreated, "following namespaces: ["+a+"]")
	var ns corev1.Namespace
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: b}, &ns)).To(Succeed())
	g.Expect(ns.DeletionTimestamp).NotTo(BeNil(), "the namespace is still terminating")

	late := testobj.MakeCUDN("term-late").SelectLabels(sel).Spec(spec).Obj()
	g.Expect(k8s.Create(ctx, late)).To(Succeed())
	expectCondition(t, late, metav1.ConditionTrue, udnv1.ReasonNADCreated, "following namespaces: ["+a+"]")
	g.Expect(nadNamespaces(g, late)).To(ConsistOf(a))

	for _, c := range []*udnv1.ClusterUserDefinedNetwork{cudn, late} {
		g.Expect(k8s.Delete(ctx, c)).To(Succeed())
		expectGone(t, c)
	}
}

func TestPredefinedAddressesFeatureFlag(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	cfg := reconcilers.DefaultConfig()
	cfg.Cluster.PreconfiguredUDNAddresses = true
	restartManager(t, cfg)
	defer restartManager(t, reconcilers.DefaultConfig())

	sel := map[string]string{"tenant": "predefined"}
	ns := newNamespace(t, "predef", sel)
	cudn := testobj.MakeCUDN("predef-l2").SelectLabels(sel).Spec(udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{
		Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"192.168.100.0/24"},
		InfrastructureSubnets: []udnv1.NetworkCIDR{"192.168.100.0/30"}, ReservedSubnets: []udnv1.NetworkCIDR{"192.168.100.200/29"},
		DefaultGatewayIPs: udnv1.DualStackIPs{"192.168.100.2"},
	}}).Obj()
	g.Expect(k8s.Create(ctx, cudn)).To(Succeed())
	expectCondition(t, cudn, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	conf := nadConfig(g, ns, "predef-l2")
	g.Expect(conf).To(HaveKeyWithValue("infrastructureSubnets", "192.168.100.0/30"))
	g.Expect(conf).To(HaveKeyWithValue("reservedSubnets", "192.168.100.200/29"))
	g.Expect(conf).To(HaveKeyWithValue("defaultGatewayIPs", "192.168.100.2"))
	g.Expect(k8s.Delete(ctx, cudn)).To(Succeed())
	expectGone(t, cudn)
}

// expectNotImplemented waits until cudn's condition typ is False with reason
// FeatureNotImplemented and message msg, for its current generation.
func expectNotImplemented(t *testing.T, cudn *udnv1.ClusterUserDefinedNetwork, typ, msg string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cudn), cudn)).To(Succeed())
		c := meta.FindStatusCondition(cudn.Status.Conditions, typ)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(udnv1.ReasonFeatureNotImplemented))
		g.Expect(c.Message).To(Equal(msg))
		g.Expect(c.ObservedGeneration).To(Equal(cudn.Generation))
	}).Should(Succeed())
}

// Upstream's transport fields and uplinks are admitted and rendered into the
// NetConf as upstream renders them, and the CUDN says udnkit does not
// implement them.
func TestCUDNUnimplementedTransportIsReported(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	sel := map[string]string{"tenant": "evpn"}
	ns := newNamespace(t, "evpn", sel)
	cudn := testobj.MakeCUDN("red-evpn").SelectLabels(sel).Spec(udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2,
		Layer2:    &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.210.0.0/16"}},
		Transport: udnv1.TransportOptionEVPN,
		EVPN: &udnv1.EVPNConfig{VTEP: "vtep-default", MACVRF: &udnv1.VRFConfig{VNI: 10210, RouteTarget: "65000:10210"},
			IPVRF: &udnv1.VRFConfig{VNI: 20210}}}).Obj()
	g.Expect(k8s.Create(ctx, cudn)).To(Succeed())
	expectCondition(t, cudn, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	expectNotImplemented(t, cudn, udnv1.ConditionTransportAccepted, "udnkit accepts but does not implement spec.network.transport, spec.network.evpn.")
	conf := nadConfig(g, ns, "red-evpn")
	g.Expect(conf).To(HaveKeyWithValue("transport", "evpn"))
	g.Expect(conf).To(HaveKeyWithValue("evpn", map[string]any{"vtep": "vtep-default",
		"macVRF": map[string]any{"vni": 10210.0, "routeTarget": "65000:10210"}, "ipVRF": map[string]any{"vni": 20210.0}}))

	// A CUDN's spec.uplinks[0] is the NAD's "uplink"
	// (clustermanager/userdefinednetwork/template/net-attach-def-template.go).
	upSel := map[string]string{"tenant": "uplinked"}
	upNS := newNamespace(t, "uplinked", upSel)
	uplinked := testobj.MakeCUDN("uplinked-l2").SelectLabels(upSel).Spec(udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2,
		Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.212.0.0/16"}}}).Obj()
	uplinked.Spec.Uplinks = []string{"uplink-a"}
	g.Expect(k8s.Create(ctx, uplinked)).To(Succeed())
	expectNotImplemented(t, uplinked, udnv1.ConditionUplinksReady, "udnkit accepts but does not implement spec.uplinks.")
	g.Expect(nadConfig(g, upNS, "uplinked-l2")).To(HaveKeyWithValue("uplink", "uplink-a"))

	// A network without such fields reports no such condition.
	plain := testobj.MakeCUDN("plain-l2").SelectLabels(map[string]string{"tenant": "none"}).Spec(udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2,
		Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRoleSecondary, Subnets: udnv1.DualStackCIDRs{"10.211.0.0/16"}}}).Obj()
	g.Expect(k8s.Create(ctx, plain)).To(Succeed())
	expectCondition(t, plain, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(plain), plain)).To(Succeed())
	g.Expect(meta.FindStatusCondition(plain.Status.Conditions, udnv1.ConditionTransportAccepted)).To(BeNil())
}
