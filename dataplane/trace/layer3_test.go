package trace

import (
	"fmt"
	"math/big"
	"net/netip"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"k8s.io/apimachinery/pkg/types"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/dataplane/controllers/layer3"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
)

// l3 is one Primary Layer3 UDN (tenant-green/green) whose subnets were
// appended (OKEP-5377), in node-a's zone: pod-a on node-a has its address in
// the first subnet of a family, pod-b on node-b in the appended one.
type l3 struct {
	*zone
	network string
	// clusterSubnets are the UDN's subnets; hostA/hostB node-a's and node-b's host subnets.
	clusterSubnets []netip.Prefix
	hostA, hostB   []netip.Prefix
	podA, podB     []netip.Addr
	podAPort       string
	// other is an address of another network, per family.
	other []netip.Addr
	// vtepC makes node-c a multi-VTEP node: OVN-Kubernetes then creates no
	// transit switch port for it; udnkit's multi-VTEP reconciler does, on demand.
	vtepC  bool
	nadObj client.Object
}

// The transit and join subnets OVN-Kubernetes uses for Layer3 UDNs.
var (
	transitV4, transitV6 = netip.MustParsePrefix("100.88.0.0/16"), netip.MustParsePrefix("fd97::/64")
	joinV4, joinV6       = netip.MustParsePrefix("100.65.0.0/16"), netip.MustParsePrefix("fd99::/64")
)

func familyOf(a netip.Addr, v4, v6 netip.Prefix) netip.Prefix {
	if a.Is4() {
		return v4
	}
	return v6
}

func ipFamily(a netip.Addr) string {
	if a.Is4() {
		return "ip4"
	}
	return "ip6"
}

// ids3 are the external_ids OVN-Kubernetes puts on a Layer3 network's rows.
func ids3(network string) []string {
	return []string{`external_ids:"k8s.ovn.org/network"="` + network + `"`, `external_ids:"k8s.ovn.org/topology"=layer3`}
}

// routerPort is the MAC and networks of a router port at address n of each prefix.
func routerPort(n uint64, prefixes ...netip.Prefix) (mac string, networks []string) {
	for _, p := range prefixes {
		a := ovnk.MustAddrAt(p, n)
		if mac == "" {
			mac = ovnk.MACFromIP(a).String()
		}
		networks = append(networks, netip.PrefixFrom(a, p.Bits()).String())
	}
	return mac, networks
}

// newLayer3 builds node-a's zone of a Layer3 UDN with the given cluster
// subnets (two per family: the second one appended) and runs the manager's
// Layer3 reconciler in the given policy form on its NAD.
func newLayer3(t *testing.T, form topology.Layer3PolicyForm, subnets ...string) *l3 {
	t.Helper()
	return newLayer3With(t, form, false, subnets...)
}

func newLayer3With(t *testing.T, form topology.Layer3PolicyForm, vtepC bool, subnets ...string) *l3 {
	t.Helper()
	spec := udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer3, Layer3: &udnv1.Layer3Config{Role: udnv1.NetworkRolePrimary}}
	for _, s := range subnets {
		spec.Layer3.Subnets = append(spec.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: udnv1.CIDR(s)})
	}
	cluster := ovnk.DefaultClusterConfig()
	nad := udnNAD(t, "tenant-green", "green", spec, cluster, ovnk.NetworkIDs{ID: 2, HasID: true})
	l := &l3{zone: newZone(t, nodes[0]), network: ovnk.UDNNetworkName("tenant-green", "green"), clusterSubnets: pfx(subnets...), vtepC: vtepC, nadObj: nad}
	// Host subnets: node-a gets one from the first subnet of each family,
	// node-b from the appended one (the OKEP-5377 allocator hands out the
	// appended range once the first is used up).
	firstOf := map[bool]bool{}
	for _, s := range l.clusterSubnets {
		bits := 24
		if s.Addr().Is6() {
			bits = 64
		}
		if !firstOf[s.Addr().Is4()] {
			firstOf[s.Addr().Is4()] = true
			l.hostA = append(l.hostA, hostSubnet(s, bits, 2))
		} else {
			l.hostB = append(l.hostB, hostSubnet(s, bits, 3))
		}
	}
	for i := range l.hostA {
		l.podA = append(l.podA, ovnk.MustAddrAt(l.hostA[i], 5))
		l.podB = append(l.podB, ovnk.MustAddrAt(l.hostB[i], 5))
		l.other = append(l.other, map[bool]netip.Addr{true: netip.MustParseAddr("10.210.0.5"), false: netip.MustParseAddr("fd00:210::5")}[l.podA[i].Is4()])
	}
	l.ovnkLayer3()
	c := apiState(t, nad)
	r := &layer3.Reconciler{Client: c, OVN: l.ovn, Form: form, EgressIP: true} // the 102 policies are EgressIP's
	if _, err := r.Reconcile(l.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: nad.Namespace, Name: nad.Name}}); err != nil {
		t.Fatalf("layer3 reconcile: %v", err)
	}
	return l
}

// hostSubnet is the i-th host subnet of the given size in s.
func hostSubnet(s netip.Prefix, bits, i int) netip.Prefix {
	b := s.Masked().Addr().AsSlice()
	off := new(big.Int).Lsh(big.NewInt(int64(i)), uint(len(b)*8-bits))
	off.Add(off, new(big.Int).SetBytes(b)).FillBytes(b)
	a, _ := netip.AddrFromSlice(b)
	return netip.PrefixFrom(a, bits)
}

func (l *l3) prefix() string     { return ovnk.NetworkPrefix(l.network) }
func (l *l3) router() string     { return ovnk.NamesFor(l.network).ClusterRouter() }
func (l *l3) nodeSwitch() string { return l.prefix() + "node-a" }
func (l *l3) tstor(node string) string {
	return ovnk.NamesFor(l.network).TransitSwitchToRouter(node)
}

// ovnkLayer3 creates what OVN-Kubernetes' Layer3 network controller owns in
// node-a's zone: the cluster router with its node switch port rtos-, the
// node switch with pod-a's port, the transit switch with node-a's router port
// and remote tstor- ports (tunnel key = node ID) for node-b and node-c, the
// routes to their host subnets via their transit IPs, the join switch with
// the GR's rtoj- port and the src-ip route of node-a's host subnet to it;
// and one EgressIP of pod-a served by node-c: a priority-100 reroute to
// node-c's transit IP, the policy the priority-102 policies exist to bypass
// (types.EgressIPReroutePriority, DefaultNoRereoutePriority).
func (l *l3) ovnkLayer3() {
	cr, ts, join := l.router(), l.prefix()+"transit_switch", l.prefix()+"join"
	l.nbctl(append([]string{"lr-add", cr, "--", "set", "Logical_Router", cr}, ids3(l.network)...)...)
	// Node switch and its router port at each host subnet's first address.
	rtos := "rtos-" + l.nodeSwitch()
	mac, nets := routerPort(1, l.hostA...)
	l.nbctl(append([]string{"lrp-add", cr, rtos, mac}, nets...)...)
	l.nbctl(append([]string{"ls-add", l.nodeSwitch(), "--", "set", "Logical_Switch", l.nodeSwitch()}, ids3(l.network)...)...)
	l.nbctl("lsp-add", l.nodeSwitch(), "stor-"+l.nodeSwitch(), "--", "lsp-set-type", "stor-"+l.nodeSwitch(), "router",
		"--", "lsp-set-addresses", "stor-"+l.nodeSwitch(), "router", "--", "lsp-set-options", "stor-"+l.nodeSwitch(), "router-port="+rtos)
	p := pod{namespace: "tenant-green", name: "pod-a", node: "node-a", ips: l.podA}
	l.podAPort = ovnk.PodPortName("tenant-green/green", p.namespace, p.name)
	l.nbctl("lsp-add", l.nodeSwitch(), l.podAPort, "--", "lsp-set-addresses", l.podAPort, p.addresses(),
		"--", "lsp-set-port-security", l.podAPort, p.addresses())
	// Transit switch.
	var tr []netip.Prefix
	for _, a := range l.podA {
		tr = append(tr, familyOf(a, transitV4, transitV6))
	}
	l.nbctl(append([]string{"ls-add", ts, "--", "set", "Logical_Switch", ts, "other_config:requested-tnl-key=16711685"}, ids3(l.network)...)...)
	for _, n := range nodes {
		mac, nets := routerPort(uint64(n.id), tr...)
		port := l.tstor(n.name)
		if n.name == "node-c" && l.vtepC {
			continue
		}
		if n.name == l.local.name {
			rtots := ovnk.NamesFor(l.network).RouterToTransitSwitch(n.name)
			l.nbctl(append([]string{"lrp-add", cr, rtots, mac}, nets...)...)
			l.nbctl("lsp-add", ts, port, "--", "lsp-set-type", port, "router", "--", "lsp-set-addresses", port, "router",
				"--", "lsp-set-options", port, "router-port="+rtots, fmt.Sprintf("requested-tnl-key=%d", n.id))
			continue
		}
		l.nbctl("lsp-add", ts, port, "--", "lsp-set-type", port, "remote",
			"--", "lsp-set-addresses", port, mac+" "+strings.Join(nets, " "),
			"--", "lsp-set-options", port, "requested-chassis="+n.chassis(), fmt.Sprintf("requested-tnl-key=%d", n.id))
	}
	for i := range l.hostB {
		l.nbctl("lr-route-add", cr, l.hostB[i].String(), ovnk.MustAddrAt(tr[i], uint64(nodes[1].id)).String())
	}
	// Join switch, GR port and the src-ip route of node-a's host subnet.
	var jn []netip.Prefix
	for _, a := range l.podA {
		jn = append(jn, familyOf(a, joinV4, joinV6))
	}
	gr := ovnk.NamesFor(l.network).GatewayRouter("node-a")
	l.nbctl(append([]string{"lr-add", gr, "--", "set", "Logical_Router", gr, "options:chassis=" + chassisOf("node-a")}, ids3(l.network)...)...)
	l.nbctl(append([]string{"ls-add", join, "--", "set", "Logical_Switch", join}, ids3(l.network)...)...)
	for _, side := range []struct {
		router, port string
		n            uint64
	}{{cr, "rtoj-" + cr, 1}, {gr, "rtoj-" + gr, 2}} {
		mac, nets := routerPort(side.n, jn...)
		l.nbctl(append([]string{"lrp-add", side.router, side.port, mac}, nets...)...)
		sp := "jtor-" + strings.TrimPrefix(side.port, "rtoj-")
		l.nbctl("lsp-add", join, sp, "--", "lsp-set-type", sp, "router", "--", "lsp-set-addresses", sp, "router",
			"--", "lsp-set-options", sp, "router-port="+side.port)
	}
	for i, h := range l.hostA {
		l.nbctl("--policy=src-ip", "lr-route-add", cr, h.String(), ovnk.MustAddrAt(jn[i], 2).String())
		// pod-a's EgressIP, served by node-c.
		l.nbctl("lr-policy-add", cr, "100", ipFamily(l.podA[i])+".src == "+l.podA[i].String(), "reroute",
			ovnk.MustAddrAt(tr[i], uint64(nodes[2].id)).String())
	}
}

// fromPodA traces a packet from pod-a to dst through node-a's switch.
func (l *l3) fromPodA(fam int, dst netip.Addr) string {
	gwMAC, _ := routerPort(1, l.hostA...)
	p := pod{ips: l.podA}
	return l.trace(l.nodeSwitch(), `inport == "`+l.podAPort+`" && eth.src == `+p.mac()+` && eth.dst == `+gwMAC+` && `+ipMatch(l.podA[fam], dst))
}

// policies102 are the UUIDs of the priority-102 policies udnkit wrote for a family.
func (l *l3) policies102(fam string) []string {
	out := l.nbctl("--format=csv", "--no-headings", "--columns=_uuid,match", "find", "Logical_Router_Policy", "priority=102")
	var uuids []string
	for _, line := range strings.Split(out, "\n") {
		uuid, match, ok := strings.Cut(line, ",")
		if ok && strings.HasPrefix(strings.Trim(match, `"`), fam+".") {
			uuids = append(uuids, uuid)
		}
	}
	if len(uuids) == 0 {
		l.t.Fatalf("no priority-102 %s policy:\n%s", fam, out)
	}
	return uuids
}

// l3check is one Layer3 trace and the mutations that must each break it.
type l3check struct {
	name      string
	trace     func(l *l3) string
	want      func(l *l3) []string
	mutations map[string]func(l *l3)
}

// layer3Checks are the OKEP-5377 checks for the addresses at index fam
// (family order of the subnets), named after that family.
func layer3Checks(fam int, family string) []l3check {
	return []l3check{{
		name:  family + ": pod to a pod of an appended subnet on another node is allowed by priority 102",
		trace: func(l *l3) string { return l.fromPodA(fam, l.podB[fam]) },
		want: func(l *l3) []string {
			return []string{`ingress(dp="` + l.router() + `"`, `lr_in_policy`, `priority 102`,
				`output to "` + ovnk.NamesFor(l.network).RouterToTransitSwitch("node-a") + `"`, `output to "` + l.tstor("node-b") + `", type "remote"`}
		},
		mutations: map[string]func(l *l3){
			"remove the priority-102 policy (the EgressIP reroute then takes the packet to node-c)": func(l *l3) {
				for _, u := range l.policies102(ipFamily(l.podA[fam])) {
					l.nbctl("lr-policy-del", l.router(), u)
				}
			},
		},
	}, {
		name:  family + ": pod to another network is not allowed by priority 102: pod-a's EgressIP reroute takes it",
		trace: func(l *l3) string { return l.fromPodA(fam, l.other[fam]) },
		want: func(l *l3) []string {
			return []string{`lr_in_policy`, ipFamily(l.podA[fam]) + `.src == ` + l.podA[fam].String() + `, priority 100`, `output to "` + l.tstor("node-c") + `", type "remote"`}
		},
		mutations: map[string]func(l *l3){
			"widen udnkit's priority-102 policy to the whole family": func(l *l3) {
				for _, u := range l.policies102(ipFamily(l.podA[fam])) {
					l.nbctl("set", "Logical_Router_Policy", u, `match="`+ipFamily(l.podA[fam])+`"`)
				}
			},
			"remove the EgressIP reroute the verdict is seen through": func(l *l3) {
				l.nbctl("lr-policy-del", l.router(), "100", ipFamily(l.podA[fam])+".src == "+l.podA[fam].String())
			},
		},
	}}
}

// runLayer3 runs each check in both policy forms on a fresh zone, then each
// of its mutations on a fresh zone, which must make the trace miss a milestone.
func runLayer3(t *testing.T, subnets []string, checks []l3check) {
	for _, form := range []topology.Layer3PolicyForm{topology.PolicyFormAddressSet, topology.PolicyFormPairs} {
		for _, c := range checks {
			t.Run(string(form)+"/"+c.name, func(t *testing.T) {
				l := newLayer3(t, form, subnets...)
				out := c.trace(l)
				if os.Getenv("TRACE_SHOW") != "" {
					t.Log(out)
				}
				if ok, missing := wantPath(out, c.want(l)); !ok {
					t.Fatalf("trace misses %q:\n%s\nNB:\n%s\n%s", missing, out, l.nbctl("show"), l.nbctl("lr-policy-list", l.router()))
				}
				for name, mutate := range c.mutations {
					l := newLayer3(t, form, subnets...)
					mutate(l)
					if ok, _ := wantPath(c.trace(l), c.want(l)); ok {
						t.Errorf("mutation %q did not break the trace", name)
					}
				}
			})
		}
	}
}

func TestLayer3AppendedSubnetsIPv4(t *testing.T) {
	runLayer3(t, []string{"10.200.0.0/16", "10.201.0.0/16"}, layer3Checks(0, "IPv4"))
}

func TestLayer3AppendedSubnetsIPv6(t *testing.T) {
	runLayer3(t, []string{"fd00:200::/48", "fd00:201::/48"}, layer3Checks(0, "IPv6"))
}

func TestLayer3AppendedSubnetsDualStack(t *testing.T) {
	subnets := []string{"10.200.0.0/16", "fd00:200::/48", "10.201.0.0/16", "fd00:201::/48"}
	runLayer3(t, subnets, append(layer3Checks(0, "IPv4"), layer3Checks(1, "IPv6")...))
}
