package topology

import (
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// udnkitOnly is a row or column udnkit writes that upstream's
// ovnkube-controller does not write for the same network (column "" is
// the whole row), and why udnkit writes it.
type udnkitOnly struct {
	table, row, column string
	why                string
}

// differs is a (table, column) both write where udnkit's value is not
// upstream's: udnkit's value (checked against the plan, so closing the gap
// fails the test until the entry moves to a parity table), upstream's and
// why it stays different.
type differs struct {
	table, row, column string
	udnkit, upstream   string
	why                string
}

// parityCase is one plan with the tables checked against it.
type parityCase struct {
	name    string
	plan    func(t *testing.T) *rows.Desired
	same    []parity
	only    []udnkitOnly
	differs []differs
}

// parityCases are every plan the golden tables are checked against; each
// table file adds its own.
var parityCases []parityCase

func addParityCase(c parityCase) bool { parityCases = append(parityCases, c); return true }

// publishedParityCounts are the figures README.md and docs/parity.md publish:
// plans, values as upstream writes them, udnkit-only entries, known
// differences.
var publishedParityCounts = [4]int{19, 394, 10, 7}

// TestRowsMatchUpstream holds every table of every case against its plan:
// a parity entry must read upstream's value, a udnkit-only entry must name a
// row (and column) the plan has, a differs entry must read udnkit's value.
func TestRowsMatchUpstream(t *testing.T) {
	same, only, diff := map[parity]bool{}, map[udnkitOnly]bool{}, map[differs]bool{}
	defer func() {
		got := [4]int{len(parityCases), len(same), len(only), len(diff)}
		t.Logf("%d plans: %d values as upstream writes them, %d udnkit-only rows or columns, %d known differences",
			got[0], got[1], got[2], got[3])
		if got != publishedParityCounts {
			t.Errorf("the tables hold %v (plans, parity values, udnkit-only, differences); README.md's compatibility section "+
				"and docs/parity.md publish %v: update both documents and publishedParityCounts together", got, publishedParityCounts)
		}
	}()
	for _, c := range parityCases {
		d := c.plan(t)
		for _, p := range c.same {
			same[p] = true
			got, err := cell(d, p.table, p.row, p.column)
			if err != nil {
				t.Errorf("%s: %s %s %s: %v (upstream: %s)", c.name, p.table, p.row, p.column, err, p.upstream)
			} else if got != p.want {
				t.Errorf("%s: %s %s %s = %q, upstream writes %q (%s)", c.name, p.table, p.row, p.column, got, p.want, p.upstream)
			}
		}
		for _, o := range c.only {
			only[o] = true
			if rowByKey(d, o.table, o.row) == nil {
				t.Errorf("%s: udnkit-only %s %s: no such row in the plan", c.name, o.table, o.row)
				continue
			}
			if o.column != "" {
				if _, err := cell(d, o.table, o.row, o.column); err != nil {
					t.Errorf("%s: udnkit-only %s %s %s: %v", c.name, o.table, o.row, o.column, err)
				}
			}
		}
		for _, x := range c.differs {
			diff[x] = true
			got, err := cell(d, x.table, x.row, x.column)
			if err != nil {
				t.Errorf("%s: %s %s %s: %v", c.name, x.table, x.row, x.column, err)
			} else if got != x.udnkit {
				t.Errorf("%s: %s %s %s = %q, the differs table says udnkit writes %q (upstream: %q): "+
					"move it to the parity table if it now matches upstream", c.name, x.table, x.row, x.column, got, x.udnkit, x.upstream)
			}
		}
	}
}

// TestParityCoversEveryRowKind fails when a plan holds a kind of row (its
// table and its identity with network, node and pod names and addresses
// reduced to their roles, see rowKind) that no entry of the plan's tables
// names: every row kind udnkit writes is compared with upstream, listed as
// udnkit's own or listed as different.
func TestParityCoversEveryRowKind(t *testing.T) {
	if len(parityCases) < 7 {
		t.Fatalf("only %d parity cases are registered", len(parityCases))
	}
	for _, c := range parityCases {
		d := c.plan(t)
		covered := map[string]bool{}
		name := func(table, row string) {
			for _, r := range planRows(d) {
				if r.table == table && r.key == row {
					covered[r.kind] = true
				}
			}
		}
		for _, p := range c.same {
			name(p.table, p.row)
		}
		for _, o := range c.only {
			name(o.table, o.row)
		}
		for _, x := range c.differs {
			name(x.table, x.row)
		}
		kinds := map[string]string{}
		for _, r := range planRows(d) {
			kinds[r.kind] = r.key
		}
		if len(kinds) == 0 {
			t.Errorf("%s: the plan has no rows", c.name)
		}
		for _, k := range slices.Sorted(maps.Keys(kinds)) {
			if !covered[k] {
				t.Errorf("%s: no parity, udnkit-only or differs entry names a row of kind %q (e.g. %q)", c.name, k, kinds[k])
			}
		}
	}
}

// TestPlanRowsReadsEveryDesiredField fails when the desired rows gain a
// field (a new table, a new kind of child) that planRows does not list, so
// the coverage test cannot miss its rows.
func TestPlanRowsReadsEveryDesiredField(t *testing.T) {
	read := map[reflect.Type][]string{
		reflect.TypeFor[rows.Desired](): {"Owner", "Routers", "Switches", "DHCPOptions", "AddressSets",
			"PortGroups", "LoadBalancers", "LoadBalancerGroups", "StaticMACBindings", "Meters"},
		reflect.TypeFor[rows.Router](): {"Row", "Ref", "Shared", "Copp", "Ports", "Routes", "Policies", "NATs", "GatewayChassis",
			"LoadBalancerGroups", "LoadBalancers"},
		reflect.TypeFor[rows.Switch]():            {"Row", "Ref", "Shared", "Ports", "ACLs", "QoS", "LoadBalancerGroups", "LoadBalancers", "PortDHCP"},
		reflect.TypeFor[rows.PortGroup]():         {"Row", "Ref", "Shared", "Ports", "ACLs"},
		reflect.TypeFor[rows.LoadBalancerGroup](): {"Row", "Ref", "Shared", "LoadBalancers"},
		reflect.TypeFor[rows.ZoneMeter]():         {"Row", "Band"},
		reflect.TypeFor[rows.Copp]():              {"Row", "Meters", "Band"},
	}
	for typ, fields := range read {
		for i := range typ.NumField() {
			if f := typ.Field(i).Name; !slices.Contains(fields, f) {
				t.Errorf("%s.%s: planRows does not list its rows (add them, and parity entries for their kinds)", typ.Name(), f)
			}
		}
	}
}

// planRow is one row of a plan: its table, the key cell reads it by, its
// kind and the row itself.
type planRow struct {
	table, key, kind string
	row              any
}

// planRows lists every row of d. Keys: routers, switches and ports by name;
// a static route "<router> <ip_prefix>"; a Gateway_Chassis by its port's
// name; a NAT "<router> <type> <logical_ip>"; a policy "<router>
// <priority> <match>"; a router's Copp and Meters by name and a
// Meter_Band by its meter's; DHCP_Options "<vm> <cidr>"; an Address_Set by
// name.
func planRows(d *rows.Desired) []planRow {
	var out []planRow
	add := func(table, key, identity string, row any) {
		out = append(out, planRow{table: table, key: key, kind: table + ": " + roles(d, identity), row: row})
	}
	for _, r := range d.Routers {
		rn := r.Row.Name
		add("Logical_Router", rn, rn, r.Row)
		for _, p := range r.Ports {
			id := p.Name
			if p.Options["requested-chassis"] != "" {
				id += " remote"
			}
			add("Logical_Router_Port", p.Name, id, p)
			for _, g := range r.GatewayChassis[p.Name] {
				add("Gateway_Chassis", p.Name, p.Name+" gateway chassis", g)
			}
		}
		for _, s := range r.Routes {
			id := fmt.Sprintf("%s %s %s via %s", rn, deref(s.Policy), s.IPPrefix, s.Nexthop)
			if s.OutputPort != nil {
				id += " out " + *s.OutputPort
			}
			add("Logical_Router_Static_Route", rn+" "+s.IPPrefix, id, s)
		}
		for _, p := range r.Policies {
			key := rn + " " + strconv.Itoa(p.Priority) + " " + p.Match
			add("Logical_Router_Policy", key, fmt.Sprintf("%s %d %s %s", rn, p.Priority, p.Action, p.Match), p)
		}
		for _, n := range r.NATs {
			add("NAT", rn+" "+string(n.Type)+" "+n.LogicalIP, fmt.Sprintf("%s %s %s to %s", rn, n.Type, n.LogicalIP, n.ExternalIP), n)
		}
		if c := r.Copp; c != nil {
			add("Copp", c.Row.Name, c.Row.Name, c.Row)
			for _, m := range c.Meters {
				add("Meter", m.Name, "a meter of "+c.Row.Name, m)
				add("Meter_Band", m.Name, "a meter's band", c.Band)
			}
		}
	}
	for _, s := range d.Switches {
		add("Logical_Switch", s.Row.Name, s.Row.Name, s.Row)
		for _, p := range s.Ports {
			add("Logical_Switch_Port", p.Name, p.Name+" "+p.Type, p)
		}
		for _, a := range s.ACLs {
			aclRow(add, s.Row.Name, a)
		}
		for _, q := range s.QoS {
			add("QoS", fmt.Sprintf("%s %s %d %s", s.Row.Name, q.Direction, q.Priority, q.Match), fmt.Sprintf("%s %s %d %s", s.Row.Name, q.Direction, q.Priority, q.Match), q)
		}
		// LoadBalancerGroups, LoadBalancers and PortDHCP are references
		// (columns of the switch and its ports), compared with the rows
		// that hold them.
	}
	for _, g := range d.PortGroups {
		add("Port_Group", g.Row.Name, g.Row.Name, g.Row)
		for _, a := range g.ACLs {
			aclRow(add, g.Row.Name, a)
		}
	}
	for _, l := range d.LoadBalancers {
		add("Load_Balancer", l.Name, l.Name, l)
	}
	for _, g := range d.LoadBalancerGroups {
		row := g.Row
		row.LoadBalancer = g.LoadBalancers // by name
		add("Load_Balancer_Group", g.Row.Name, g.Row.Name, row)
	}
	for _, b := range d.StaticMACBindings {
		add("Static_MAC_Binding", b.LogicalPort+" "+b.IP, b.LogicalPort+" "+b.IP, b)
	}
	for _, m := range d.Meters {
		add("Meter", m.Row.Name, m.Row.Name, m.Row)
		add("Meter_Band", m.Row.Name, "a meter's band", m.Band)
	}
	for _, o := range d.DHCPOptions {
		add("DHCP_Options", o.ExternalIDs[ovnk.ExternalIDVM]+" "+o.Cidr, "vm "+o.ExternalIDs[ovnk.ExternalIDVM]+" "+o.Cidr, o)
	}
	for _, a := range d.AddressSets {
		add("Address_Set", a.Name, a.Name, a)
	}
	return out
}

// aclRow lists an ACL of a switch or port group, keyed "<parent> <direction>
// <priority> <match>".
func aclRow(add func(table, key, identity string, row any), parent string, a nbdb.ACL) {
	key := fmt.Sprintf("%s %s %d %s", parent, a.Direction, a.Priority, a.Match)
	add("ACL", key, key, a)
}

// rowByKey is the row of a table that planRows keys by row, or nil.
func rowByKey(d *rows.Desired, table, row string) any {
	for _, r := range planRows(d) {
		if r.table == table && r.key == row {
			return r.row
		}
	}
	return nil
}

// withOwnerIDs is a row's external_ids as the planner writes them: the
// row's own with the owner's keys over them.
func withOwnerIDs(d *rows.Desired, m map[string]string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, d.Owner.IDs())
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// addressRoles name the address ranges the parity plans use, so a row's
// kind says "a join IP" instead of 100.65.0.3 or fd99::3.
var addressRoles = []struct {
	role     string
	prefixes []netip.Prefix
}{
	{"pod-subnet", []netip.Prefix{pfx("10.100.0.0/16"), pfx("fd00:100::/64"), pfx("10.128.0.0/14"), pfx("fd00:128::/48")}},
	{"join", []netip.Prefix{pfx("100.65.0.0/16"), pfx("fd99::/64")}},
	{"transit", []netip.Prefix{pfx("100.88.0.0/16"), pfx("fd97::/64")}},
	{"masquerade", []netip.Prefix{pfx("169.254.0.0/16"), pfx("fd69::/112")}},
	{"service", []netip.Prefix{pfx("10.96.0.0/16"), pfx("fd96::/112")}},
	{"node", []netip.Prefix{pfx("172.18.0.0/16"), pfx("fc00:f853::/64")}},
}

var (
	addrToken = regexp.MustCompile(`[0-9a-fA-F.:]*[.:][0-9a-fA-F.:]*(/[0-9]+)?`)
	nameToken = regexp.MustCompile(`(node|pod|vm)[0-9]+\b`)
	familyTok = regexp.MustCompile(`\bip[46]\b`)
)

// roles reduces a row's identity to its kind: the network's name, node,
// pod and VM names, address families and addresses become their roles.
func roles(d *rows.Desired, s string) string {
	if n := d.Owner.Network; n != "" {
		s = strings.ReplaceAll(s, n, "<net>")
	}
	s = nameToken.ReplaceAllString(s, "<$1>")
	s = familyTok.ReplaceAllString(s, "ipN")
	return addrToken.ReplaceAllStringFunc(s, func(tok string) string {
		p, err := netip.ParsePrefix(tok)
		if err != nil {
			a, aerr := netip.ParseAddr(tok)
			if aerr != nil {
				return tok
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		shape := "host"
		if p.Bits() < p.Addr().BitLen() {
			shape = "net"
		}
		for _, r := range addressRoles {
			if slices.ContainsFunc(r.prefixes, func(q netip.Prefix) bool { return q.Contains(p.Addr()) }) {
				return "<" + r.role + " " + shape + ">"
			}
		}
		return "<address " + shape + ">"
	})
}

// policyKey and natKey are the keys planRows gives a policy and a NAT.
func policyKey(router string, priority int, match string) string {
	return router + " " + strconv.Itoa(priority) + " " + match
}

func natKey(router string, typ nbdb.NATType, logicalIP string) string {
	return router + " " + string(typ) + " " + logicalIP
}
