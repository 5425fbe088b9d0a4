package reconcilers

import (
	"flag"
	"testing"

	. "github.com/onsi/gomega"
)

func TestConfigFlags(t *testing.T) {
	g := NewWithT(t)
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
	cfg.BindFlags(fs)
	g.Expect(fs.Parse([]string{
		"--udn-join-subnets=100.66.0.0/16", "--udn-transit-subnets=100.90.0.0/16,fd96::/64",
		"--preconfigured-udn-addresses-enable",
	})).To(Succeed())
	g.Expect(fs.Lookup("controllers")).To(BeNil(), "--controllers belongs to the manager")
	cfg.Controllers = []string{ControllerUDN, ControllerNode}
	g.Expect(cfg.DefaultJoinSubnets).To(Equal("100.66.0.0/16"))
	g.Expect(cfg.PreconfiguredUDNAddresses).To(BeTrue())
	g.Expect(cfg.Controllers).To(Equal([]string{ControllerUDN, ControllerNode}))
	p, err := cfg.parse()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.transitSubnets).To(HaveLen(2))
	g.Expect(p.runs(ControllerCUDN)).To(BeFalse())

	d, err := DefaultConfig().parse()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.joinSubnets[0].String()).To(Equal("100.65.0.0/16"))
	g.Expect(d.joinSubnets[1].String()).To(Equal("fd99::/64"))
	g.Expect(d.PreconfiguredUDNAddresses).To(BeFalse())
}

func TestConfigRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"join not a CIDR", func(c *Config) { c.DefaultJoinSubnets = "100.65.0.0" }, `udn-join-subnets: "100.65.0.0" is not a CIDR`},
		{"join host bits", func(c *Config) { c.DefaultJoinSubnets = "100.65.0.1/16" }, `udn-join-subnets: "100.65.0.1/16" has host bits set`},
		{"transit two IPv4", func(c *Config) { c.DefaultTransitSubnets = "100.88.0.0/16,100.89.0.0/16" }, "udn-transit-subnets: at most one CIDR per IP family"},
		{"unknown controller", func(c *Config) { c.Controllers = []string{"udn", "pods"} }, `controllers: unknown controller "pods"`},
		{"network ID too big", func(c *Config) { c.MaxNetworkID = 4096 }, "max network ID 4096 is outside [1, 4095]"},
		{"tunnel keys in the legacy range", func(c *Config) { c.TunnelKeyFirst = 16711680 }, "tunnel key range [16711680, 16777215] is not inside [16715776, 16777215]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cfg := DefaultConfig()
			tc.mutate(&cfg)
			_, err := cfg.parse()
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}
