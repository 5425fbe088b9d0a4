package topology

import (
	"net/netip"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/networkpolicy"
	"github.com/udnkit/udnkit/ovnk"
)

// A NetworkPolicy "db" of tenant-blue on the reference case's Primary
// Layer2 network, in node1's zone: it selects pod1 (app=db, on node1) and
// admits TCP 5432 from the namespace's app=web pods (pod2, on node2) and
// from 192.168.0.0/16 except 192.168.1.0/24; tenant-blue logs allowed
// traffic at notice and dropped traffic at warning.
const (
	npCtrl    = "tenant-blue_blue-network-controller"
	npKey     = "tenant-blue_LS{ML:{app: web,},}"
	upNPBase  = "base_network_controller_policy.go"
	upNPGress = "gress_policy.go"
	upNPACL   = "libovsdb/util/acl.go"
	upNPSet   = "addresssetmanager/addressset_manager.go"
	upNPTypes = "libovsdb/ops/db_object_types.go"
)

var (
	npPG    = networkpolicy.PolicyPortGroup(podL2Net, "tenant-blue", "db")
	npIn    = networkpolicy.DenyPortGroup(podL2Net, "tenant-blue", true)
	npOut   = networkpolicy.DenyPortGroup(podL2Net, "tenant-blue", false)
	npSet4  = ovnk.HashForOVN(npCtrl + ":PodSelector:" + npKey + ":v4")
	npSet6  = ovnk.HashForOVN(npCtrl + ":PodSelector:" + npKey + ":v6")
	npSel   = npACL(npPG, "to-lport", 1001, "(ip4.src == {$"+npSet4+"} || ip6.src == {$"+npSet6+"}) && tcp && tcp.dst==5432 && outport == @"+npPG)
	npBlock = npACL(npPG, "to-lport", 1001, "(ip4.src == 192.168.0.0/16 && ip4.src != {192.168.1.0/24}) && tcp && tcp.dst==5432 && outport == @"+npPG)
	npDenyI = npACL(npIn, "to-lport", 1000, "outport == @"+npIn)
	npARPI  = npACL(npIn, "to-lport", 1001, "outport == @"+npIn+" && (arp || nd)")
	npDenyE = npACL(npOut, "from-lport", 1000, "inport == @"+npOut)
	npARPE  = npACL(npOut, "from-lport", 1001, "inport == @"+npOut+" && (arp || nd)")
)

// npACL is the key planRows gives an ACL of a port group.
func npACL(pg, dir string, prio int, match string) string {
	return pg + " " + dir + " " + strconv.Itoa(prio) + " " + match
}

func npPlan(t *testing.T) *rows.Desired {
	tcp := corev1.ProtocolTCP
	port := intstr.FromInt32(5432)
	np := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-blue", Name: "db"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
				From: []networkingv1.NetworkPolicyPeer{
					{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
					{IPBlock: &networkingv1.IPBlock{CIDR: "192.168.0.0/16", Except: []string{"192.168.1.0/24"}}},
				},
			}},
		}}
	addrs := func(ips ...string) []netip.Addr {
		var out []netip.Addr
		for _, ip := range ips {
			out = append(out, netip.MustParseAddr(ip))
		}
		return out
	}
	d, err := networkpolicy.Build(networkpolicy.Network{Name: podL2Net, Topology: base.TopologyLayer2, IPv4: true, IPv6: true,
		Policies:   []networkingv1.NetworkPolicy{np},
		Namespaces: []networkpolicy.Namespace{{Name: "tenant-blue", Logging: ovnk.ACLLogging{Allow: "notice", Deny: "warning"}}},
		Pods: []networkpolicy.Pod{
			{Namespace: "tenant-blue", Name: "pod1", Labels: map[string]string{"app": "db"}, Port: podL2Port, IPs: addrs("10.100.0.5", "fd00:100::5")},
			{Namespace: "tenant-blue", Name: "pod2", Labels: map[string]string{"app": "web"}, IPs: addrs("10.100.0.7", "fd00:100::7")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var _ = addParityCase(parityCase{
	name: "a NetworkPolicy on a Primary Layer2 network",
	plan: npPlan,
	same: []parity{
		{"Port_Group", npPG, "external_ids:k8s.ovn.org/id", npCtrl + ":NetworkPolicy:tenant-blue:db", upNPBase + ": getNetworkPolicyPortGroupDbIDs; " + upNPTypes + ": PortGroupNetworkPolicy"},
		{"Port_Group", npPG, "external_ids:k8s.ovn.org/name", "tenant-blue:db", upNPBase + ": getNetworkPolicyPortGroupDbIDs (BuildNamespaceNameKey)"},
		{"Port_Group", npIn, "external_ids:k8s.ovn.org/id", npCtrl + ":NetpolNamespace:tenant-blue:Ingress", upNPBase + ": getDefaultDenyPolicyPortGroupIDs"},
		{"Port_Group", npOut, "external_ids:k8s.ovn.org/id", npCtrl + ":NetpolNamespace:tenant-blue:Egress", upNPBase + ": getDefaultDenyPolicyPortGroupIDs"},
		{"ACL", npSel, "action", "allow-related", upNPGress + ": buildLocalPodACLs"},
		{"ACL", npSel, "name", "NP:tenant-blue:db:Ingress:0", upNPACL + ": GetACLName (ACLNetworkPolicy)"},
		{"ACL", npSel, "severity", "notice", upNPACL + ": getLogSeverity (the namespace's allow level)"},
		{"ACL", npSel, "log", "true", upNPACL + ": getLogSeverity"},
		{"ACL", npSel, "tier", "2", upNPACL + ": BuildACLWithDefaultTier (types.DefaultACLTier)"},
		{"ACL", npSel, "meter", "acl-logging", upNPACL + ": BuildACL (types.OvnACLLoggingMeter)"},
		{"ACL", npSel, "external_ids:k8s.ovn.org/id", npCtrl + ":NetworkPolicy:tenant-blue:db:Ingress:0:tcp:-1", upNPGress + ": getNetpolACLDbIDs (emptyIdx)"},
		{"ACL", npBlock, "external_ids:k8s.ovn.org/id", npCtrl + ":NetworkPolicy:tenant-blue:db:Ingress:0:tcp:-2", upNPGress + ": getNetpolACLDbIDs (ipBlockCombinedIdx)"},
		{"ACL", npBlock, "action", "allow-related", upNPGress + ": buildLocalPodACLs (getMatchFromIPBlock)"},
		{"ACL", npDenyI, "action", "drop", upNPBase + ": buildDenyACLs"},
		{"ACL", npDenyI, "severity", "warning", upNPACL + ": getLogSeverity (the namespace's deny level)"},
		{"ACL", npDenyI, "name", "NP:tenant-blue:Ingress", upNPACL + ": GetACLName (ACLNetpolNamespace)"},
		{"ACL", npDenyI, "external_ids:k8s.ovn.org/id", npCtrl + ":NetpolNamespace:tenant-blue:Ingress:defaultDeny", upNPBase + ": getDefaultDenyPolicyACLIDs"},
		{"ACL", npARPI, "action", "allow", upNPBase + ": buildDenyACLs (arpAllowPolicyMatch)"},
		{"ACL", npARPI, "log", "false", upNPBase + ": buildDenyACLs (nil logging)"},
		{"ACL", npARPI, "external_ids:k8s.ovn.org/id", npCtrl + ":NetpolNamespace:tenant-blue:Ingress:arpAllow", upNPBase + ": getDefaultDenyPolicyACLIDs"},
		{"ACL", npDenyE, "options:apply-after-lb", "true", upNPACL + ": ACLDirectionToACLPipeline (LportEgressAfterLB)"},
		{"ACL", npDenyE, "external_ids:k8s.ovn.org/id", npCtrl + ":NetpolNamespace:tenant-blue:Egress:defaultDeny", upNPBase + ": getDefaultDenyPolicyACLIDs"},
		{"ACL", npARPE, "external_ids:k8s.ovn.org/id", npCtrl + ":NetpolNamespace:tenant-blue:Egress:arpAllow", upNPBase + ": getDefaultDenyPolicyACLIDs"},
		{"Address_Set", npSet4, "addresses", "10.100.0.7", upNPSet + ": reconcileAddressSet, getPodIPs (the network's addresses of every selected pod)"},
		{"Address_Set", npSet4, "external_ids:k8s.ovn.org/name", npKey, upNPSet + ": GetPodSelectorAddrSetDbIDs, getPodSelectorKey"},
		{"Address_Set", npSet6, "addresses", "fd00:100::7", upNPSet + ": reconcileAddressSet"},
		{"Address_Set", npSet6, "external_ids:ip-family", "v6", "address_set/address_set.go: buildAddressSet"},
		{"Meter", "acl-logging", "unit", "pktps", "controllermanager/controller_manager.go: createACLLoggingMeter"},
		{"Meter_Band", "acl-logging", "rate", "20", "controllermanager/controller_manager.go: createACLLoggingMeter (config.Logging.ACLLoggingRateLimit)"},
	},
})
