package trace

import (
	"encoding/json"
	"maps"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/udnkit/udnkit/dataplane/controllers/multivtep"
	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// vtepEncaps are node-c's two VTEPs (k8s.ovn.org/node-encap-ips), IPv4 or
// IPv6, as in OKEP-5535's example; its chassis has one geneve Encap per IP.
func vtepEncaps(v6 bool) []netip.Addr {
	if v6 {
		return addrs("fc00:f853:ccd:e793::4", "fc00:f853:ccd:e794::4")
	}
	return addrs("172.18.0.4", "172.19.0.4")
}

// remoteChassis registers the chassis of node, in another zone, with one
// geneve Encap per IP in the zone's Southbound database, as OVN-Kubernetes'
// interconnect does for remote nodes (named by the chassis' system-id, the
// node's name as hostname).
func (z *zone) remoteChassis(node string, ips []netip.Addr) {
	z.t.Helper()
	var encaps []string
	for _, ip := range ips {
		encaps = append(encaps, ip.String())
	}
	if err := ovsdbserver.AddChassis(z.db.SB, chassisOf(node), node, true, encaps...); err != nil {
		z.t.Fatal(err)
	}
}

// binding summarises a port's Southbound Port_Binding as a trace milestone
// line: the chassis it requests and the Encap (chassis, IP) it points at.
func (z *zone) binding(port string) string {
	z.t.Helper()
	if z.sbctl("--bare", "--columns=logical_port", "find", "Port_Binding", "logical_port="+port) == "" {
		return "binding of " + port + ": none"
	}
	out := "binding of " + port + ":"
	if rc := z.sbctl("get", "Port_Binding", port, "requested_chassis"); rc != "[]" {
		out += " requested-chassis " + strings.Trim(z.sbctl("get", "Chassis", rc, "name"), `"`)
	}
	if e := z.sbctl("get", "Port_Binding", port, "encap"); e != "[]" {
		out += " encap " + strings.Trim(z.sbctl("get", "Encap", e, "chassis_name"), `"`) + " " + strings.Trim(z.sbctl("get", "Encap", e, "ip"), `"`)
	}
	return out
}

// nodesWithVTEPs are the fixture's Node objects with node-c's encap IPs
// (k8s.ovn.org/node-encap-ips) and its other annotations.
func nodesWithVTEPs(encaps []netip.Addr, annotations map[string]string) []client.Object {
	var objs []client.Object
	for _, n := range nodes {
		o := nodeObject(n)
		if n.name == "node-c" {
			b, _ := json.Marshal(encaps)
			o.Annotations[ovnk.AnnotationNodeEncapIPs] = string(b)
			maps.Copy(o.Annotations, annotations)
		}
		objs = append(objs, o)
	}
	return objs
}

// podObject is a pod as the address reconciler leaves it on a Primary
// Layer2 network: its pod-networks entry, with OKEP-5535's encap_ip.
func podObject(t *testing.T, p pod, nad string, subnets []netip.Prefix, tunnelID int, encap netip.Addr) *corev1.Pod {
	t.Helper()
	var ips []netip.Prefix
	var gws []netip.Addr
	for i, ip := range p.ips {
		ips = append(ips, netip.PrefixFrom(ip, subnets[i].Bits()))
		gws = append(gws, ovnk.MustAddrAt(subnets[i], 1))
	}
	mac, _ := net.ParseMAC(p.mac())
	pn, err := podannotation.Layer2PrimaryPodNetwork(ips, mac, gws, nil, nil, tunnelID, encap.String())
	if err != nil {
		t.Fatal(err)
	}
	v, err := podannotation.PodNetworks{nad: pn}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return testobj.MakePod(p.namespace, p.name).Node(p.node).Running().Annotation(ovnk.AnnotationPodNetworks, v).Obj()
}

// programMultiVTEP runs the manager's multi-VTEP reconciler for the zone.
func (z *zone) programMultiVTEP(nad client.Object, objs ...client.Object) {
	z.t.Helper()
	c := apiState(z.t, nad, objs...)
	r := &multivtep.Reconciler{Client: c, OVN: z.ovn, Local: func(n *corev1.Node) bool { return n.Name == z.local.name }}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: nad.GetNamespace(), Name: nad.GetName()}}
	// The first pass writes the ports; their Port_Bindings appear once
	// ovn-northd has run, and the next pass points them at their Encaps.
	for range 100 {
		res, err := r.Reconcile(z.ctx, req)
		if err != nil {
			z.t.Fatalf("multi-VTEP reconcile: %v", err)
		}
		if res.RequeueAfter == 0 {
			return
		}
		z.nbctl("--wait=sb", "sync")
		time.Sleep(20 * time.Millisecond)
	}
	z.t.Fatal("multi-VTEP reconcile still waits for Port_Bindings")
}

// vtepCheck is one multi-VTEP trace, its milestones and the mutations that
// must each break it.
type vtepCheck struct {
	name      string
	want      func(port string) []string
	mutations map[string]func(z *zone, port string)
}

// TestLayer2MultiVTEP: pod-c runs on node-c, a node with two VTEPs, and its
// interface is a VF of the second PF (encap_ip = node-c's second encap IP).
// In node-a's zone the manager's multi-VTEP reconciler gives pod-c a remote
// port on the layer2 switch with requested-chassis node-c's chassis and points its
// Port_Binding.encap at node-c's second Encap (OKEP-5535's Layer 2
// solution). ovn-trace shows pod-a's packet to pod-c output to that port;
// ovn-trace does not model tunnels, so the encap it will leave
// through is read from the Southbound Port_Binding, appended to the report.
func TestLayer2MultiVTEP(t *testing.T) {
	for _, tc := range []struct {
		name    string
		subnets []string
		v6encap bool
	}{
		{"IPv4", []string{"10.100.0.0/16"}, false},
		{"IPv6", []string{"fd00:100::/64"}, true},
		{"dual-stack", []string{"10.100.0.0/16", "fd00:100::/64"}, false},
	} {
		for _, c := range []vtepCheck{{
			name: "pod to a pod behind node-c's second VTEP leaves by its port bound to that encap",
			want: func(port string) []string {
				e := vtepEncaps(tc.v6encap)[1]
				return []string{`output to "` + port + `", type "remote"`, "binding of " + port + ": requested-chassis " + chassisOf("node-c") + " encap " + chassisOf("node-c") + " " + e.String()}
			},
			mutations: map[string]func(z *zone, port string){
				"remove the remote port": func(z *zone, port string) { z.nbctl("lsp-del", port) },
				"clear its Port_Binding.encap (the tunnel would be node-c's first VTEP)": func(z *zone, port string) {
					z.sbctl("clear", "Port_Binding", port, "encap")
				},
			},
		}} {
			t.Run(tc.name+"/"+c.name, func(t *testing.T) {
				setup := func() (*l2, string, func() string) {
					l := newLayer2(t, tc.subnets...)
					encaps := vtepEncaps(tc.v6encap)
					l.remoteChassis("node-c", encaps)
					var ips []netip.Addr
					for _, s := range l.subnets {
						ips = append(ips, ovnk.MustAddrAt(s, 7))
					}
					pc := pod{namespace: "tenant-blue", name: "pod-c", node: "node-c", ips: ips}
					objs := nodesWithVTEPs(encaps, nil)
					objs = append(objs, podObject(t, pc, l.nad, l.subnets, 12, encaps[1]))
					l.programMultiVTEP(l.nadObj, objs...)
					port := ovnk.PodPortName(l.nad, pc.namespace, pc.name)
					run := func() string {
						var out []string
						for fam := range l.subnets {
							out = append(out, l.trace(l.names().Switch(), `inport == "`+l.localPort+`" && eth.src == `+l.local.mac()+
								` && eth.dst == `+pc.mac()+` && `+ipMatch(l.local.ips[fam], pc.ips[fam])), l.binding(port))
						}
						return strings.Join(out, "\n")
					}
					return l, port, run
				}
				l, port, trace := setup()
				out := trace()
				if os.Getenv("TRACE_SHOW") != "" {
					t.Log(out)
				}
				// Every family's packet takes the same port and encap.
				want := func(port string) []string {
					var all []string
					for range l.subnets {
						all = append(all, c.want(port)...)
					}
					return all
				}
				if ok, missing := wantPath(out, want(port)); !ok {
					t.Fatalf("trace misses %q:\n%s\nNB:\n%s", missing, out, l.nbctl("show"))
				}
				for name, mutate := range c.mutations {
					l, port, trace := setup()
					mutate(l.zone, port)
					if ok, _ := wantPath(trace(), want(port)); ok {
						t.Errorf("mutation %q did not break the trace", name)
					}
				}
			})
		}
	}
}

// TestLayer3MultiVTEP: node-c has two VTEPs with transit switch port tunnel
// IDs 4 and 9; pod-c1 uses its second VTEP, pod-c2 its first. In node-a's
// zone the manager's multi-VTEP reconciler creates, on demand, the remote
// transit switch ports tstor-node-c (tunnel ID 4) and tstor-node-c_encap1
// (tunnel ID 9, Port_Binding.encap = the second Encap), the route of
// node-c's host subnet via the first and a /32 (/128) route of pod-c1 via
// the second (OKEP-5535's Layer 3 solution). ovn-trace shows each pod's
// packets leave by the port of its VTEP; the encap is read from the
// Southbound Port_Binding.
func TestLayer3MultiVTEP(t *testing.T) {
	for _, tc := range []struct {
		name    string
		subnets []string
		v6encap bool
	}{
		{"IPv4", []string{"10.200.0.0/16", "10.201.0.0/16"}, false},
		{"IPv6", []string{"fd00:200::/48", "fd00:201::/48"}, true},
		{"dual-stack", []string{"10.200.0.0/16", "fd00:200::/48", "10.201.0.0/16", "fd00:201::/48"}, false},
	} {
		type vtepPod struct {
			name string
			vtep int
			host uint64
		}
		for _, c := range []struct {
			name string
			pod  vtepPod
			// mutations break the check; they get the pod's addresses.
			mutations map[string]func(l *l3, port string, ips []netip.Addr)
		}{{
			name: "a pod behind node-c's second VTEP is reached by tstor-node-c_encap1, bound to that encap",
			pod:  vtepPod{"pod-c1", 1, 5},
			mutations: map[string]func(l *l3, port string, ips []netip.Addr){
				"remove the pod's /32 route (node-c's subnet route takes it to the first VTEP)": func(l *l3, _ string, ips []netip.Addr) {
					for _, ip := range ips {
						l.nbctl("lr-route-del", l.router(), netip.PrefixFrom(ip, ip.BitLen()).String())
					}
				},
				"clear the port's Port_Binding.encap": func(l *l3, port string, _ []netip.Addr) {
					l.sbctl("clear", "Port_Binding", port, "encap")
				},
			},
		}, {
			name: "a pod behind node-c's first VTEP is reached by tstor-node-c, bound to that encap",
			pod:  vtepPod{"pod-c2", 0, 6},
			mutations: map[string]func(l *l3, port string, ips []netip.Addr){
				"remove the port": func(l *l3, port string, _ []netip.Addr) {
					l.nbctl("lsp-del", port)
				},
			},
		}} {
			t.Run(tc.name+"/"+c.name, func(t *testing.T) {
				encaps := vtepEncaps(tc.v6encap)
				setup := func() (*l3, string, []netip.Addr, func() string) {
					l := newLayer3With(t, topology.PolicyFormAddressSet, true, tc.subnets...)
					l.remoteChassis("node-c", encaps)
					var hostC []netip.Prefix
					for _, h := range l.hostA {
						// node-c's host subnet: the one after node-b's in node-a's range.
						for _, s := range l.clusterSubnets {
							if s.Contains(h.Addr()) {
								hostC = append(hostC, hostSubnet(s, h.Bits(), 4))
							}
						}
					}
					objs := nodesWithVTEPs(encaps, map[string]string{
						ovnk.AnnotationNodeTransitSwitchPortTunnelIDs: ovnk.EncodeNodeTunnelIDs([]int{4, 9}),
						ovnk.AnnotationNodeSubnets:                    ovnk.EncodeNodeSubnets(map[string][]netip.Prefix{l.network: hostC}),
					})
					var target []netip.Addr
					for _, p := range []vtepPod{{"pod-c1", 1, 5}, {"pod-c2", 0, 6}} {
						var ips []netip.Addr
						for _, h := range hostC {
							ips = append(ips, ovnk.MustAddrAt(h, p.host))
						}
						if p.name == c.pod.name {
							target = ips
						}
						objs = append(objs, podObject(t, pod{namespace: "tenant-green", name: p.name, node: "node-c", ips: ips},
							"tenant-green/green", hostC, 0, encaps[p.vtep]))
					}
					l.programMultiVTEP(l.nadObj, objs...)
					port := ovnk.NamesFor(l.network).TransitSwitchPort("node-c", c.pod.vtep)
					run := func() string {
						var out []string
						for fam := range l.podA {
							out = append(out, l.fromPodA(fam, target[fam]), l.binding(port))
						}
						return strings.Join(out, "\n")
					}
					return l, port, target, run
				}
				want := func(l *l3, port string) []string {
					var all []string
					for range l.podA {
						all = append(all, `ingress(dp="`+l.router()+`"`, `priority 102`, `output to "`+port+`", type "remote"`,
							"binding of "+port+": requested-chassis "+chassisOf("node-c")+" encap "+chassisOf("node-c")+" "+encaps[c.pod.vtep].String())
					}
					return all
				}
				l, port, _, trace := setup()
				out := trace()
				if os.Getenv("TRACE_SHOW") != "" {
					t.Log(out)
				}
				if ok, missing := wantPath(out, want(l, port)); !ok {
					t.Fatalf("trace misses %q:\n%s\nNB:\n%s\n%s", missing, out, l.nbctl("show"), l.nbctl("lr-route-list", l.router()))
				}
				for name, mutate := range c.mutations {
					l, port, target, trace := setup()
					mutate(l, port, target)
					if ok, _ := wantPath(trace(), want(l, port)); ok {
						t.Errorf("mutation %q did not break the trace", name)
					}
				}
			})
		}
	}
}
