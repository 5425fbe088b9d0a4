package netids_test

import (
	"net/netip"
	"testing"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/reconcilers/netids"
)

// The dataplane derives transit peer addresses with its own helpers; until
// it calls TransitPeerSubnets, both must agree for every node ID.
func TestTransitPeerSubnetsAgreeWithDataplane(t *testing.T) {
	for _, transit := range []netip.Prefix{netids.DefaultTransitSubnetV4, netids.DefaultTransitSubnetV6, netip.MustParsePrefix("100.89.0.0/16")} {
		for id := 0; id <= netids.MaxNodeID; id += 97 {
			tr, gr, err := netids.TransitPeerSubnets(transit, id)
			if err != nil {
				t.Fatal(err)
			}
			peer, err := dataplane.TransitPeerSubnet(transit, id)
			if err != nil {
				t.Fatal(err)
			}
			dtr, dgr := dataplane.TransitPeerIPs(peer)
			if tr != dtr || gr != dgr {
				t.Fatalf("%v node %d: reconcilers %v/%v, dataplane %v/%v", transit, id, tr, gr, dtr, dgr)
			}
		}
	}
}
