package topology

import (
	"net/netip"
	"testing"

	"github.com/udnkit/udnkit/dataplane/rows"
)

var (
	pfx  = netip.MustParsePrefix
	addr = netip.MustParseAddr
)

// chassisOf is a node's chassis name in the tests' networks.
func chassisOf(node string) string { return "5e1f0c1a-" + node }

// mustLayer2 is Layer2Topology, failing the test on error.
func mustLayer2(t testing.TB, net Layer2Network, nodes []Layer2Node) *rows.Desired {
	t.Helper()
	d, err := Layer2Topology(net, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
