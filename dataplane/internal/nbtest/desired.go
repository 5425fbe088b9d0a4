package nbtest

import (
	"fmt"
	"math/rand/v2"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// Owner is a topology piece of network, as the tests own rows.
func Owner(network string) rows.Owner {
	return rows.Owner{Network: network, Topology: "layer2", Piece: "nbtest"}
}

// Random is a random desired state of owner's network drawn from a small
// universe of names and values (so two states of one network share rows,
// and going from one to the other inserts, updates and deletes): up to
// three routers with ports and routes through them, and up to three
// switches with ports, with the rows that hang off them (extras). The
// same rng state gives the same rows.
//
// It leaves out ports naming DHCP options (Switch.PortDHCP): libovsdb's
// in-memory server (v0.8.1) loops forever in its weak-reference processing
// on some transactions that drop such references, which ovsdb-server
// commits; RandomWithPortDHCP has them, for tests on ovsdb-server.
func Random(rng *rand.Rand, owner rows.Owner) *rows.Desired { return random(rng, owner, false) }

// RandomWithPortDHCP is Random with ports naming DHCP options.
func RandomWithPortDHCP(rng *rand.Rand, owner rows.Owner) *rows.Desired {
	return random(rng, owner, true)
}

func random(rng *rand.Rand, owner rows.Owner, portDHCP bool) *rows.Desired {
	d := &rows.Desired{Owner: owner}
	n := owner.Network
	for r := range 3 {
		if rng.IntN(3) == 0 {
			continue
		}
		router := rows.Router{Row: nbdb.LogicalRouter{Name: fmt.Sprintf("%s_r%d", n, r),
			Options: map[string]string{"always_learn_from_arp_request": pick(rng, "true", "false")}}}
		for p := range 4 {
			if rng.IntN(2) == 0 {
				continue
			}
			name := fmt.Sprintf("%s_rp%d_%d", n, r, p)
			router.Ports = append(router.Ports, nbdb.LogicalRouterPort{Name: name,
				MAC:      fmt.Sprintf("0a:58:64:%02x:%02x:%02x", r, p, rng.IntN(2)),
				Networks: []string{fmt.Sprintf("100.%d.%d.1/24", 64+r, p+10*rng.IntN(2))}})
			if rng.IntN(2) == 0 {
				out := name
				router.Routes = append(router.Routes, nbdb.LogicalRouterStaticRoute{
					IPPrefix: fmt.Sprintf("10.%d.%d.0/24", r, p), Nexthop: fmt.Sprintf("100.%d.%d.%d", 64+r, p, 2+rng.IntN(2)),
					OutputPort: &out})
			}
		}
		d.Routers = append(d.Routers, router)
	}
	for s := range 3 {
		if rng.IntN(3) == 0 {
			continue
		}
		sw := rows.Switch{Row: nbdb.LogicalSwitch{Name: fmt.Sprintf("%s_s%d", n, s),
			OtherConfig: map[string]string{"subnet": pick(rng, "10.9.0.0/16", "10.8.0.0/16")}}}
		for p := range 5 {
			if rng.IntN(2) == 0 {
				continue
			}
			sw.Ports = append(sw.Ports, nbdb.LogicalSwitchPort{Name: fmt.Sprintf("%s_sp%d_%d", n, s, p),
				Addresses: []string{pick(rng, "unknown", "router", fmt.Sprintf("0a:58:0a:09:%02x:%02x 10.9.%d.%d", s, p, s, p))}})
		}
		d.Switches = append(d.Switches, sw)
	}
	extras(rng, d, portDHCP)
	return d
}

// extras adds to a random desired state the rows that hang off its
// routers and switches: ACLs and QoS rules on the switches, DHCP options
// their ports name (portDHCP), a port group of some of their ports with an ACL,
// static MAC bindings on a router port, and load balancers in the
// network's one load balancer group (a zone row no Apply deletes, so
// every state has it) that the routers reference.
func extras(rng *rand.Rand, d *rows.Desired, portDHCP bool) {
	n := d.Owner.Network
	group := rows.PortGroup{Row: nbdb.PortGroup{Name: n + "_pg"}}
	for i := range d.Switches {
		sw := &d.Switches[i]
		for a := range 2 {
			if rng.IntN(2) == 0 {
				sw.ACLs = append(sw.ACLs, nbdb.ACL{Direction: nbdb.ACLDirectionToLport, Priority: 1000 + a,
					Match: fmt.Sprintf("ip4.dst == 10.9.%d.0/24", a), Action: nbdb.ACLAction(pick(rng, "allow", "drop"))})
			}
		}
		if rng.IntN(2) == 0 {
			sw.QoS = append(sw.QoS, nbdb.QoS{Direction: nbdb.QoSDirectionFromLport, Priority: 100, Match: "ip4",
				Action: map[string]int{"dscp": rng.IntN(3)}})
		}
		for _, p := range sw.Ports {
			switch rng.IntN(3) {
			case 0:
				group.Ports = append(group.Ports, p.Name)
			case 1:
				if !portDHCP {
					continue
				}
				o := nbdb.DHCPOptions{Cidr: pick(rng, "10.9.0.0/16", "10.8.0.0/16"), ExternalIDs: map[string]string{ovnk.ExternalIDVM: p.Name},
					Options: map[string]string{"lease_time": pick(rng, "3500", "7200")}}
				d.DHCPOptions = append(d.DHCPOptions, o)
				if sw.PortDHCP == nil {
					sw.PortDHCP = map[string]rows.DHCPRef{}
				}
				sw.PortDHCP[p.Name] = rows.DHCPRef{V4: rows.DHCPKey(o)}
			}
		}
	}
	if len(group.Ports) > 0 {
		group.ACLs = []nbdb.ACL{{Direction: nbdb.ACLDirectionFromLport, Priority: 1001, Match: "inport == @" + n + "_pg",
			Action: nbdb.ACLAction(pick(rng, "allow", "drop"))}}
		d.PortGroups = append(d.PortGroups, group)
	}
	lbg := rows.LoadBalancerGroup{Row: nbdb.LoadBalancerGroup{Name: n + "_lbg"}}
	for l := range 2 {
		if rng.IntN(2) == 0 {
			name := fmt.Sprintf("%s_lb%d", n, l)
			d.LoadBalancers = append(d.LoadBalancers, nbdb.LoadBalancer{Name: name,
				Vips: map[string]string{fmt.Sprintf("10.96.0.%d:80", l): pick(rng, "10.9.0.5:8080", "10.9.0.6:8080")}})
			lbg.LoadBalancers = append(lbg.LoadBalancers, name)
		}
	}
	d.LoadBalancerGroups = append(d.LoadBalancerGroups, lbg)
	for i := range d.Routers {
		r := &d.Routers[i]
		if rng.IntN(2) == 0 {
			r.LoadBalancerGroups = []string{lbg.Row.Name}
		}
		if len(r.Ports) > 0 && rng.IntN(2) == 0 {
			d.StaticMACBindings = append(d.StaticMACBindings, nbdb.StaticMACBinding{LogicalPort: r.Ports[0].Name,
				IP: "169.254.0.4", MAC: pick(rng, "0a:58:a9:fe:00:04", "0a:58:a9:fe:00:05"), OverrideDynamicMAC: true})
		}
	}
}

func pick(rng *rand.Rand, values ...string) string { return values[rng.IntN(len(values))] }
