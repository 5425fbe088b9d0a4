package datapath_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/udnkit/udnkit/dataplane/controllers/multivtep"
	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/ovnk"
)

// programMultiVTEP runs udnkit's multi-VTEP reconciler in zone on state: its
// first pass writes the remote ports, the next ones (once ovn-northd has
// bound them) point their Port_Bindings at their Encaps.
func programMultiVTEP(t *testing.T, zone *datapath.Node, state client.Client, net *network) {
	t.Helper()
	r := &multivtep.Reconciler{Client: state, OVN: ovnClient(t, zone), Local: func(n *corev1.Node) bool { return n.Name == zone.Name }}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: net.nad.Namespace, Name: net.nad.Name}}
	for range 100 {
		res, err := r.Reconcile(context.Background(), req)
		if err != nil {
			t.Fatalf("udnkit's multi-VTEP reconciler in %s's zone: %v", zone.Name, err)
		}
		if res.RequeueAfter == 0 {
			return
		}
		zone.NB().Must(t, "--timeout=30", "--wait=sb", "sync")
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("udnkit's multi-VTEP reconciler in %s's zone still waits for Port_Bindings", zone.Name)
}

// TestMultiVTEP sends packets to a pod behind a node's second VTEP
// (OKEP-5535's Layer2 solution): node-c gets a second underlay address and
// both as its encap IPs (ovn-encap-ip, k8s.ovn.org/node-encap-ips, one
// geneve Encap each on its chassis in every zone); pod-c's interface is
// behind the second (its pod-networks encap_ip, from which the pod's
// interface gets external_ids:encap-ip). In node-a's zone udnkit's multi-VTEP reconciler
// gives pod-c its remote port and points the Port_Binding at node-c's second
// Encap, so node-a's datapath tunnels pod-a's packets to that address: the
// underlay carries every echo request to pod-c in Geneve to the second VTEP,
// none to the first. Pointing the Port_Binding at the first VTEP's Encap,
// or removing the second Encap (which clears the Port_Binding's encap),
// sends them to the first VTEP; the reconciler's next pass heals it.
func TestMultiVTEP(t *testing.T) {
	c := needCluster(t)
	a, b, cc := c.Node("node-a"), c.Node("node-b"), c.Node("node-c")
	vtep1, vtep2 := cc.UnderlayIP, ovnk.MustAddrAt(datapath.Underlay, 22)
	encaps := []netip.Addr{vtep1, vtep2}
	if _, err := runCmd("ip", "-n", cc.Netns, "addr", "add", netip.PrefixFrom(vtep2, datapath.Underlay.Bits()).String(), "dev", "breth0"); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.Vsctl("set", "Open_vSwitch", ".", `external_ids:ovn-encap-ip="`+vtep1.String()+","+vtep2.String()+`"`); err != nil {
		t.Fatal(err)
	}
	// Afterwards node-c has one VTEP again in every zone: a tunnel of a
	// later test must not go to an address node-c no longer holds.
	t.Cleanup(func() {
		_, _ = cc.Vsctl("set", "Open_vSwitch", ".", "external_ids:ovn-encap-ip="+vtep1.String())
		_, _ = runCmd("ip", "-n", cc.Netns, "addr", "del", netip.PrefixFrom(vtep2, datapath.Underlay.Bits()).String(), "dev", "breth0")
		for _, z := range []*datapath.Node{a, b} {
			if e, err := z.SB().Run("--bare", "--columns=_uuid", "find", "Encap",
				"chassis_name="+cc.ChassisID(), `ip="`+vtep2.String()+`"`); err == nil && e != "" {
				_, _ = z.SB().Run("remove", "Chassis", cc.ChassisID(), "encaps", e)
			}
		}
	})
	// node-c's ovn-controller registers one Encap per encap IP in its zone;
	// OVN-Kubernetes' interconnect does the same in the other zones.
	testenv.Eventually(t, "node-c's second Encap", func() error {
		if len(strings.Fields(cc.SB().Must(t, "--bare", "--columns=encaps", "find", "Chassis", "name="+cc.ChassisID()))) != 2 {
			return fmt.Errorf("node-c's chassis has no second Encap:\n%s", cc.SB().Must(t, "list", "Encap"))
		}
		return nil
	})
	for _, z := range []*datapath.Node{a, b} {
		addEncap(t, z, cc, vtep2)
	}
	settle(t, c)

	violet := newNetwork(t, "tenant-violet", "violet", 4, "10.110.0.0/16")
	program(t, c, violet)
	podA := &pod{net: violet, name: "pod-a", node: a, index: 5, tunnelID: 10}
	podC := &pod{net: violet, name: "pod-c", node: cc, index: 6, tunnelID: 11, encapIP: vtep2.String()}
	// The API state: node-c with both encap IPs, the two pods. udnkit's
	// pod-port reconciler writes pod-a's ports and pod-c's in its own zone;
	// in the others, a pod on a multi-VTEP node's remote port is the
	// multi-VTEP reconciler's.
	setPods(podA.object(t), podC.object(t))
	state := apiState(t, c, violet)
	ctx := context.Background()
	var nodeC corev1.Node
	if err := state.Get(ctx, client.ObjectKey{Name: cc.Name}, &nodeC); err != nil {
		t.Fatal(err)
	}
	v, _ := json.Marshal(encaps)
	nodeC.Annotations[ovnk.AnnotationNodeEncapIPs] = string(v)
	if err := state.Update(ctx, &nodeC); err != nil {
		t.Fatal(err)
	}
	for _, z := range c.Nodes {
		reconcileAll(t, z, podPortReconciler(t, z, state), violet)
	}
	startOwnPods(t, c, podA, podC)
	heal := func() {
		for _, z := range []*datapath.Node{a, b} {
			programMultiVTEP(t, z, state, violet)
		}
		settle(t, c)
	}
	heal()
	port := podC.port()
	if got := a.SB().Must(t, "get", "Encap", a.SB().Must(t, "get", "Port_Binding", port, "encap"), "ip"); strings.Trim(got, `"`) != vtep2.String() {
		t.Fatalf("pod-c's Port_Binding in node-a's zone points at encap %s, want %s", got, vtep2)
	}

	// tunneled pings pod-c from pod-a 5 times and returns how many the
	// underlay carried to each of node-c's VTEPs, and how many were answered.
	tunneled := func() (toVTEP1, toVTEP2, answered int) {
		t.Helper()
		dst := podC.ip(false)
		seen, err := c.TunneledEchoRequests(cc, dst, func() (err error) {
			answered, err = podA.datapath.Ping(dst, 5, pingInterval)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return seen[vtep1], seen[vtep2], answered
	}
	// tunneledOnce repeats tunneled until ok holds of its counts, at most 5
	// times: the multi-VTEP rows live in the Southbound (Port_Binding.encap,
	// Encap), which ovn-nbctl --wait=hv does not wait for, so
	// ovn-controller may still tunnel by the previous rows for a moment.
	tunneledOnce := func(ok func(v1, v2, answered int) bool) (v1, v2, answered int) {
		t.Helper()
		for range 5 {
			if v1, v2, answered = tunneled(); ok(v1, v2, answered) {
				break
			}
		}
		return v1, v2, answered
	}
	throughVTEP2 := func(v1, v2, answered int) bool { return answered == 5 && v2 == 5 && v1 == 0 }

	t.Run("IPv4: a pod behind a node's second VTEP is reached through that VTEP", func(t *testing.T) {
		reach(t, c, podA, podC.ip(false))
		v1, v2, answered := tunneledOnce(throughVTEP2)
		t.Logf("pod-a pinged pod-c 5 times: %d answered; the underlay carried %d echo requests to %s (VTEP 1), %d to %s (VTEP 2)",
			answered, v1, vtep1, v2, vtep2)
		if !throughVTEP2(v1, v2, answered) {
			t.Fatalf("pod-a pinged pod-c 5 times: %d answered, the underlay carried %d to VTEP 2 %s (want 5) and %d to VTEP 1 %s (want 0)",
				answered, v2, vtep2, v1, vtep1)
		}
	})
	// encapOf is the UUID of node-c's Encap row with ip in node-a's zone.
	encapOf := func(ip netip.Addr) string {
		return a.SB().Must(t, "--bare", "--columns=_uuid", "find", "Encap", "chassis_name="+cc.ChassisID(), `ip="`+ip.String()+`"`)
	}
	// Without Port_Binding.encap, ovn-controller tunnels to any of the
	// chassis' Encaps, so each mutation leaves it only the wrong one.
	for _, m := range []struct {
		name           string
		mutate, repair func()
	}{{
		name:   "the remote port's Port_Binding.encap pointed at the node's first VTEP",
		mutate: func() { a.SB().Must(t, "set", "Port_Binding", port, "encap="+encapOf(vtep1)) },
		repair: func() {},
	}, {
		name: "the node's second Encap removed from its chassis clears the Port_Binding.encap",
		mutate: func() {
			a.SB().Must(t, "remove", "Chassis", cc.ChassisID(), "encaps", encapOf(vtep2))
			if e := a.SB().Must(t, "get", "Port_Binding", port, "encap"); e != "[]" {
				t.Fatalf("pod-c's Port_Binding.encap is %s after its Encap was removed", e)
			}
		},
		repair: func() { addEncap(t, a, cc, vtep2) },
	}} {
		t.Run("mutation: "+m.name+" tunnels to the first VTEP", func(t *testing.T) {
			m.mutate()
			settle(t, c)
			v1, v2, answered := tunneledOnce(func(_, v2, _ int) bool { return v2 == 0 })
			t.Logf("mutated: %d answered; %d echo requests to VTEP 1, %d to VTEP 2", answered, v1, v2)
			if v2 != 0 {
				t.Fatalf("mutated, the underlay still carried %d of pod-a's echo requests to VTEP 2 %s", v2, vtep2)
			}
			m.repair()
			heal()
			if v1, v2, answered := tunneledOnce(throughVTEP2); !throughVTEP2(v1, v2, answered) {
				t.Fatalf("after the reconciler's next pass: %d answered, %d to VTEP 2 (want 5), %d to VTEP 1 (want 0)", answered, v2, v1)
			}
		})
	}
}

// addEncap adds a geneve Encap with ip to node's chassis in zone's
// Southbound, as OVN-Kubernetes' interconnect registers a remote node's
// encap IPs.
func addEncap(t *testing.T, zone, node *datapath.Node, ip netip.Addr) {
	t.Helper()
	zone.SB().Must(t, "--", "--id=@e", "create", "Encap", "type=geneve", `ip="`+ip.String()+`"`, "chassis_name="+node.ChassisID(),
		"options:csum=true", "--", "add", "Chassis", node.ChassisID(), "encaps", "@e")
}
