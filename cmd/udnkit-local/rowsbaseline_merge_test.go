package main

import (
	"testing"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// mergeDesired folds the pieces of a network into one Desired: a switch
// or router another piece refers to becomes the owning piece's with every
// piece's children, the root rows are every piece's, and a zone meter two
// pieces name is one.
func TestMergeDesired(t *testing.T) {
	owner := rows.Owner{Network: "ns_net", Topology: "layer2", Piece: "transit-router"}
	meter := rows.ZoneMeter{Row: nbdb.Meter{Name: "acl-logging"}, Band: nbdb.MeterBand{Rate: 20}}
	topo := &rows.Desired{Owner: owner,
		Switches: []rows.Switch{{Row: nbdb.LogicalSwitch{Name: "sw", OtherConfig: map[string]string{"k": "v"}},
			Ports: []nbdb.LogicalSwitchPort{{Name: "stor"}}}},
		Routers: []rows.Router{{Row: nbdb.LogicalRouter{Name: "tr"}, Ports: []nbdb.LogicalRouterPort{{Name: "rtos"}},
			GatewayChassis: map[string][]nbdb.GatewayChassis{"rtos": {{Name: "gc", ChassisName: "c"}}}}},
		Meters: []rows.ZoneMeter{meter}}
	ports := &rows.Desired{Owner: rows.Owner{Network: "ns_net", Topology: "layer2", Piece: "pods"},
		Switches: []rows.Switch{{Row: nbdb.LogicalSwitch{Name: "sw"}, Ref: true, Ports: []nbdb.LogicalSwitchPort{{Name: "pod-a"}, {Name: "pod-b"}}}}}
	policy := &rows.Desired{Owner: rows.Owner{Network: "ns_net", Topology: "layer2", Piece: "egressip-defaults"},
		Routers:     []rows.Router{{Row: nbdb.LogicalRouter{Name: "tr"}, Ref: true, Policies: []nbdb.LogicalRouterPolicy{{Priority: 102}}}},
		Switches:    []rows.Switch{{Row: nbdb.LogicalSwitch{Name: "sw"}, Ref: true, QoS: []nbdb.QoS{{Priority: 1}}}},
		AddressSets: []nbdb.AddressSet{{Name: "as"}},
		PortGroups:  []rows.PortGroup{{Row: nbdb.PortGroup{Name: "pg"}, Ports: []string{"pod-a"}, ACLs: []nbdb.ACL{{Priority: 1}}}},
		Meters:      []rows.ZoneMeter{meter}}

	got := mergeDesired(owner, topo, ports, policy)
	if err := got.Validate(); err != nil {
		t.Fatalf("the merged Desired does not validate: %v", err)
	}
	if got.Owner.Key() != owner.Key() {
		t.Errorf("owner = %+v, want %+v", got.Owner, owner)
	}
	if len(got.Switches) != 1 || len(got.Routers) != 1 {
		t.Fatalf("%d switches and %d routers, want one of each", len(got.Switches), len(got.Routers))
	}
	sw, tr := got.Switches[0], got.Routers[0]
	if sw.Ref || sw.Row.OtherConfig["k"] != "v" || tr.Ref {
		t.Errorf("the switch and router should be the owning piece's rows, got switch %+v (ref %v), router ref %v", sw.Row, sw.Ref, tr.Ref)
	}
	if len(sw.Ports) != 3 || len(sw.QoS) != 1 || len(tr.Ports) != 1 || len(tr.Policies) != 1 || len(tr.GatewayChassis["rtos"]) != 1 {
		t.Errorf("children: switch %d ports %d QoS, router %d ports %d policies %d gateway chassis; want 3, 1, 1, 1, 1",
			len(sw.Ports), len(sw.QoS), len(tr.Ports), len(tr.Policies), len(tr.GatewayChassis["rtos"]))
	}
	// A piece referring to the switch first: the owner's row still wins.
	if sw := mergeDesired(owner, ports, topo).Switches[0]; sw.Ref || sw.Row.OtherConfig["k"] != "v" || len(sw.Ports) != 3 {
		t.Errorf("pods first: switch %+v (ref %v, %d ports), want the owning piece's row with 3 ports", sw.Row, sw.Ref, len(sw.Ports))
	}
	if len(got.AddressSets) != 1 || len(got.PortGroups) != 1 || len(got.PortGroups[0].ACLs) != 1 || len(got.Meters) != 1 {
		t.Errorf("root rows: %d address sets, %d port groups, %d meters; want 1 each", len(got.AddressSets), len(got.PortGroups), len(got.Meters))
	}
}
