package dataplane

import (
	"slices"
	"testing"

	"github.com/udnkit/udnkit/dataplane/sbdb"
	"github.com/udnkit/udnkit/dataplane/topology/multivtep"
)

// A binding asks for its network's resync once when it loses the encap
// udnkit saw it hold, and again when the Encap row it wants appears while
// it is lost; bindings never seen right, bindings of ports no longer
// wanted, and other Encap rows ask for nothing.
func TestEncapWatchAsksOnceWhenLost(t *testing.T) {
	var asked []string
	w := &encapWatch{lost: func(n string) { asked = append(asked, n) }}
	a3 := multivtep.PortEncap{Chassis: "node-b", EncapIP: "10.0.0.3"}
	a4 := multivtep.PortEncap{Chassis: "node-b", EncapIP: "10.0.0.4"}
	w.want("blue", map[string]multivtep.PortEncap{"p1": a3, "p2": a4})

	if net := w.check("p2", multivtep.PortEncap{}); net != "" {
		t.Errorf("a binding never seen right asked for %q", net)
	}
	w.set("p1")
	if net := w.check("p1", a3); net != "" {
		t.Errorf("a right binding asked for %q", net)
	}
	if net := w.check("p1", multivtep.PortEncap{}); net != "blue" {
		t.Errorf("a cleared binding asked for %q, want blue", net)
	}
	if net := w.check("p1", a4); net != "" {
		t.Errorf("a binding still lost asked again for %q", net)
	}
	w.changed(sbdb.EncapTable, &sbdb.Encap{ChassisName: "node-b", IP: "10.0.0.9"})
	w.changed(sbdb.EncapTable, &sbdb.Encap{ChassisName: "node-b", IP: "10.0.0.3"})
	if !slices.Equal(asked, []string{"blue"}) {
		t.Errorf("Encap rows appearing asked for %v, want blue for 10.0.0.3 alone", asked)
	}

	// Ports of the network no longer wanted are forgotten.
	w.want("blue", map[string]multivtep.PortEncap{"p2": a4})
	if w.wants("p1") || !w.wants("p2") {
		t.Errorf("after the network's ports changed: wants p1 %v, p2 %v", w.wants("p1"), w.wants("p2"))
	}
	w.want("blue", nil)
	if w.wants("p2") || len(w.byNet) != 0 {
		t.Errorf("a network without ports still has %v", w.byNet)
	}
}
