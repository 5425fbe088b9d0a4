package plan_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/internal/nbtest"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// kindCase is one kind of desired row through its life: created, applied
// again (nothing sent), updated, edited and deleted by another client
// (healed by the next Apply), and removed with the piece.
type kindCase struct {
	// desired is the piece's rows holding the kind; update changes a
	// managed column of them.
	desired func() *rows.Desired
	update  func(*rows.Desired)
	// table is the kind's table; edit and remove are another client's
	// change of a managed column and deletion of its rows (given the
	// engine, for the rows' UUIDs).
	table        string
	edit, remove func(*testing.T, *engine.Engine) []ovsdb.Operation
	// bad makes the rows one Apply refuses, with an error naming want.
	bad  func(*rows.Desired)
	want string
	// left are the tables whose rows stay when the piece goes (zone
	// rows), with how many.
	left map[string]int
}

// fresh is what a database that never held anything holds once d is applied.
func fresh(t *testing.T, d *rows.Desired) nbtest.Rows {
	t.Helper()
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, nil)
	if _, err := e.Apply(context.Background(), d); err != nil {
		t.Fatalf("apply to an empty database: %v", err)
	}
	return nbtest.Snapshot(t, addr)
}

func (c kindCase) run(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, nil)
	wantHolds := func(what string, d *rows.Desired) {
		t.Helper()
		got, want := nbtest.Snapshot(t, addr), fresh(t, d)
		if len(want[c.table]) == 0 {
			t.Fatalf("fixture: the desired rows hold no %s rows", c.table)
		}
		if got.String() != want.String() {
			t.Fatalf("%s: the database differs from a fresh Apply of the desired rows:\ngot:\n%s\nwant:\n%s", what, got, want)
		}
	}
	d := c.desired()
	if res, err := e.Apply(ctx, d); err != nil || res.Operations == 0 {
		t.Fatalf("first Apply: %d operations, %v", res.Operations, err)
	}
	wantHolds("created", c.desired())
	refused := c.desired()
	c.bad(refused)
	before := nbtest.Snapshot(t, addr)
	if _, err := e.Apply(ctx, refused); err == nil || !strings.Contains(err.Error(), c.want) {
		t.Errorf("Apply of refused rows: %v, want an error naming %q", err, c.want)
	}
	if after := nbtest.Snapshot(t, addr); after.String() != before.String() {
		t.Fatalf("a refused Apply changed the database:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if res, err := e.Apply(ctx, c.desired()); err != nil || res.Operations != 0 {
		t.Fatalf("second Apply of the same rows: %d operations, %v; want none", res.Operations, err)
	}
	up := c.desired()
	c.update(up)
	if res, err := e.Apply(ctx, up); err != nil || res.Operations == 0 {
		t.Fatalf("Apply of the updated rows: %d operations, %v", res.Operations, err)
	}
	wantHolds("updated", up)
	for what, change := range map[string]func(*testing.T, *engine.Engine) []ovsdb.Operation{"edited": c.edit, "deleted": c.remove} {
		if change == nil {
			continue
		}
		nbtest.Transact(t, addr, change(t, e)...)
		if got := nbtest.Snapshot(t, addr); got.String() == fresh(t, up).String() {
			t.Fatalf("fixture: another client's %s rows left the database as it was", what)
		}
		if _, err := e.Apply(ctx, up); err != nil {
			t.Fatal(err)
		}
		wantHolds("another client's "+what+" rows, healed", up)
	}
	if _, err := e.Apply(ctx, &rows.Desired{Owner: d.Owner}); err != nil {
		t.Fatal(err)
	}
	for table, rs := range nbtest.Snapshot(t, addr) {
		if table != nbdb.NBGlobalTable && len(rs) != c.left[table] {
			t.Errorf("after the piece's removal %s holds %d rows, want %d:\n%s", table, len(rs), c.left[table], strings.Join(rs, "\n"))
		}
	}
}

// uuids are the cached rows of a table.
func uuids(e *engine.Engine, table string) []string {
	var out []string
	for u := range e.NB.Cache().Table(table).Rows() {
		out = append(out, u)
	}
	return out
}

// updateAll is another client's update of every row of table.
func updateAll(table string, row ovsdb.Row) func(*testing.T, *engine.Engine) []ovsdb.Operation {
	return func(t *testing.T, e *engine.Engine) []ovsdb.Operation {
		var ops []ovsdb.Operation
		for _, u := range uuids(e, table) {
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: table, Row: row,
				Where: []ovsdb.Condition{ovsdb.NewCondition("_uuid", ovsdb.ConditionEqual, ovsdb.UUID{GoUUID: u})}})
		}
		return ops
	}
}

// takeOut is another client's removal of every row of a child table from
// its parents' column (which deletes them).
func takeOut(parent, column, table string) func(*testing.T, *engine.Engine) []ovsdb.Operation {
	return func(t *testing.T, e *engine.Engine) []ovsdb.Operation {
		var ops []ovsdb.Operation
		for _, p := range uuids(e, parent) {
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationMutate, Table: parent,
				Where:     []ovsdb.Condition{ovsdb.NewCondition("_uuid", ovsdb.ConditionEqual, ovsdb.UUID{GoUUID: p})},
				Mutations: []ovsdb.Mutation{{Column: column, Mutator: ovsdb.MutateOperationDelete, Value: setOf(uuids(e, table))}}})
		}
		return ops
	}
}

// deleteAll is another client's deletion of every row of a root table.
func deleteAll(table string) func(*testing.T, *engine.Engine) []ovsdb.Operation {
	return func(t *testing.T, e *engine.Engine) []ovsdb.Operation {
		var ops []ovsdb.Operation
		for _, u := range uuids(e, table) {
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationDelete, Table: table,
				Where: []ovsdb.Condition{ovsdb.NewCondition("_uuid", ovsdb.ConditionEqual, ovsdb.UUID{GoUUID: u})}})
		}
		return ops
	}
}

func setOf(uuids []string) ovsdb.OvsSet {
	s := ovsdb.OvsSet{}
	for _, u := range uuids {
		s.GoSet = append(s.GoSet, ovsdb.UUID{GoUUID: u})
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// aclSwitch is a switch with two ACLs (one keyed by upstream's
// k8s.ovn.org/id, one by name, direction, priority and match) and a QoS
// rule.
func aclSwitch() *rows.Desired {
	return &rows.Desired{Owner: nbtest.Owner("net1"), Switches: []rows.Switch{{
		Row:   nbdb.LogicalSwitch{Name: "net1_s0"},
		Ports: []nbdb.LogicalSwitchPort{{Name: "net1_sp0", Addresses: []string{"unknown"}}},
		ACLs: []nbdb.ACL{
			{Action: nbdb.ACLActionAllowRelated, Direction: nbdb.ACLDirectionToLport, Priority: 1001, Match: "ip4.src==10.0.0.1",
				Name: ptr("net1_allow"), Tier: 2, Options: map[string]string{"apply-after-lb": "true"},
				ExternalIDs: map[string]string{ovnk.ExternalIDObjectID: "udnkit:test:allow"}},
			{Action: nbdb.ACLActionDrop, Direction: nbdb.ACLDirectionFromLport, Priority: 1000, Match: "ip4", Log: true,
				Severity: ptr(nbdb.ACLSeverityInfo), Meter: ptr("acl-logging")},
		},
		QoS: []nbdb.QoS{{Direction: nbdb.QoSDirectionFromLport, Priority: 100, Match: "ip4.src==10.0.0.0/24",
			Action: map[string]int{"dscp": 10}}},
	}}}
}

func TestSwitchACLsLifecycle(t *testing.T) {
	kindCase{
		desired: aclSwitch,
		update: func(d *rows.Desired) {
			d.Switches[0].ACLs[0].Match = "ip4.src==10.0.0.2" // same k8s.ovn.org/id: an update
			d.Switches[0].ACLs[1].Action = nbdb.ACLActionReject
		},
		bad: func(d *rows.Desired) {
			d.Switches[0].Ports[0].Addresses = []string{"dynamic"}
			d.Switches[0].ACLs = append(d.Switches[0].ACLs, d.Switches[0].ACLs[0])
		},
		want:   "udnkit:test:allow",
		table:  nbdb.ACLTable,
		edit:   updateAll(nbdb.ACLTable, ovsdb.Row{"action": "pass", "tier": 1}),
		remove: takeOut(nbdb.LogicalSwitchTable, "acls", nbdb.ACLTable),
	}.run(t)
}

func TestSwitchQoSLifecycle(t *testing.T) {
	kindCase{
		desired: aclSwitch,
		update: func(d *rows.Desired) {
			d.Switches[0].QoS[0].Action = map[string]int{"dscp": 12}
			d.Switches[0].QoS = append(d.Switches[0].QoS, nbdb.QoS{Direction: nbdb.QoSDirectionToLport, Priority: 90,
				Match: "ip6", Bandwidth: map[string]int{"rate": 1000}})
		},
		bad: func(d *rows.Desired) {
			d.Switches[0].Ports[0].Addresses = []string{"dynamic"}
			d.Switches[0].QoS = append(d.Switches[0].QoS, d.Switches[0].QoS[0])
		},
		want:   "ip4.src==10.0.0.0/24",
		table:  nbdb.QoSTable,
		edit:   updateAll(nbdb.QoSTable, ovsdb.Row{"priority": 5}),
		remove: takeOut(nbdb.LogicalSwitchTable, "qos_rules", nbdb.QoSTable),
	}.run(t)
}

// withPortGroup is aclSwitch with a port group holding its port and an
// ACL.
func withPortGroup() *rows.Desired {
	d := aclSwitch()
	d.PortGroups = []rows.PortGroup{{Row: nbdb.PortGroup{Name: "net1_pg"}, Ports: []string{"net1_sp0"},
		ACLs: []nbdb.ACL{{Action: nbdb.ACLActionAllow, Direction: nbdb.ACLDirectionToLport, Priority: 1010,
			Match: "outport == @net1_pg", ExternalIDs: map[string]string{ovnk.ExternalIDObjectID: "udnkit:test:pg"}}}}}
	return d
}

func TestPortGroupLifecycle(t *testing.T) {
	kindCase{
		desired: withPortGroup,
		update: func(d *rows.Desired) {
			d.Switches[0].Ports = append(d.Switches[0].Ports, nbdb.LogicalSwitchPort{Name: "net1_sp1", Addresses: []string{"unknown"}})
			d.PortGroups[0].Ports = []string{"net1_sp1"}
			d.PortGroups[0].ACLs[0].Priority = 1011
		},
		bad: func(d *rows.Desired) {
			d.Switches[0].Ports[0].Addresses = []string{"dynamic"}
			d.PortGroups[0].Row.Name, d.PortGroups[0].Ref = "net1_nope", true
		},
		want:   `port group "net1_nope" not found`,
		table:  nbdb.PortGroupTable,
		edit:   updateAll(nbdb.PortGroupTable, ovsdb.Row{"ports": setOf(nil)}),
		remove: deleteAll(nbdb.PortGroupTable),
	}.run(t)
}

// A port group another client owns, named Shared (or Ref), keeps its
// external_ids and its other members: the piece adds its port and ACL,
// and takes out only those when it no longer wants the group. A Ref group
// that does not exist is refused, naming it.
func TestPortGroupOfAnotherClient(t *testing.T) {
	ctx := context.Background()
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, nil)
	nbtest.Transact(t, addr,
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable, UUIDName: "fport", Row: ovsdb.Row{"name": "foreign_p"}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchTable, Row: ovsdb.Row{"name": "foreign_s", "ports": setOf([]string{"fport"})}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.PortGroupTable,
			Row: ovsdb.Row{"name": "net1_pg", "ports": setOf([]string{"fport"}), "external_ids": ovsMap(map[string]string{"owner": "other"})}})
	before := nbtest.Snapshot(t, addr)

	for _, ref := range []bool{false, true} {
		d := withPortGroup()
		d.PortGroups[0].Shared, d.PortGroups[0].Ref = !ref, ref
		d.PortGroups[0].Ports = []string{"net1_sp0", "foreign_p"}
		if ops := plans(t, e, d); len(ops) == 0 {
			t.Fatal("no plan")
		}
		if _, err := e.Apply(ctx, d); err != nil {
			t.Fatal(err)
		}
		pg := nbtest.Snapshot(t, addr)[nbdb.PortGroupTable]
		if len(pg) != 1 || !strings.Contains(pg[0], `external_ids={"owner":"other"} name="net1_pg"`) ||
			!strings.Contains(pg[0], "foreign_p") || !strings.Contains(pg[0], "net1_sp0") || !strings.Contains(pg[0], "@net1_pg") {
			t.Fatalf("ref %v: the group, with the piece's port and ACL: %v", ref, pg)
		}
		d.PortGroups = nil
		if _, err := e.Apply(ctx, d); err != nil {
			t.Fatal(err)
		}
		if got := nbtest.Snapshot(t, addr)[nbdb.PortGroupTable]; strings.Join(got, "") != strings.Join(before[nbdb.PortGroupTable], "") {
			t.Errorf("ref %v: the group once the piece no longer wants it: %v, want as it was: %v", ref, got, before[nbdb.PortGroupTable])
		}
	}

	d := withPortGroup()
	d.PortGroups[0].Row.Name, d.PortGroups[0].Ref = "net1_missing", true
	if _, err := e.Apply(ctx, d); err == nil || !strings.Contains(err.Error(), `port group "net1_missing" not found`) {
		t.Errorf("Apply with a missing Ref group: %v", err)
	}
	d = withPortGroup()
	if _, err := e.Apply(ctx, d); err == nil || !strings.Contains(err.Error(), `port group "net1_pg" exists but is not owned`) {
		t.Errorf("Apply of a group another client owns, neither Ref nor Shared: %v", err)
	}
}

// A port group of one udnkit piece naming another piece's ports (a
// policy's group holding the pods piece's ports) keeps them when the ports'
// piece applies again, changed or not: membership is the group's piece's to
// plan. A member leaves when its port is deleted or the group's piece stops
// naming it.
func TestPortGroupNamesAnotherPiecesPorts(t *testing.T) {
	ctx := context.Background()
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, nil)
	ports := aclSwitch()
	ports.Switches[0].ACLs, ports.Switches[0].QoS = nil, nil
	ports.Switches[0].Ports = append(ports.Switches[0].Ports, nbdb.LogicalSwitchPort{Name: "net1_sp1", Addresses: []string{"unknown"}})
	policy := &rows.Desired{Owner: rows.Owner{Network: "net1", Topology: "layer2", Piece: "policy"},
		PortGroups: []rows.PortGroup{{Row: nbdb.PortGroup{Name: "net1_np"}, Ports: []string{"net1_sp0", "net1_sp1"}}}}
	for _, d := range []*rows.Desired{ports, policy} {
		if _, err := e.Apply(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	members := func() string {
		pg := nbtest.Snapshot(t, addr)[nbdb.PortGroupTable]
		if len(pg) != 1 {
			t.Fatalf("port groups: %v", pg)
		}
		var names []string
		for _, n := range []string{"net1_sp0", "net1_sp1"} {
			if strings.Contains(pg[0], `name="`+n+`"`) {
				names = append(names, n)
			}
		}
		return strings.Join(names, ",")
	}
	if got := members(); got != "net1_sp0,net1_sp1" {
		t.Fatalf("members after both pieces applied: %q", got)
	}
	ports.Switches[0].Ports[0].Addresses = []string{"0a:58:0a:00:00:05 10.0.0.5"}
	if _, err := e.Apply(ctx, ports); err != nil {
		t.Fatal(err)
	}
	if got := members(); got != "net1_sp0,net1_sp1" {
		t.Errorf("members after the ports' piece applied a changed port: %q, want both kept", got)
	}
	ports.Switches[0].Ports = ports.Switches[0].Ports[:1]
	if _, err := e.Apply(ctx, ports); err != nil {
		t.Fatal(err)
	}
	if got := members(); got != "net1_sp0" {
		t.Errorf("members after net1_sp1 was deleted: %q", got)
	}
	policy.PortGroups[0].Ports = nil
	if _, err := e.Apply(ctx, policy); err != nil {
		t.Fatal(err)
	}
	if got := members(); got != "" {
		t.Errorf("members after the group's piece named none: %q", got)
	}
}

// A zone meter is inserted with its band when missing, then never
// updated nor deleted: not when its row differs, not with the piece. One
// another client deleted is inserted again. A band without a rate is
// refused and nothing is written.
func TestZoneMeter(t *testing.T) {
	ctx := context.Background()
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, nil)
	d := func() *rows.Desired {
		d := aclSwitch()
		d.Meters = []rows.ZoneMeter{{Row: nbdb.Meter{Name: "acl-logging", Unit: nbdb.MeterUnitPktps, Fair: ptr(true)},
			Band: nbdb.MeterBand{Action: nbdb.MeterBandActionDrop, Rate: 20}}}
		return d
	}
	bad := d()
	bad.Meters[0].Band.Rate = 0
	if _, err := e.Apply(ctx, bad); err == nil || !strings.Contains(err.Error(), `meter "acl-logging"`) {
		t.Errorf("Apply of a meter without a band rate: %v", err)
	}
	if s := nbtest.Snapshot(t, addr); len(s[nbdb.LogicalSwitchTable])+len(s[nbdb.MeterTable]) != 0 {
		t.Fatalf("a refused Apply wrote rows:\n%s", s)
	}
	want := `bands=[Meter_Band{action="drop" burst_size="0" external_ids={} rate="20"}] external_ids={} fair="true" name="acl-logging"`
	for _, step := range []string{"created", "deleted by another client and created again"} {
		if _, err := e.Apply(ctx, d()); err != nil {
			t.Fatal(err)
		}
		m := nbtest.Snapshot(t, addr)[nbdb.MeterTable]
		if len(m) != 1 || !strings.Contains(m[0], want) {
			t.Fatalf("%s: meters %v, want acl-logging with %s", step, m, want)
		}
		nbtest.Transact(t, addr, deleteAll(nbdb.MeterTable)(t, e)...)
	}
	if _, err := e.Apply(ctx, d()); err != nil {
		t.Fatal(err)
	}
	changed := d()
	changed.Meters[0].Band.Rate = 99
	changed.Meters[0].Row.Unit = nbdb.MeterUnitKbps
	before := nbtest.Snapshot(t, addr)[nbdb.MeterTable]
	if res, err := e.Apply(ctx, changed); err != nil || res.Operations != 0 {
		t.Errorf("Apply of an existing meter described otherwise: %d operations, %v; want none", res.Operations, err)
	}
	if _, err := e.Apply(ctx, &rows.Desired{Owner: changed.Owner}); err != nil {
		t.Fatal(err)
	}
	if after := nbtest.Snapshot(t, addr)[nbdb.MeterTable]; strings.Join(after, "") != strings.Join(before, "") {
		t.Errorf("the zone meter changed with the piece's removal: %v, was %v", after, before)
	}
}

// gatewayRouter is a router whose port holds two static MAC bindings.
func gatewayRouter() *rows.Desired {
	return &rows.Desired{Owner: nbtest.Owner("net1"),
		Routers: []rows.Router{{Row: nbdb.LogicalRouter{Name: "net1_gr"},
			Ports: []nbdb.LogicalRouterPort{{Name: "net1_rtoe", MAC: "0a:58:64:40:00:01", Networks: []string{"172.18.0.2/16"}}}}},
		StaticMACBindings: []nbdb.StaticMACBinding{
			{LogicalPort: "net1_rtoe", IP: "169.254.0.4", MAC: "0a:58:a9:fe:00:04", OverrideDynamicMAC: true},
			{LogicalPort: "net1_rtoe", IP: "fd69::4", MAC: "0a:58:a9:fe:00:04", OverrideDynamicMAC: true},
		}}
}

func TestStaticMACBindingLifecycle(t *testing.T) {
	kindCase{
		desired: gatewayRouter,
		update: func(d *rows.Desired) {
			d.StaticMACBindings[0].MAC = "0a:58:a9:fe:00:05"
			d.StaticMACBindings = d.StaticMACBindings[:1]
		},
		bad: func(d *rows.Desired) {
			d.Routers[0].Ports[0].MAC = "0a:58:64:40:00:99"
			d.StaticMACBindings[0].LogicalPort = "net1_nope"
		},
		want:   `logical port "net1_nope" is not a router port of the piece`,
		table:  nbdb.StaticMACBindingTable,
		edit:   updateAll(nbdb.StaticMACBindingTable, ovsdb.Row{"mac": "0a:58:00:00:00:01"}),
		remove: deleteAll(nbdb.StaticMACBindingTable),
	}.run(t)
}

// withLoadBalancers is a router and a switch that reference a load
// balancer group holding the piece's load balancer.
func withLoadBalancers() *rows.Desired {
	tcp := nbdb.LoadBalancerProtocolTCP
	return &rows.Desired{Owner: nbtest.Owner("net1"),
		Routers:  []rows.Router{{Row: nbdb.LogicalRouter{Name: "net1_r0"}, LoadBalancerGroups: []string{"net1_lbg"}}},
		Switches: []rows.Switch{{Row: nbdb.LogicalSwitch{Name: "net1_s0"}, LoadBalancerGroups: []string{"net1_lbg"}}},
		LoadBalancers: []nbdb.LoadBalancer{{Name: "net1_lb", Protocol: &tcp, Vips: map[string]string{"10.96.0.1:443": "10.0.0.5:6443"},
			Options: map[string]string{"event": "false"}}},
		LoadBalancerGroups: []rows.LoadBalancerGroup{{Row: nbdb.LoadBalancerGroup{Name: "net1_lbg"}, LoadBalancers: []string{"net1_lb"}}},
	}
}

func TestLoadBalancerLifecycle(t *testing.T) {
	kindCase{
		desired: withLoadBalancers,
		update: func(d *rows.Desired) {
			d.LoadBalancers[0].Vips = map[string]string{"10.96.0.1:443": "10.0.0.6:6443"}
			d.LoadBalancers = append(d.LoadBalancers, nbdb.LoadBalancer{Name: "net1_lb2", Vips: map[string]string{"10.96.0.10:53": "10.0.0.7:53"}})
			d.LoadBalancerGroups[0].LoadBalancers = append(d.LoadBalancerGroups[0].LoadBalancers, "net1_lb2")
		},
		bad: func(d *rows.Desired) {
			d.LoadBalancers[0].Vips = nil
			d.LoadBalancerGroups[0].LoadBalancers = append(d.LoadBalancerGroups[0].LoadBalancers, "net1_nope")
		},
		want:   `load balancer "net1_nope" is not one of the desired load balancers`,
		table:  nbdb.LoadBalancerTable,
		edit:   updateAll(nbdb.LoadBalancerTable, ovsdb.Row{"vips": ovsMap(map[string]string{"10.96.0.1:443": "10.0.0.9:1"})}),
		remove: deleteAll(nbdb.LoadBalancerTable),
		left:   map[string]int{nbdb.LoadBalancerGroupTable: 1}, // a zone row: no external_ids to own it by
	}.run(t)
}

func TestLoadBalancerGroupLifecycle(t *testing.T) {
	kindCase{
		desired: withLoadBalancers,
		update: func(d *rows.Desired) {
			d.LoadBalancerGroups = append(d.LoadBalancerGroups, rows.LoadBalancerGroup{Row: nbdb.LoadBalancerGroup{Name: "net1_lbg2"},
				LoadBalancers: []string{"net1_lb"}})
			d.LoadBalancerGroups[0].LoadBalancers = nil
			d.Routers[0].LoadBalancerGroups = []string{"net1_lbg2"}
		},
		bad: func(d *rows.Desired) {
			d.LoadBalancers[0].Vips = nil
			d.Switches[0].LoadBalancerGroups = append(d.Switches[0].LoadBalancerGroups, "net1_nope")
		},
		want:  `logical switch "net1_s0": load balancer group "net1_nope" not found`,
		table: nbdb.LoadBalancerGroupTable,
		edit:  updateAll(nbdb.LoadBalancerGroupTable, ovsdb.Row{"load_balancer": setOf(nil)}),
		remove: func(t *testing.T, e *engine.Engine) []ovsdb.Operation {
			return append(updateAll(nbdb.LogicalRouterTable, ovsdb.Row{"load_balancer_group": setOf(nil)})(t, e),
				updateAll(nbdb.LogicalSwitchTable, ovsdb.Row{"load_balancer_group": setOf(nil)})(t, e)...)
		},
		left: map[string]int{nbdb.LoadBalancerGroupTable: 2},
	}.run(t)
}

// A Ref router keeps the load balancer groups another client gave it; the
// piece adds its own. A Ref group that does not exist is refused.
func TestLoadBalancerGroupsOnAnotherClientsRouter(t *testing.T) {
	ctx := context.Background()
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, nil)
	nbtest.Transact(t, addr,
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LoadBalancerGroupTable, UUIDName: "g", Row: ovsdb.Row{"name": "other_lbg"}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterTable, Row: ovsdb.Row{"name": "net1_r0", "load_balancer_group": setOf([]string{"g"})}})
	d := withLoadBalancers()
	d.Routers[0].Ref = true
	if _, err := e.Apply(ctx, d); err != nil {
		t.Fatal(err)
	}
	r := nbtest.Snapshot(t, addr)[nbdb.LogicalRouterTable]
	if len(r) != 1 || !strings.Contains(r[0], `name="other_lbg"`) || !strings.Contains(r[0], `name="net1_lbg"`) {
		t.Errorf("the Ref router's groups: %v, want other_lbg and net1_lbg", r)
	}
	d.LoadBalancerGroups[0].Ref, d.LoadBalancerGroups[0].Row.Name = true, "net1_missing"
	_, err := e.Apply(ctx, d)
	if missing := (*rows.MissingRowError)(nil); !errors.As(err, &missing) || !strings.Contains(err.Error(), `load balancer group "net1_missing" not found`) {
		t.Errorf("Apply with a missing Ref group: %v, want a MissingRowError (the caller waits for the group)", err)
	}
}

// withPortDHCP is a switch whose port names the piece's DHCPv4 options.
func withPortDHCP() *rows.Desired {
	v4 := nbdb.DHCPOptions{Cidr: "10.0.0.0/24", ExternalIDs: map[string]string{ovnk.ExternalIDVM: "ns/vm1"},
		Options: map[string]string{"lease_time": "3500", "router": "10.0.0.1"}}
	return &rows.Desired{Owner: nbtest.Owner("net1"), DHCPOptions: []nbdb.DHCPOptions{v4},
		Switches: []rows.Switch{{Row: nbdb.LogicalSwitch{Name: "net1_s0"},
			Ports:    []nbdb.LogicalSwitchPort{{Name: "net1_vm1", Addresses: []string{"0a:58:0a:00:00:05 10.0.0.5"}}, {Name: "net1_vm2"}},
			PortDHCP: map[string]rows.DHCPRef{"net1_vm1": {V4: rows.DHCPKey(v4)}}}}}
}

func TestPortDHCPLifecycle(t *testing.T) {
	kindCase{
		desired: withPortDHCP,
		update: func(d *rows.Desired) {
			v6 := nbdb.DHCPOptions{Cidr: "fd00::/64", ExternalIDs: map[string]string{ovnk.ExternalIDVM: "ns/vm1"}}
			d.DHCPOptions = append(d.DHCPOptions, v6)
			d.Switches[0].PortDHCP["net1_vm1"] = rows.DHCPRef{V6: rows.DHCPKey(v6)}
			d.Switches[0].PortDHCP["net1_vm2"] = rows.DHCPRef{V4: rows.DHCPKey(d.DHCPOptions[0])}
		},
		bad: func(d *rows.Desired) {
			d.Switches[0].Ports[0].Addresses = nil
			d.Switches[0].PortDHCP["net1_vm2"] = rows.DHCPRef{V6: "ns/vm9|fd00::/64"}
		},
		want:  `DHCP options "ns/vm9|fd00::/64" are not among the desired DHCP options`,
		table: nbdb.DHCPOptionsTable,
		edit: func(t *testing.T, e *engine.Engine) []ovsdb.Operation {
			return updateAll(nbdb.LogicalSwitchPortTable, ovsdb.Row{"dhcpv4_options": setOf(nil), "dhcpv6_options": setOf(nil)})(t, e)
		},
		remove: deleteAll(nbdb.DHCPOptionsTable),
	}.run(t)
}

// A piece's load balancers on a router and a switch it does not own (Ref):
// added to their load_balancer column, taken out when no longer named
// (deleted with the piece), another client's load balancer kept; a name
// that is not one of the piece's load balancers is refused.
func TestLoadBalancersOnRoutersAndSwitches(t *testing.T) {
	ctx := context.Background()
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, nil)
	nbtest.Transact(t, addr,
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LoadBalancerTable, UUIDName: "o", Row: ovsdb.Row{"name": "other_lb"}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterTable, Row: ovsdb.Row{"name": "net1_r0", "load_balancer": setOf([]string{"o"})}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchTable, Row: ovsdb.Row{"name": "net1_s0"}})
	tcp := nbdb.LoadBalancerProtocolTCP
	lb := func(name string) nbdb.LoadBalancer {
		return nbdb.LoadBalancer{Name: name, Protocol: &tcp, Vips: map[string]string{"10.96.0.1:443": "10.0.0.5:6443"}}
	}
	d := &rows.Desired{Owner: nbtest.Owner("net1"), LoadBalancers: []nbdb.LoadBalancer{lb("net1_lb"), lb("net1_lb2")},
		Routers:  []rows.Router{{Row: nbdb.LogicalRouter{Name: "net1_r0"}, Ref: true, LoadBalancers: []string{"net1_lb"}}},
		Switches: []rows.Switch{{Row: nbdb.LogicalSwitch{Name: "net1_s0"}, Ref: true, LoadBalancers: []string{"net1_lb", "net1_lb2"}}}}
	if _, err := e.Apply(ctx, d); err != nil {
		t.Fatal(err)
	}
	names := func(table string) string {
		t.Helper()
		r := nbtest.Snapshot(t, addr)[table]
		if len(r) != 1 {
			t.Fatalf("%s: %v", table, r)
		}
		return r[0]
	}
	if r := names(nbdb.LogicalRouterTable); !strings.Contains(r, `name="other_lb"`) || !strings.Contains(r, `name="net1_lb"`) {
		t.Errorf("router: %s, want other_lb and net1_lb", r)
	}
	if s := names(nbdb.LogicalSwitchTable); !strings.Contains(s, `name="net1_lb"`) || !strings.Contains(s, `name="net1_lb2"`) {
		t.Errorf("switch: %s, want net1_lb and net1_lb2", s)
	}
	d.Switches[0].LoadBalancers = []string{"net1_lb2"}
	d.Routers[0].LoadBalancers = nil
	if _, err := e.Apply(ctx, d); err != nil {
		t.Fatal(err)
	}
	if r := names(nbdb.LogicalRouterTable); !strings.Contains(r, `name="other_lb"`) || strings.Contains(r, `name="net1_lb"`) {
		t.Errorf("router after net1_lb is no longer named: %s, want other_lb only", r)
	}
	if s := names(nbdb.LogicalSwitchTable); strings.Contains(s, `name="net1_lb"`) || !strings.Contains(s, `name="net1_lb2"`) {
		t.Errorf("switch after net1_lb is no longer named: %s, want net1_lb2 only", s)
	}
	d.Routers[0].LoadBalancers = []string{"net1_nope"}
	if _, err := e.Apply(ctx, d); err == nil || !strings.Contains(err.Error(), `logical router "net1_r0": load balancer "net1_nope" is not one of the desired load balancers`) {
		t.Errorf("Apply naming a load balancer the piece does not have: %v", err)
	}
}
