package ovnk

import (
	"flag"
	"net/netip"
	"strings"
	"testing"
)

func TestClusterConfigFlags(t *testing.T) {
	cfg := DefaultClusterConfig()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(&strings.Builder{})
	cfg.BindFlags(fs)
	for name, want := range map[string]string{
		FlagJoinSubnets: "100.64.0.0/16,fd98::/64", FlagServiceCIDRs: "10.96.0.0/16", FlagTransitSubnets: "100.88.0.0/16,fd97::/64",
		FlagUDNJoinSubnets: "100.65.0.0/16,fd99::/64", FlagClusterSubnets: "10.244.0.0/16", FlagMasqueradeSubnets: "169.254.0.0/17,fd69::/112",
	} {
		if got := fs.Lookup(name).DefValue; got != want {
			t.Errorf("--%s default = %q, want %q", name, got, want)
		}
	}
	err := fs.Parse([]string{"--cluster-subnets=10.128.0.0/14, fd01::/48", "--service-cidrs=172.30.0.0/16",
		"--transit-subnets=", "--preconfigured-udn-addresses-enable", "--mtu=8900"})
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.128.0.0/14"), netip.MustParsePrefix("fd01::/48")}
	if len(cfg.ClusterSubnets) != 2 || cfg.ClusterSubnets[0] != want[0] || cfg.ClusterSubnets[1] != want[1] {
		t.Errorf("cluster subnets = %v", cfg.ClusterSubnets)
	}
	if len(cfg.TransitSubnets) != 0 || !cfg.PreconfiguredUDNAddresses || cfg.ServiceCIDRs[0].String() != "172.30.0.0/16" || cfg.MTU != 8900 {
		t.Errorf("config = %+v", cfg)
	}
	for _, bad := range []struct{ arg, want string }{
		{"--service-cidrs=10.96.0.0", `"10.96.0.0" is not a CIDR`},
		{"--join-subnets=100.64.0.1/16", "100.64.0.1/16 has host bits set; use 100.64.0.0/16"},
		{"--mtu=70000", `"70000" is not an MTU`},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(&strings.Builder{})
		c := DefaultClusterConfig()
		c.BindFlags(fs)
		if err := fs.Parse([]string{bad.arg}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err = %v, want %q", bad.arg, err, bad.want)
		}
	}
	two := DefaultClusterConfig()
	two.UDNJoinSubnets = append(two.UDNJoinSubnets, netip.MustParsePrefix("100.66.0.0/16"))
	if err := two.Validate(); err == nil || !strings.Contains(err.Error(), "--udn-join-subnets: at most one CIDR per IP family") {
		t.Errorf("two IPv4 UDN join subnets: err = %v", err)
	}
}

// --udn-allowed-default-services takes upstream's format and default; a
// malformed entry fails the flag's parse, which names the flag, with the
// entry and the rule it breaks.
func TestUDNAllowedDefaultServicesFlag(t *testing.T) {
	parse := func(args ...string) (ClusterConfig, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(&strings.Builder{})
		c := DefaultClusterConfig()
		c.BindFlags(fs)
		return c, fs.Parse(args)
	}
	c, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	if got := (*serviceList)(&c.UDNAllowedDefaultServices).String(); got != "default/kubernetes,kube-system/kube-dns" {
		t.Errorf("default = %q, want upstream's default/kubernetes,kube-system/kube-dns", got)
	}
	c, err = parse("--udn-allowed-default-services= kube-system/kube-dns ,openshift-dns/dns-default,kube-system/kube-dns")
	if err != nil {
		t.Fatal(err)
	}
	if got := (*serviceList)(&c.UDNAllowedDefaultServices).String(); got != "kube-system/kube-dns,openshift-dns/dns-default" {
		t.Errorf("parsed %q, want the two services once each, blanks trimmed", got)
	}
	for _, bad := range []struct{ value, want string }{
		{"", `service "": want namespace/name`},
		{"kubernetes", `service "kubernetes": want namespace/name`},
		{"/kubernetes", `service "/kubernetes": want namespace/name`},
		{"default/kubernetes,", `service "": want namespace/name`},
		{"a/b/c", `service "a/b/c": want namespace/name, got more than one /`},
		{"Default/kubernetes", `service "Default/kubernetes": namespace "Default": a lowercase RFC 1123 label`},
		{"default/", `service "default/": name "": a lowercase RFC 1123 subdomain`},
		{"default/kube_dns", `service "default/kube_dns": name "kube_dns": a lowercase RFC 1123 subdomain`},
	} {
		_, err := parse("--udn-allowed-default-services=" + bad.value)
		if err == nil || !strings.Contains(err.Error(), "udn-allowed-default-services") || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: err = %v, want the flag named and %q", bad.value, err, bad.want)
		}
	}
}

// The cluster's IP families are its cluster subnets' (upstream's
// config.IPv4Mode and IPv6Mode), its service CIDRs' when it names no
// cluster subnet.
func TestClusterConfigIPModes(t *testing.T) {
	p := func(cidrs ...string) []netip.Prefix { return mustPrefixes(cidrs...) }
	for _, tc := range []struct {
		name             string
		cluster, service []netip.Prefix
		v4, v6           bool
	}{
		{"default", DefaultClusterConfig().ClusterSubnets, DefaultClusterConfig().ServiceCIDRs, true, false},
		{"dual-stack", p("10.244.0.0/16", "fd00:10:244::/48"), p("10.96.0.0/16"), true, true},
		{"IPv6", p("fd00:10:244::/48"), p("10.96.0.0/16"), false, true},
		{"services only", nil, p("10.96.0.0/16", "fd00:10:96::/112"), true, true},
		{"nothing", nil, nil, false, false},
	} {
		v4, v6 := ClusterConfig{ClusterSubnets: tc.cluster, ServiceCIDRs: tc.service}.IPModes()
		if v4 != tc.v4 || v6 != tc.v6 {
			t.Errorf("%s: IPModes = %v, %v, want %v, %v", tc.name, v4, v6, tc.v4, tc.v6)
		}
	}
}
