package trace

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
)

// l2 is one Primary Layer2 UDN (tenant-blue/blue) programmed in node-a's zone.
type l2 struct {
	*zone
	network, nad string
	subnets      []netip.Prefix
	local, other pod
	localPort    string
	remotePort   string
	mgmtPort     string
	// nadObj is the network's NAD as the NAD reconciler renders it.
	nadObj *nadv1.NetworkAttachmentDefinition
}

func newLayer2(t *testing.T, subnets ...string) *l2 { return newLayer2At(t, 0, subnets...) }

// newLayer2At builds the zone of nodes[local]; its local pod pod-a runs there
// (a migrated VM keeps its addresses wherever it runs).
func newLayer2At(t *testing.T, local int, subnets ...string) *l2 {
	t.Helper()
	cluster := ovnk.DefaultClusterConfig()
	spec := udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{
		Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{}}}
	for _, s := range subnets {
		spec.Layer2.Subnets = append(spec.Layer2.Subnets, udnv1.CIDR(s))
	}
	nad := udnNAD(t, "tenant-blue", "blue", spec, cluster, ovnk.NetworkIDs{ID: 1, HasID: true, TunnelKeys: []int{16715776, 16715777}})
	z := newZone(t, nodes[local])
	l := &l2{zone: z, network: ovnk.UDNNetworkName("tenant-blue", "blue"), nad: "tenant-blue/blue", subnets: pfx(subnets...), nadObj: nad}
	z.ovnkGateway(l.network)
	var objs []client.Object
	for _, n := range nodes {
		objs = append(objs, nodeObject(n))
	}
	z.programLayer2(cluster, nad, objs...)
	var localIPs, otherIPs []netip.Addr
	for _, s := range l.subnets {
		a, _ := ovnk.AddrAt(s, 5)
		b, _ := ovnk.AddrAt(s, 6)
		localIPs, otherIPs = append(localIPs, a), append(otherIPs, b)
	}
	l.local = pod{namespace: "tenant-blue", name: "pod-a", node: nodes[local].name, ips: localIPs}
	l.other = pod{namespace: "tenant-blue", name: "pod-b", node: nodes[(local+1)%len(nodes)].name, ips: otherIPs, tunnelKey: 7}
	l.localPort = z.ovnkPod(l.network, l.nad, l.local)
	l.remotePort = z.ovnkPod(l.network, l.nad, l.other)
	l.mgmtPort = z.ovnkManagementPort(l.network, l.subnets)
	return l
}

// check is one trace with the mutation that must break it.
type check struct {
	name string
	// trace runs the packet and returns ovn-trace's report.
	trace func(l *l2) string
	// want are the report's milestones, in order.
	want func(l *l2) []string
	// mutate removes the row the check depends on.
	mutate func(l *l2)
}

// wantPath reports whether out contains every milestone, in order.
func wantPath(out string, milestones []string) (bool, string) {
	at := 0
	for _, m := range milestones {
		i := strings.Index(out[at:], m)
		if i < 0 {
			return false, m
		}
		at += i + len(m)
	}
	return true, ""
}

// runChecks runs each check on a fresh zone, then its mutation on the same
// zone, which must make the trace miss a milestone.
func runChecks(t *testing.T, subnets []string, checks []check) {
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			l := newLayer2(t, subnets...)
			out := c.trace(l)
			if ok, missing := wantPath(out, c.want(l)); !ok {
				t.Fatalf("trace misses %q:\n%s\nNB:\n%s", missing, out, l.nbctl("show"))
			}
			c.mutate(l)
			if ok, _ := wantPath(c.trace(l), c.want(l)); ok {
				t.Fatalf("mutation did not break the trace")
			}
		})
	}
}

func (l *l2) names() ovnk.Layer2Names { return ovnk.NamesFor(l.network) }

func (l *l2) gatewayMAC() string { return ovnk.MACFromIP(ovnk.MustAddrAt(l.subnets[0], 1)).String() }

// ipMatch is the IP part of a microflow for one family.
func ipMatch(src, dst netip.Addr) string {
	if src.Is4() {
		return "ip4.src == " + src.String() + " && ip4.dst == " + dst.String() + " && ip.ttl == 64"
	}
	return "ip6.src == " + src.String() + " && ip6.dst == " + dst.String() + " && ip.ttl == 64"
}

// layer2Checks are the OKEP-5094 checks for the pod IP at index fam
// (the network's family order).
func layer2Checks(fam int) []check {
	ext := func(l *l2) netip.Addr {
		if l.local.ips[fam].Is4() {
			return netip.MustParseAddr("1.1.1.1")
		}
		return netip.MustParseAddr("2001:db8::1")
	}
	nodeIP := func(l *l2) netip.Addr {
		for _, p := range nodes[0].ips {
			if p.Addr().Is4() == l.local.ips[fam].Is4() {
				return p.Addr()
			}
		}
		panic("no node IP of the family")
	}
	fromPod := func(l *l2, dstMAC string, dst netip.Addr) string {
		return l.trace(l.names().Switch(), `inport == "`+l.localPort+`" && eth.src == `+l.local.mac()+
			` && eth.dst == `+dstMAC+` && `+ipMatch(l.local.ips[fam], dst))
	}
	srcRoute := func(l *l2) {
		s := l.subnets[fam]
		l.nbctl("--policy=src-ip", "lr-route-del", l.names().TransitRouter(), s.String())
	}
	return []check{{
		name:  "egress leaves through the local GR via the transit router",
		trace: func(l *l2) string { return fromPod(l, l.gatewayMAC(), ext(l)) },
		want: func(l *l2) []string {
			gr := l.names().GatewayRouter("node-a")
			return []string{`ingress(dp="` + l.names().TransitRouter() + `"`, `outport = "trtor-` + gr + `"`,
				`ingress(dp="` + gr + `", inport="rtotr-` + gr + `")`, `outport = "rtoe-` + gr + `"`,
				`output to "rtoe-` + gr + `"`}
		},
		mutate: srcRoute,
	}, {
		name: "the reply comes back from the GR through the transit router to the pod",
		trace: func(l *l2) string {
			ext := "ext_" + ovnk.NetworkPrefix(l.network) + "node-a"
			rtoeMAC := ovnk.MACFromIP(nodes[0].ips[0].Addr()).String()
			return l.trace(ext, `inport == "breth0_`+ovnk.NetworkPrefix(l.network)+`node-a" && eth.src == 02:00:00:00:00:01 && eth.dst == `+
				rtoeMAC+` && `+ipMatch(ext_(l, fam), l.local.ips[fam]))
		},
		want: func(l *l2) []string {
			gr := l.names().GatewayRouter("node-a")
			return []string{`ingress(dp="` + gr + `"`, `outport = "rtotr-` + gr + `"`,
				`ingress(dp="` + l.names().TransitRouter() + `", inport="trtor-` + gr + `")`,
				`outport = "` + l.names().RouterToSwitch() + `"`, `output to "` + l.localPort + `"`}
		},
		mutate: func(l *l2) {
			l.nbctl("lr-route-del", l.names().GatewayRouter("node-a"), l.subnets[fam].String())
		},
	}, {
		name:  "pod to a pod on another node stays on the switch and leaves by the remote port",
		trace: func(l *l2) string { return fromPod(l, l.other.mac(), l.other.ips[fam]) },
		want: func(l *l2) []string {
			return []string{`outport = "` + l.remotePort + `"`, `output to "` + l.remotePort + `", type "remote"`}
		},
		mutate: func(l *l2) { l.nbctl("lsp-del", l.remotePort) },
	}, {
		name:  "pod to a node IP is rerouted to the management port (priority 1004)",
		trace: func(l *l2) string { return fromPod(l, l.gatewayMAC(), nodeIP(l)) },
		want: func(l *l2) []string {
			return []string{`lr_in_policy`, `priority 1004`, `outport = "` + l.names().RouterToSwitch() + `"`,
				`output to "` + l.mgmtPort + `"`}
		},
		mutate: func(l *l2) {
			l.nbctl("lr-policy-del", l.names().TransitRouter(), "1004",
				`inport == "`+l.names().RouterToSwitch()+`" && `+map[bool]string{true: "ip4", false: "ip6"}[nodeIP(l).Is4()]+
					`.dst == `+nodeIP(l).String()+` /* `+l.names().Switch()+` */`)
		},
	}}
}

func ext_(l *l2, fam int) netip.Addr {
	if l.local.ips[fam].Is4() {
		return netip.MustParseAddr("1.1.1.1")
	}
	return netip.MustParseAddr("2001:db8::1")
}

// An IPv6 pod's router solicitation is answered with a router advertisement
// from the transit router's trtos- port (its ipv6_ra_configs). trtos- is a
// distributed gateway port (its gateway chassis is the zone's node), so the
// switch floods the solicitation to the port's chassis-redirect side,
// cr-stotr-, which carries it to that chassis; ovn-trace stops at a
// chassis-redirect output, so the check traces that hop, then the
// solicitation's arrival on the router from trtos-, whose put_nd_ra_opts
// builds the advertisement (stateful DHCPv6 addresses, low preference, the
// network's prefix). ovn-trace does not build the advertisement itself
// (put_nd_ra_opts yields no result there, so the trace stops at that
// action).
func raCheck() check {
	return check{
		name: "an IPv6 pod gets router advertisements",
		trace: func(l *l2) string {
			mac := l.local.mac()
			rs := ` && eth.src == ` + mac + ` && eth.dst == 33:33:00:00:00:02 && ip6.src == ` + linkLocal(mac) +
				` && ip6.dst == ff02::2 && ip.ttl == 255 && icmp6.type == 133 && icmp6.code == 0`
			return l.trace(l.names().Switch(), `inport == "`+l.localPort+`"`+rs) +
				l.trace(l.names().TransitRouter(), `inport == "`+l.names().RouterToSwitch()+`"`+rs)
		},
		want: func(l *l2) []string {
			return []string{`output to "cr-` + l.names().SwitchToRouter() + `", type "chassisredirect"`,
				`ingress(dp="` + l.names().TransitRouter() + `", inport="` + l.names().RouterToSwitch() + `")`,
				`lr_in_nd_ra_options`, `inport == "` + l.names().RouterToSwitch() + `" && ip6.dst == ff02::2 && nd_rs`,
				`put_nd_ra_opts(addr_mode = "dhcpv6_stateful"`, `router_preference = "LOW"`, `prefix = ` + l.subnets[len(l.subnets)-1].String()}
		},
		mutate: func(l *l2) {
			l.nbctl("clear", "Logical_Router_Port", l.names().RouterToSwitch(), "ipv6_ra_configs")
		},
	}
}

func TestLayer2IPv4(t *testing.T) { runChecks(t, []string{"10.100.0.0/16"}, layer2Checks(0)) }

func TestLayer2IPv6(t *testing.T) {
	runChecks(t, []string{"fd00:100::/64"}, append(layer2Checks(0), raCheck()))
}

func TestLayer2DualStack(t *testing.T) {
	subnets := []string{"10.100.0.0/16", "fd00:100::/64"}
	runChecks(t, subnets, append(append(layer2Checks(0), layer2Checks(1)...), raCheck()))
}

// A KubeVirt VM live-migrated from node-a to node-b keeps its IP and MAC
// (its port is now local in node-b's zone): its traffic leaves through
// node-b's GR, and its ARP for the gateway is answered with the same
// gateway MAC as on node-a, by the transit router's rtos- port (OKEP-5094
// goal 1; the transit router makes the KubeVirt design's arp_proxy
// unnecessary on Layer2).
func TestLayer2LiveMigratedVM(t *testing.T) {
	subnets := []string{"10.100.0.0/16", "fd00:100::/64"}
	grB := func(l *l2) string { return l.names().GatewayRouter("node-b") }
	for _, c := range []check{{
		name: "the migrated VM's traffic leaves through the new node's GR",
		trace: func(l *l2) string {
			return l.trace(l.names().Switch(), `inport == "`+l.localPort+`" && eth.src == `+l.local.mac()+
				` && eth.dst == `+l.gatewayMAC()+` && `+ipMatch(l.local.ips[0], netip.MustParseAddr("1.1.1.1")))
		},
		want: func(l *l2) []string {
			return []string{`outport = "trtor-` + grB(l) + `"`, `ingress(dp="` + grB(l) + `"`, `output to "rtoe-` + grB(l) + `"`}
		},
		mutate: func(l *l2) {
			l.nbctl("--policy=src-ip", "lr-route-del", l.names().TransitRouter(), l.subnets[0].String())
		},
	}, {
		name: "the migrated VM's ARP for the gateway is answered with the same MAC",
		trace: func(l *l2) string {
			gw := ovnk.MustAddrAt(l.subnets[0], 1)
			return l.trace(l.names().Switch(), `inport == "`+l.localPort+`" && eth.src == `+l.local.mac()+
				` && eth.dst == ff:ff:ff:ff:ff:ff && arp.op == 1 && arp.sha == `+l.local.mac()+` && arp.spa == `+
				l.local.ips[0].String()+` && arp.tha == 00:00:00:00:00:00 && arp.tpa == `+gw.String())
		},
		want: func(l *l2) []string {
			return []string{`arp.op = 2`, `arp.sha = ` + l.gatewayMAC(), `output to "` + l.localPort + `"`}
		},
		mutate: func(l *l2) { l.nbctl("lrp-del", l.names().RouterToSwitch()) },
	}} {
		t.Run(c.name, func(t *testing.T) {
			before := newLayer2At(t, 0, subnets...)
			l := newLayer2At(t, 1, subnets...)
			if before.local.addresses() != l.local.addresses() {
				t.Fatalf("the VM's addresses changed: %s -> %s", before.local.addresses(), l.local.addresses())
			}
			if before.gatewayMAC() != l.gatewayMAC() {
				t.Fatalf("gateway MAC differs between nodes: %s vs %s", before.gatewayMAC(), l.gatewayMAC())
			}
			out := c.trace(l)
			if ok, missing := wantPath(out, c.want(l)); !ok {
				t.Fatalf("trace misses %q:\n%s", missing, out)
			}
			c.mutate(l)
			if ok, _ := wantPath(c.trace(l), c.want(l)); ok {
				t.Fatal("mutation did not break the trace")
			}
		})
	}
}

// linkLocal is the EUI-64 IPv6 link-local address of mac, the source of a
// pod's router solicitation (port security admits it).
func linkLocal(mac string) string {
	hw, err := net.ParseMAC(mac)
	if err != nil {
		panic(err)
	}
	b := [16]byte{0xfe, 0x80, 8: hw[0] ^ 0x02, 9: hw[1], 10: hw[2], 11: 0xff, 12: 0xfe, 13: hw[3], 14: hw[4], 15: hw[5]}
	return netip.AddrFrom16(b).String()
}
