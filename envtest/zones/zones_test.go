// Package zones_test is the three-zone suite: one apiserver, and per OVN
// interconnect zone (OVN-Kubernetes runs one per node, named after it) its own
// Northbound and Southbound ovsdb-servers and ovn-northd and its own udnkit
// dataplane manager started with the manager's flags (--controllers=dataplane
// --zone=<node>), while one more manager runs the cluster-scoped reconcilers
// (NADs, tunnel keys, node IDs, multi-VTEP tunnel IDs, host subnets). Every
// zone is checked for what it must hold: its local node's transit-router
// ports and gateway router, the other nodes' remote ports, tunnel keys,
// names and addresses equal to every other zone's, and the OKEP-5535
// multi-VTEP ports (Layer2 remote pod ports, Layer3 transit switch ports
// with their node-subnet and /32 routes) with their Port_Binding.encap.
package zones_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/envtest/manager"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/internal/testobj/ovnkrows"
	"github.com/udnkit/udnkit/ovnk"
)

// The cluster: node-b has three VTEPs (OKEP-5535); each node is its own zone.
// Each node's chassis is named by its system-id, a UUID, as ovn-controller
// registers it; ovnkube-node publishes it in k8s.ovn.org/node-chassis-id.
var nodes = []struct {
	name, chassis string
	encapIPs      []string
}{
	{"node-a", "0f6e5a1c-9d7b-4c1e-8a3b-2b7c1d0e4f01", []string{"172.18.0.2"}},
	{"node-b", "0f6e5a1c-9d7b-4c1e-8a3b-2b7c1d0e4f02", []string{"172.18.0.3", "172.18.0.4", "172.18.0.5"}},
	{"node-c", "0f6e5a1c-9d7b-4c1e-8a3b-2b7c1d0e4f03", []string{"172.18.0.6"}},
}

const networks = `
apiVersion: v1
kind: Namespace
metadata: {name: tenant-blue, labels: {k8s.ovn.org/primary-user-defined-network: ""}}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: blue, namespace: tenant-blue}
spec:
  topology: Layer2
  layer2: {role: Primary, subnets: ["10.100.0.0/16", "fd00:100::/64"]}
---
apiVersion: v1
kind: Namespace
metadata: {name: tenant-green, labels: {k8s.ovn.org/primary-user-defined-network: ""}}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: green, namespace: tenant-green}
spec:
  topology: Layer3
  layer3:
    role: Primary
    subnets: [{cidr: 10.200.0.0/16, hostSubnet: 24}, {cidr: "fd00:200::/48", hostSubnet: 64}]
`

// zone is one interconnect zone: its databases and what was checked in it.
type zone struct {
	name    string
	ovn     *ovsdbserver.Local
	checked int // rows (or row columns) asserted
}

func (z *zone) nbctl(t *testing.T, args ...string) string {
	t.Helper()
	return ovnkrows.NB(z.ovn.NB.Address()).Must(t, args...)
}

func (z *zone) sbctl(t *testing.T, args ...string) string {
	t.Helper()
	return ovnkrows.SB(z.ovn.SB.Address()).Must(t, args...)
}

// get reads one column of a row by name ("" when the row does not exist).
func (z *zone) get(t *testing.T, table, name, column string) string {
	t.Helper()
	return z.nbctl(t, "--bare", "--columns="+column, "find", table, "name="+name)
}

// encapOf is the IP of the Encap row a port's Port_Binding points at ("" for none).
func (z *zone) encapOf(t *testing.T, port string) string {
	t.Helper()
	uuid := z.sbctl(t, "--bare", "--columns=encap", "find", "Port_Binding", "logical_port="+port)
	if uuid == "" {
		return ""
	}
	return strings.Trim(z.sbctl(t, "get", "Encap", uuid, "ip"), `"`)
}

func TestThreeZones(t *testing.T) {
	testenv.Real(t, "kube-apiserver and ovsdb-server")
	ctrl.SetLogger(logr.Discard())
	env, err := envtest.Start(envtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	dir, err := os.MkdirTemp("", "zones")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := env.Client

	// Per zone: NB, SB, northd, every chassis (the local one as
	// ovn-controller registers it, the others as OVN-Kubernetes'
	// interconnect does) and a dataplane manager for that zone.
	var zones []*zone
	for _, n := range nodes {
		l, err := ovsdbserver.StartLocal(ctx, filepath.Join(dir, "zone-"+n.name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Stop)
		z := &zone{name: n.name, ovn: l}
		for _, m := range nodes {
			if err := ovsdbserver.AddChassis(l.SB, m.chassis, m.name, m.name != n.name, m.encapIPs...); err != nil {
				t.Fatal(err)
			}
		}
		manager.Start(ctx, t, env.Config, []string{"--controllers=dataplane", "--zone=" + n.name,
			"--ovn-nb-address=" + l.NB.Address(), "--ovn-sb-address=" + l.SB.Address()}, nil)
		zones = append(zones, z)
	}
	manager.Start(ctx, t, env.Config, []string{"--controllers=nad,nodes"}, nil)

	for _, n := range nodes {
		ips, _ := json.Marshal(n.encapIPs)
		if err := c.Create(ctx, testobj.MakeNode(n.name).Annotations(map[string]string{
			ovnk.AnnotationNodeEncapIPs: string(ips), ovnk.AnnotationNodeChassisID: n.chassis}).Obj()); err != nil {
			t.Fatal(err)
		}
	}
	for _, doc := range strings.Split(networks, "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	}

	// What the cluster-scoped reconcilers allocate.
	var blueKeys []int
	testenv.Eventually(t, "tenant-blue/blue's NAD with tunnel keys", func() error {
		var nad nadv1.NetworkAttachmentDefinition
		if err := c.Get(ctx, client.ObjectKey{Namespace: "tenant-blue", Name: "blue"}, &nad); err != nil {
			return err
		}
		return json.Unmarshal([]byte(nad.Annotations[ovnk.AnnotationTunnelKeys]), &blueKeys)
	})
	ids := map[string]int{}
	var bTunnelIDs []int
	var bGreenSubnet, bGreenSubnet6 netip.Prefix
	testenv.Eventually(t, "node IDs, node-b's tunnel IDs and its tenant-green host subnet", func() error {
		for _, n := range nodes {
			var node corev1.Node
			if err := c.Get(ctx, client.ObjectKey{Name: n.name}, &node); err != nil {
				return err
			}
			id, ok, err := ovnk.DecodeNodeID(&node)
			if err != nil || !ok {
				return fmt.Errorf("node %s has no node ID yet (%v)", n.name, err)
			}
			ids[n.name] = id
			if n.name != "node-b" {
				continue
			}
			if bTunnelIDs, err = ovnk.DecodeNodeTunnelIDs(&node); err != nil || len(bTunnelIDs) != 3 {
				return fmt.Errorf("node-b tunnel IDs %v (%v)", bTunnelIDs, err)
			}
			subnets, err := ovnk.DecodeNodeSubnets(&node)
			if err != nil {
				return err
			}
			for _, s := range subnets["tenant-green_green"] {
				if s.Addr().Is4() {
					bGreenSubnet = s
				} else {
					bGreenSubnet6 = s
				}
			}
			if !bGreenSubnet.IsValid() || !bGreenSubnet6.IsValid() {
				return fmt.Errorf("node-b has no tenant-green host subnet yet: %v", subnets)
			}
		}
		return nil
	})
	t.Logf("node IDs %v, node-b tunnel IDs %v, tenant-blue tunnel keys %v, node-b's tenant-green subnet %s",
		ids, bTunnelIDs, blueKeys, bGreenSubnet)

	// Pods on node-b's second and third VTEPs (their CNI wrote encap_ip).
	// They stay Pending: no kubelet runs, and a Running pod would hold node-b
	// on the old Layer2 topology.
	greenPod1, _ := ovnk.AddrAt(bGreenSubnet, 5)
	greenPod2, _ := ovnk.AddrAt(bGreenSubnet, 6)
	greenPod1v6, _ := ovnk.AddrAt(bGreenSubnet6, 5)
	greenPod2v6, _ := ovnk.AddrAt(bGreenSubnet6, 6)
	pods := []struct{ ns, name, nad, encap, v4, v6 string }{
		{"tenant-blue", "vm-1", "tenant-blue/blue", "172.18.0.4", "10.100.0.5", "fd00:100::5"},
		{"tenant-green", "web-1", "tenant-green/green", "172.18.0.3", greenPod1.String(), greenPod1v6.String()},
		{"tenant-green", "web-2", "tenant-green/green", "172.18.0.5", greenPod2.String(), greenPod2v6.String()},
	}
	for _, p := range pods {
		ips := fmt.Sprintf(`"%s/16","%s/64"`, p.v4, p.v6)
		if p.ns == "tenant-green" {
			ips = fmt.Sprintf(`"%s/24","%s/64"`, p.v4, p.v6)
		}
		mac := ovnk.MACFromIP(netip.MustParseAddr(p.v4))
		if err := c.Create(ctx, testobj.MakePod(p.ns, p.name).Node("node-b").Annotation(ovnk.AnnotationPodNetworks, fmt.Sprintf(
			`{%q:{"ip_addresses":[%s],"mac_address":"%s","role":"primary","encap_ip":"%s"}}`, p.nad, ips, mac, p.encap)).Obj()); err != nil {
			t.Fatal(err)
		}
	}

	blue, green := ovnk.NamesFor("tenant-blue_blue"), ovnk.NamesFor("tenant-green_green")
	// The transit-router ports every zone must agree on: name -> "mac networks tnl-key".
	agreed := map[string]string{}
	for _, z := range zones {
		t.Run(z.name, func(t *testing.T) {
			checkLayer2(t, z, blue, ids, blueKeys, agreed)
			checkLayer2MultiVTEP(t, z, blue, "tenant-blue/blue", "vm-1", "172.18.0.4", "10.100.0.5", "fd00:100::5")
			checkLayer3MultiVTEP(t, z, green, bTunnelIDs, []netip.Prefix{bGreenSubnet, bGreenSubnet6}, []netip.Addr{greenPod2, greenPod2v6})
			t.Logf("zone %s: %d rows checked", z.name, z.checked)
		})
	}
}

// checkLayer2 checks the OKEP-5094 topology of tenant-blue in zone z: the
// transit router and switch with the network's tunnel keys, a trtor- port per
// node with 10 + the node ID as tunnel key (the local one peered with its
// GR's rtotr- port, the remote ones with requested-chassis naming the node's
// k8s.ovn.org/node-chassis-id, which ovn-northd binds to that remote chassis,
// as OVN defines a transit router), IPv4 and IPv6 addresses equal in every
// zone, and the local node's gateway router only.
func checkLayer2(t *testing.T, z *zone, names ovnk.Layer2Names, ids map[string]int, keys []int, agreed map[string]string) {
	trtor := names.TransitToGR("node-c")
	testenv.Eventually(t, "tenant-blue's transit router with every node's port", func() error {
		if z.get(t, "Logical_Router_Port", trtor, "name") == "" {
			return fmt.Errorf("no %s; NB:\n%s", trtor, z.nbctl(t, "show"))
		}
		return nil
	})
	if got, want := z.get(t, "Logical_Router", names.TransitRouter(), "options"), fmt.Sprintf("requested-tnl-key=%d", keys[1]); got != want {
		t.Errorf("transit router options = %q, want %q", got, want)
	}
	// upstream's initializeLogicalSwitch and addTransitSwitchConfig
	wantOC := fmt.Sprintf("interconn-ts=%s ipv6_prefix=fd00:100:: mcast_flood_unregistered=true mcast_querier=false mcast_snoop=true "+
		"requested-tnl-key=%d subnet=10.100.0.0/16", names.Switch(), keys[0])
	if got, want := z.get(t, "Logical_Switch", names.Switch(), "other_config"), wantOC; got != want {
		t.Errorf("layer2 switch other_config = %q, want %q", got, want)
	}
	// ovn-northd gives the transit router's datapath the same key in every zone.
	testenv.Eventually(t, "tenant-blue's transit router datapath with the network's key", func() error {
		if got := z.sbctl(t, "--bare", "--columns=tunnel_key", "find", "Datapath_Binding", "external_ids:name="+names.TransitRouter()); got != strconv.Itoa(keys[1]) {
			return fmt.Errorf("datapath tunnel key %q, want %d", got, keys[1])
		}
		return nil
	})
	z.checked += 3
	for _, n := range nodes {
		local := n.name == z.name
		port := names.TransitToGR(n.name)
		mac, networks := z.get(t, "Logical_Router_Port", port, "mac"), z.get(t, "Logical_Router_Port", port, "networks")
		opts, peer := z.get(t, "Logical_Router_Port", port, "options"), z.get(t, "Logical_Router_Port", port, "peer")
		key := fmt.Sprintf("requested-tnl-key=%d", ovnk.TransitRouterPortTunnelKey(ids[n.name]))
		if !strings.Contains(opts, key) {
			t.Errorf("%s options %q lack %s (10 + the node ID)", port, opts, key)
		}
		fams := strings.Fields(networks)
		if len(fams) != 2 || !strings.HasSuffix(fams[0], "/31") || !strings.HasSuffix(fams[1], "/127") {
			t.Errorf("%s networks = %q, want a /31 and a /127", port, networks)
		}
		same := mac + " " + networks + " " + key
		if prev, seen := agreed[port]; seen && prev != same {
			t.Errorf("%s is %q here and %q in another zone", port, same, prev)
		}
		agreed[port] = same
		gr := names.GatewayRouter(n.name)
		hasGR := z.get(t, "Logical_Router", gr, "name") != ""
		if local {
			if peer != names.GRToTransit(n.name) || strings.Contains(opts, "requested-chassis") {
				t.Errorf("local %s: peer %q options %q, want peer %s and no requested-chassis", port, peer, opts, names.GRToTransit(n.name))
			}
			if !hasGR || z.get(t, "Logical_Router_Port", names.GRToTransit(n.name), "peer") != port {
				t.Errorf("local node %s: gateway router %s with its rtotr- port missing", n.name, gr)
			}
		} else {
			if peer != "" || !strings.Contains(opts, "requested-chassis="+n.chassis) {
				t.Errorf("remote %s: peer %q options %q, want no peer and requested-chassis=%s", port, peer, opts, n.chassis)
			}
			// ovn-northd binds it to the remote chassis, with the key.
			testenv.Eventually(t, port+" bound to "+n.name+"'s remote chassis", func() error {
				binding := z.sbctl(t, "--bare", "--columns=type,tunnel_key", "find", "Port_Binding", "logical_port="+port)
				chassis := z.sbctl(t, "--bare", "--columns=chassis,requested_chassis", "find", "Port_Binding", "logical_port="+port)
				want := z.sbctl(t, "--bare", "--columns=_uuid", "find", "Chassis", "name="+n.chassis)
				if got := strings.Fields(binding); len(got) != 2 || got[0] != "remote" || got[1] != strconv.Itoa(ovnk.TransitRouterPortTunnelKey(ids[n.name])) {
					return fmt.Errorf("binding type and key %q, want remote and %d", binding, ovnk.TransitRouterPortTunnelKey(ids[n.name]))
				}
				if got := strings.Fields(chassis); want == "" || len(got) != 2 || got[0] != want || got[1] != want {
					return fmt.Errorf("chassis and requested_chassis %q, want chassis %s (%s) in both", chassis, want, n.chassis)
				}
				return nil
			})
			if hasGR {
				t.Errorf("remote node %s's gateway router is programmed in zone %s", n.name, z.name)
			}
		}
		z.checked += 2
	}
	routes := z.nbctl(t, "lr-route-list", names.TransitRouter())
	for _, n := range nodes {
		for _, join := range []string{fmt.Sprintf("100.65.0.%d ", ids[n.name]), fmt.Sprintf("fd99::%x ", ids[n.name])} {
			if !slices.ContainsFunc(strings.Split(routes, "\n"), func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), join) }) {
				t.Errorf("no transit router route to %s's join IP %s:\n%s", n.name, join, routes)
			}
			z.checked++
		}
	}
	if v := z.get(t, "Logical_Router_Port", names.UpgradeRouterPort(), "name"); v != "" {
		t.Errorf("upgrade port %s present although every node runs 2.0", v)
	}
}

// checkLayer2MultiVTEP: a pod on node-b's second VTEP gets a remote port on
// tenant-blue's switch in the other zones (MAC, IPv4 and IPv6, its Encap row
// in Port_Binding.encap), none in node-b's own zone, where the CNI owns it.
func checkLayer2MultiVTEP(t *testing.T, z *zone, names ovnk.Layer2Names, nad, pod, encap, v4, v6 string) {
	port := ovnk.PodPortName(nad, strings.Split(nad, "/")[0], pod)
	if z.name == "node-b" {
		time.Sleep(time.Second) // a negative check: give the zone's manager a chance to act wrongly
		if got := z.get(t, "Logical_Switch_Port", port, "name"); got != "" {
			t.Errorf("local pod %s got a remote port in its own zone", pod)
		}
		z.checked++
		return
	}
	testenv.Eventually(t, "remote port of "+pod+" with its Port_Binding.encap", func() error {
		if got := z.encapOf(t, port); got != encap {
			return fmt.Errorf("Port_Binding %s encap ip = %q, want %s; NB ports: %s", port, got, encap,
				z.nbctl(t, "--bare", "--columns=name", "find", "Logical_Switch_Port", "type=remote"))
		}
		return nil
	})
	want := fmt.Sprintf("%s %s %s", ovnk.MACFromIP(netip.MustParseAddr(v4)), v4, v6)
	if got := z.get(t, "Logical_Switch_Port", port, "addresses"); got != want {
		t.Errorf("%s addresses = %q, want %q", port, got, want)
	}
	if got := z.get(t, "Logical_Switch_Port", port, "options"); got != "requested-chassis="+nodes[1].chassis {
		t.Errorf("%s options = %q", port, got)
	}
	if !strings.Contains(z.nbctl(t, "--bare", "--columns=ports", "find", "Logical_Switch", "name="+names.Switch()),
		z.get(t, "Logical_Switch_Port", port, "_uuid")) {
		t.Errorf("%s is not on %s", port, names.Switch())
	}
	z.checked += 4
}

// checkLayer3MultiVTEP: node-b's pods use its first and third VTEPs, so
// tenant-green gets two transit switch ports for node-b with its tunnel IDs
// and their transit addresses; node-b's zone has them as router ports, the
// other zones as remote ports with Port_Binding.encap at those VTEPs, the
// node subnet routed via the first and the pod on the third VTEP by a /32.
func checkLayer3MultiVTEP(t *testing.T, z *zone, names ovnk.Layer2Names, tunnelIDs []int, subnets []netip.Prefix, pod2 []netip.Addr) {
	encaps := map[int]string{0: "172.18.0.3", 2: "172.18.0.5"}
	for _, idx := range []int{0, 2} {
		lsp := names.TransitSwitchPort("node-b", idx)
		transit, _ := ovnk.AddrAt(ovnk.DefaultTransitSubnetV4, uint64(tunnelIDs[idx]))
		transit6, _ := ovnk.AddrAt(ovnk.DefaultTransitSubnetV6, uint64(tunnelIDs[idx]))
		key := fmt.Sprintf("requested-tnl-key=%d", tunnelIDs[idx])
		testenv.Eventually(t, "tenant-green's transit switch port "+lsp, func() error {
			if z.get(t, "Logical_Switch_Port", lsp, "name") == "" {
				return fmt.Errorf("no %s; NB:\n%s", lsp, z.nbctl(t, "show"))
			}
			if z.name != "node-b" && z.encapOf(t, lsp) != encaps[idx] {
				return fmt.Errorf("Port_Binding %s encap ip = %q, want %s", lsp, z.encapOf(t, lsp), encaps[idx])
			}
			return nil
		})
		opts := z.get(t, "Logical_Switch_Port", lsp, "options")
		if !strings.Contains(opts, key) {
			t.Errorf("%s options %q lack %s (node-b's tunnel ID for that VTEP)", lsp, opts, key)
		}
		if z.name == "node-b" {
			rtots := strings.Replace(lsp, "tstor-", "rtots-", 1)
			if typ := z.get(t, "Logical_Switch_Port", lsp, "type"); typ != "router" || !strings.Contains(opts, "router-port="+rtots) {
				t.Errorf("local %s: type %q options %q", lsp, typ, opts)
			}
			if got, want := z.get(t, "Logical_Router_Port", rtots, "networks"), transit.String()+"/16 "+transit6.String()+"/64"; got != want {
				t.Errorf("%s networks = %q, want %q", rtots, got, want)
			}
			if got := z.encapOf(t, lsp); got != "" {
				t.Errorf("local %s has Port_Binding.encap %s", lsp, got)
			}
		} else {
			want := fmt.Sprintf("%s %s/16 %s/64", ovnk.MACFromIP(transit), transit, transit6)
			if typ, addrs := z.get(t, "Logical_Switch_Port", lsp, "type"), z.get(t, "Logical_Switch_Port", lsp, "addresses"); typ != "remote" || addrs != want ||
				!strings.Contains(opts, "requested-chassis="+nodes[1].chassis) {
				t.Errorf("remote %s: type %q addresses %q options %q, want remote, %q and requested-chassis=%s", lsp, typ, addrs, opts, want, nodes[1].chassis)
			}
		}
		z.checked += 3
	}
	routes := z.nbctl(t, "lr-route-list", names.ClusterRouter())
	var want []string
	for f, transit := range []netip.Prefix{ovnk.DefaultTransitSubnetV4, ovnk.DefaultTransitSubnetV6} {
		first, _ := ovnk.AddrAt(transit, uint64(tunnelIDs[0]))
		third, _ := ovnk.AddrAt(transit, uint64(tunnelIDs[2]))
		want = append(want, subnets[f].String()+" "+first.String(),
			netip.PrefixFrom(pod2[f], pod2[f].BitLen()).Masked().Addr().String()+" "+third.String())
	}
	for _, r := range want {
		has := slices.ContainsFunc(strings.Split(routes, "\n"), func(l string) bool {
			return strings.HasPrefix(strings.Join(strings.Fields(l), " "), r+" ")
		})
		if has != (z.name != "node-b") {
			t.Errorf("route %q present = %v in zone %s (only remote zones route to node-b):\n%s", r, has, z.name, routes)
		}
		z.checked++
	}
}
