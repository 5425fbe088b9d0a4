package reconcilers

import (
	"flag"
	"io"
	"net/netip"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/udnkit/udnkit/reconcilers/nodes"
)

func TestConfigRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"transit two IPv4", func(c *Config) {
			c.Cluster.TransitSubnets = []netip.Prefix{netip.MustParsePrefix("100.88.0.0/16"), netip.MustParsePrefix("100.89.0.0/16")}
		}, "--transit-subnets: at most one CIDR per IP family"},
		{"unknown controller", func(c *Config) { c.Controllers = []string{"udn", "pods"} }, `controllers: unknown controller "pods"`},
		{"network ID too big", func(c *Config) { c.MaxNetworkID = 4096 }, "max network ID 4096 is outside [1, 4095]"},
		{"tunnel keys in the legacy range", func(c *Config) { c.TunnelKeyFirst = 16711680 }, "tunnel key range [16711680, 16777215] is not inside [16715779, 16777215]"},
		{"unknown node ID source", func(c *Config) { c.NodeIDSource = "adopt" }, `--node-id-source: "adopt" is not a node ID source (allocate or read)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cfg := DefaultConfig()
			tc.mutate(&cfg)
			g.Expect(cfg.validate()).To(MatchError(ContainSubstring(tc.want)))
		})
	}
	g := NewWithT(t)
	cfg := DefaultConfig()
	cfg.MaxConcurrentReconciles = 0
	g.Expect(cfg.validate()).To(Succeed())
	g.Expect(cfg.MaxConcurrentReconciles).To(Equal(1), "workers default to at least one")
}

// --node-id-source is allocate unless set; read reaches the node
// controller's options, and any other value is refused when parsed.
func TestNodeIDSourceFlag(t *testing.T) {
	g := NewWithT(t)
	parse := func(args ...string) (Config, error) {
		cfg := DefaultConfig()
		fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cfg.BindFlags(fs)
		return cfg, fs.Parse(args)
	}
	cfg, err := parse()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.NodeOptions().NodeIDs).To(Equal(nodes.NodeIDsAllocate))
	cfg, err = parse("--node-id-source=read")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.NodeOptions().NodeIDs).To(Equal(nodes.NodeIDsRead))
	_, err = parse("--node-id-source=cluster-manager")
	g.Expect(err).To(MatchError(ContainSubstring(`"cluster-manager" is not a node ID source (allocate or read)`)))
}
