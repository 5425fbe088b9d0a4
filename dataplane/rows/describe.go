package rows

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Describe prints the desired rows in a layout close to `ovn-nbctl show`
// (plus routes, policies and NATs), for `udnctl plan`. Routers and switches
// another piece owns are marked "(existing)": only the listed children are
// this piece's.
func (d *Desired) Describe(w io.Writer) {
	fmt.Fprintf(w, "# network %s, topology %s, piece %s\n", d.Owner.Network, d.Owner.Topology, d.Owner.Piece)
	for _, s := range d.Switches {
		fmt.Fprintf(w, "switch %s%s%s\n", s.Row.Name, existing(s.Ref), kv(" other_config", s.Row.OtherConfig))
		for _, p := range s.Ports {
			fmt.Fprintf(w, "    port %s", p.Name)
			if p.Type != "" {
				fmt.Fprintf(w, " type=%s", p.Type)
			}
			if len(p.Addresses) > 0 {
				fmt.Fprintf(w, " addresses=%q", p.Addresses)
			}
			fmt.Fprintf(w, "%s\n", kv(" options", p.Options))
		}
	}
	for _, r := range d.Routers {
		mark := existing(r.Ref)
		if r.Shared {
			mark = " (existing, or created when missing)"
		}
		fmt.Fprintf(w, "router %s%s%s\n", r.Row.Name, mark, kv(" options", r.Row.Options))
		for _, p := range r.Ports {
			fmt.Fprintf(w, "    port %s mac=%s networks=%q", p.Name, p.MAC, p.Networks)
			if p.Peer != nil {
				fmt.Fprintf(w, " peer=%s", *p.Peer)
			}
			fmt.Fprintf(w, "%s\n", kv(" options", p.Options))
		}
		for _, rt := range r.Routes {
			policy := ""
			if rt.Policy != nil {
				policy = " policy=" + string(*rt.Policy)
			}
			port := ""
			if rt.OutputPort != nil {
				port = " output_port=" + *rt.OutputPort
			}
			fmt.Fprintf(w, "    route %s via %s%s%s\n", rt.IPPrefix, rt.Nexthop, policy, port)
		}
		for _, p := range r.Policies {
			fmt.Fprintf(w, "    policy %d %s %s", p.Priority, p.Match, p.Action)
			if len(p.Nexthops) > 0 {
				fmt.Fprintf(w, " %s", strings.Join(p.Nexthops, ","))
			}
			fmt.Fprintln(w)
		}
		for _, n := range r.NATs {
			fmt.Fprintf(w, "    nat %s %s -> %s\n", n.Type, n.LogicalIP, n.ExternalIP)
		}
	}
	for _, a := range d.AddressSets {
		fmt.Fprintf(w, "address_set %s addresses=%q\n", a.Name, a.Addresses)
	}
	for _, o := range d.DHCPOptions {
		fmt.Fprintf(w, "dhcp_options %s%s\n", o.Cidr, kv(" options", o.Options))
	}
}

func existing(ref bool) string {
	if ref {
		return " (existing)"
	}
	return ""
}

func kv(label string, m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return label + "{" + strings.Join(parts, ",") + "}"
}
