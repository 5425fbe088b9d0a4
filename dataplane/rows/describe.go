package rows

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// Describe prints the desired rows in a layout close to `ovn-nbctl show`
// (plus routes, policies and NATs), for `udnctl plan`: each row's line is
// its table's (package schema). Routers, switches and port groups another piece owns are
// marked "(existing)": only the listed children are this piece's.
func (d *Desired) Describe(w io.Writer) {
	fmt.Fprintf(w, "# network %s, topology %s, piece %s\n", d.Owner.Network, d.Owner.Topology, d.Owner.Piece)
	for _, s := range d.Switches {
		line(w, "", nbdb.LogicalSwitchTable, &s.Row, existing(s.Ref))
		lines(w, nbdb.LogicalSwitchPortTable, s.Ports)
		for _, port := range slices.Sorted(maps.Keys(s.PortDHCP)) {
			fmt.Fprintf(w, "    port %s dhcpv4_options=%q dhcpv6_options=%q\n", port, s.PortDHCP[port].V4, s.PortDHCP[port].V6)
		}
		lines(w, nbdb.ACLTable, s.ACLs)
		lines(w, nbdb.QoSTable, s.QoS)
		if len(s.LoadBalancerGroups) > 0 {
			fmt.Fprintf(w, "    load_balancer_group %q\n", s.LoadBalancerGroups)
		}
	}
	for _, r := range d.Routers {
		line(w, "", nbdb.LogicalRouterTable, &r.Row, mark(r.Ref, r.Shared))
		if len(r.LoadBalancerGroups) > 0 {
			fmt.Fprintf(w, "    load_balancer_group %q\n", r.LoadBalancerGroups)
		}
		if r.Copp != nil {
			line(w, "    ", nbdb.CoppTable, &r.Copp.Row, " (the zone's, existing or created when missing)")
		}
		for i := range r.Ports {
			line(w, "    ", nbdb.LogicalRouterPortTable, &r.Ports[i], "")
			gcs := r.GatewayChassis[r.Ports[i].Name]
			for j := range gcs {
				line(w, "        ", nbdb.GatewayChassisTable, &gcs[j], "")
			}
		}
		lines(w, nbdb.LogicalRouterStaticRouteTable, r.Routes)
		lines(w, nbdb.LogicalRouterPolicyTable, r.Policies)
		lines(w, nbdb.NATTable, r.NATs)
	}
	for _, g := range d.PortGroups {
		row := g.Row
		row.Ports = g.Ports // by name
		line(w, "", nbdb.PortGroupTable, &row, mark(g.Ref, g.Shared))
		lines(w, nbdb.ACLTable, g.ACLs)
	}
	for i := range d.Meters {
		line(w, "", nbdb.MeterTable, &d.Meters[i].Row, " (the zone's, existing or created when missing)")
	}
	for i := range d.LoadBalancers {
		line(w, "", nbdb.LoadBalancerTable, &d.LoadBalancers[i], "")
	}
	for _, g := range d.LoadBalancerGroups {
		row := g.Row
		row.LoadBalancer = g.LoadBalancers // by name
		m := " (the zone's, existing or created when missing)"
		if g.Ref {
			m = existing(true)
		}
		line(w, "", nbdb.LoadBalancerGroupTable, &row, m)
	}
	for i := range d.StaticMACBindings {
		line(w, "", nbdb.StaticMACBindingTable, &d.StaticMACBindings[i], "")
	}
	for i := range d.AddressSets {
		line(w, "", nbdb.AddressSetTable, &d.AddressSets[i], "")
	}
	for i := range d.DHCPOptions {
		line(w, "", nbdb.DHCPOptionsTable, &d.DHCPOptions[i], "")
	}
}

// lines prints a parent's children, indented.
func lines[T any, PT interface {
	*T
	model.Model
}](w io.Writer, table string, rows []T) {
	for i := range rows {
		line(w, "    ", table, PT(&rows[i]), "")
	}
}

func line(w io.Writer, indent, table string, m model.Model, mark string) {
	fmt.Fprintf(w, "%s%s\n", indent, schema.Describe(table, m, mark))
}

func existing(ref bool) string { return mark(ref, false) }

// mark follows the name of a row another piece may own.
func mark(ref, shared bool) string {
	switch {
	case ref:
		return " (existing)"
	case shared:
		return " (existing, or created when missing)"
	}
	return ""
}
