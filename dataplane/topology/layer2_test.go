package topology

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/ovnk"
)

func TestAddressArithmetic(t *testing.T) {
	for _, c := range []struct {
		transit netip.Prefix
		id      int
		want    string
		tr, gr  string
	}{
		{ovnk.DefaultTransitSubnetV4, 2, "100.88.0.4/31", "100.88.0.4/31", "100.88.0.5/31"},
		{ovnk.DefaultTransitSubnetV4, 200, "100.88.1.144/31", "100.88.1.144/31", "100.88.1.145/31"},
		{ovnk.DefaultTransitSubnetV6, 4, "fd97::8/127", "fd97::8/127", "fd97::9/127"},
	} {
		got, err := ovnk.TransitPeerSubnet(c.transit, c.id)
		if err != nil || got.String() != c.want {
			t.Errorf("ovnk.TransitPeerSubnet(%s, %d) = %s, %v; want %s", c.transit, c.id, got, err, c.want)
			continue
		}
		a, b := ovnk.TransitPeerIPs(got)
		if a.String() != c.tr || b.String() != c.gr {
			t.Errorf("ovnk.TransitPeerIPs(%s) = %s, %s; want %s, %s", got, a, b, c.tr, c.gr)
		}
	}
	if _, err := ovnk.TransitPeerSubnet(pfx("100.88.0.0/30"), 2); err == nil || !strings.Contains(err.Error(), "node ID 2 does not fit transit subnet 100.88.0.0/30") {
		t.Errorf("node ID beyond the transit subnet: err = %v", err)
	}
	if _, err := ovnk.TransitPeerSubnet(ovnk.DefaultTransitSubnetV4, -1); err == nil {
		t.Error("negative node ID accepted")
	}
	if mac := ovnk.MACFromIP(addr("100.65.0.2")).String(); mac != "0a:58:64:41:00:02" {
		t.Errorf("ovnk.MACFromIP(100.65.0.2) = %s, the document says 0a:58:64:41:00:02", mac)
	}
	if lla := ovnk.LinkLocalFromMAC(ovnk.MACFromIP(addr("100.65.0.4"))); lla != addr("fe80::858:64ff:fe41:4") {
		t.Errorf("ovnk.LinkLocalFromMAC(0a:58:64:41:00:04) = %s, the document says fe80::858:64ff:fe41:4", lla)
	}
	if last := ovnk.LastAddr(pfx("100.65.0.0/16")).Prev(); last != addr("100.65.255.254") {
		t.Errorf("dummy join IP = %s, the document says 100.65.255.254", last)
	}
}
