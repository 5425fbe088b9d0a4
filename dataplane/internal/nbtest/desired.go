package nbtest

import (
	"fmt"
	"math/rand/v2"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// Owner is a topology piece of network, as the tests own rows.
func Owner(network string) rows.Owner {
	return rows.Owner{Network: network, Topology: "layer2", Piece: "nbtest"}
}

// Random is a random desired state of owner's network drawn from a small
// universe of names and values (so two states of one network share rows,
// and going from one to the other inserts, updates and deletes): up to
// three routers with ports and routes through them, and up to three
// switches with ports. The same rng state gives the same rows.
func Random(rng *rand.Rand, owner rows.Owner) *rows.Desired {
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
	return d
}

func pick(rng *rand.Rand, values ...string) string { return values[rng.IntN(len(values))] }
