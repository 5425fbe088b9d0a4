package controllers

import (
	"testing"

	"github.com/udnkit/udnkit/ovnk"
)

// The router advertisements' mtu is the NAD's mtu, else the cluster's
// --mtu: upstream's config/cni.go (parseNetConfSingle, parseNetConfList)
// starts a NAD's config from --mtu and base_network_controller.go's
// syncNodeClusterRouterPort writes the network's MTU() into
// ipv6_ra_configs when it is above 0, so a NAD's explicit "mtu":0 (which
// the JSON decoding keeps) advertises no mtu. An IPv4 network advertises
// nothing.
func TestLayer2RouterAdvertisementMTU(t *testing.T) {
	const head = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns2_tenant-red","netAttachDefName":"ns2/tenant-red",` +
		`"topology":"layer2","role":"primary",`
	cluster := ovnk.DefaultClusterConfig()
	cluster.MTU = 1450
	for _, tc := range []struct {
		name, config, want string
		ra                 bool
	}{
		{"NAD without mtu", head + `"subnets":"10.20.0.0/24,fd20::/64"}`, "1450", true},
		{"NAD with mtu", head + `"subnets":"10.20.0.0/24,fd20::/64","mtu":1300}`, "1300", true},
		{"NAD with mtu 0", head + `"subnets":"10.20.0.0/24,fd20::/64","mtu":0}`, "", true},
		{"NAD with mtu null", head + `"subnets":"10.20.0.0/24,fd20::/64","mtu":null}`, "1450", true},
		{"IPv4 network", head + `"subnets":"10.20.0.0/24"}`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, d := redLayer2(t, cluster, tc.config)
			var ra []map[string]string
			for _, r := range d.Routers {
				for _, p := range r.Ports {
					if p.Ipv6RaConfigs != nil {
						ra = append(ra, p.Ipv6RaConfigs)
					}
				}
			}
			if !tc.ra {
				if len(ra) != 0 {
					t.Fatalf("an IPv4 network advertises %v", ra)
				}
				return
			}
			if len(ra) != 1 || ra[0]["address_mode"] != "dhcpv6_stateful" {
				t.Fatalf("ipv6_ra_configs %v, want one port's", ra)
			}
			if mtu, has := ra[0]["mtu"]; mtu != tc.want || has != (tc.want != "") {
				t.Fatalf("ipv6_ra_configs %v, want mtu %q", ra[0], tc.want)
			}
		})
	}
}
