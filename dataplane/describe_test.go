package dataplane

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/topology"
)

func TestDescribe(t *testing.T) {
	net, nodes := exampleV4()
	d, err := topology.Layer2Topology(net, nodes)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	d.Describe(&out)
	text := out.String()
	for _, want := range []string{
		"# network test12_namespace-scoped, topology layer2",
		"switch " + sw,
		"router " + tr,
		"requested-tnl-key=16715780",
		"    port trtor-" + gr1 + " mac=",
		"peer=rtotr-" + gr1,
		"router " + gr1,
		"    copp ovnkube-default (the zone's, existing or created when missing) meters{arp=arp-rate-limiter,",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("plan lacks %q:\n%s", want, text)
		}
	}
	local := 0
	for _, n := range nodes {
		if n.Local {
			local++
		}
	}
	// Gateway routers are programmed for this zone's nodes only; the others
	// are reached through remote transit-router ports.
	if n := strings.Count(text, "\nrouter GR_"); n != local {
		t.Errorf("%d gateway routers described, want %d (the local nodes)", n, local)
	}
	if n := strings.Count(text, "port trtor-"); n != len(nodes) {
		t.Errorf("%d transit-router ports described, want one per node (%d)", n, len(nodes))
	}
	d, err = topology.Layer3SubnetPolicies("ns_green", []netip.Prefix{pfx("10.200.0.0/16"), pfx("10.201.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	d.Describe(&out)
	if want := "router ns_green_ovn_cluster_router (existing, or created when missing)"; !strings.Contains(out.String(), want) {
		t.Errorf("Layer3 plan lacks %q:\n%s", want, out.String())
	}
}
