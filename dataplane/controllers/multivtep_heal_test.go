package controllers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/ovnk"
)

// vtepStack is a stack whose node-b, of another zone, has a chassis with
// one Encap per IP, with the controllers started (encaps not settable yet
// retried every 100 ms).
func vtepStack(t *testing.T, ips ...string) *stack {
	t.Helper()
	s := newStack(t)
	s.remoteChassis("node-b", ips...)
	o := s.opts()
	o.Local = func(n *corev1.Node) bool { return n.Name != "node-b" }
	rs, err := Setup(s.ctx, s.mgr, o)
	if err != nil {
		t.Fatal(err)
	}
	rs.MultiVTEP.EncapRetry = 100 * time.Millisecond
	s.start()
	return s
}

// A remote pod port's Port_Binding.encap, which no Northbound row records,
// comes back within seconds, with nothing else changing in the API: when
// another client clears it, when it points it at another Encap, and when
// the Southbound is replaced (an ovsdb-server restarted on an emptied file:
// ovn-northd binds the port again without an encap, the chassis registers
// again).
func TestMultiVTEPEncapsHeal(t *testing.T) {
	ips := []string{"10.0.0.2", "10.0.0.3", "10.0.0.4"}
	s := vtepStack(t, ips...)
	s.create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Annotations: map[string]string{ovnk.AnnotationNodeID: "2"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b", Annotations: map[string]string{ovnk.AnnotationNodeID: "3",
			ovnk.AnnotationNodeEncapIPs:                   `["10.0.0.2","10.0.0.3","10.0.0.4"]`,
			ovnk.AnnotationNodeTransitSwitchPortTunnelIDs: "[3,4,5]"}}},
		namespace("ns1"))
	s.createNAD(blueNAD())
	s.create(vtepPod("pod-1", "node-b", "203.203.0.5", "10.0.0.3"))
	const port = "ns1.tenant.blue_ns1_pod-1"
	restored := func(what string) {
		t.Helper()
		start := time.Now()
		for s.encapOf(port) != `"10.0.0.3"` {
			if time.Since(start) > 10*time.Second {
				t.Fatalf("%s: the encap is %q after %v, want 10.0.0.3", what, s.encapOf(port), time.Since(start))
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("%s: encap restored in %v", what, time.Since(start).Round(10*time.Millisecond))
	}
	restored("first set")

	s.sbctl("clear", "Port_Binding", port, "encap")
	restored("cleared by another client")

	other := s.sbctl("--bare", "--columns=_uuid", "find", "Encap", `ip="10.0.0.4"`)
	s.sbctl("set", "Port_Binding", port, "encap="+other)
	restored("pointed at another Encap")

	if err := s.db.SB.Recreate(s.ctx); err != nil {
		t.Fatal(err)
	}
	// ovn-controller of node-b's zone registers the chassis again.
	if err := ovsdbserver.AddChassis(s.db.SB, chassisOf("node-b"), "node-b", true, ips...); err != nil {
		t.Fatal(err)
	}
	restored("Southbound replaced")
}
