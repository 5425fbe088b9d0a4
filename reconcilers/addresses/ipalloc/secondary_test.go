package ipalloc

import (
	"slices"
	"testing"
)

// A Secondary Layer2 or Localnet network has no gateway nor management
// port: upstream's cluster manager (newIPAllocatorForNetwork in
// pkg/clustermanager/network_cluster_controller.go) excludes them only for
// Primary Layer2 networks, so the first pod gets .1; the network and IPv4
// broadcast addresses stay out (pkg/allocator/ip/allocator.go
// NewAllocatorCIDRRange), and excludeSubnets are never handed out, not even
// on request.
func TestNoGatewayPoolWithExcludeSubnets(t *testing.T) {
	p := mustNew(t, Config{Subnets: pfx("10.10.0.0/29"), ExcludeSubnets: pfx("10.10.0.4/31"), NoGateway: true})
	got := drain(t, p)
	want := addrs("10.10.0.1", "10.10.0.2", "10.10.0.3", "10.10.0.6")
	if !slices.Equal(got, want) {
		t.Errorf("dynamic order %v, want %v", got, want)
	}
	if g := p.Gateways(); len(g) != 1 || g[0].IsValid() {
		t.Errorf("gateways %v, want none", g)
	}
	q := mustNew(t, Config{Subnets: pfx("10.10.0.0/29"), ExcludeSubnets: pfx("10.10.0.4/31"), NoGateway: true})
	for req, reason := range map[string]string{"10.10.0.5": ReasonInvalidRequest, "10.10.0.7": ReasonInvalidRequest, "10.10.0.0": ReasonInvalidRequest} {
		if _, err := q.Allocate("pod", Request{IPs: []string{req}}); ReasonOf(err) != reason {
			t.Errorf("request %s: %v, want %s", req, err, reason)
		}
	}
	if _, err := q.Allocate("pod", Request{IPs: []string{"10.10.0.1"}}); err != nil {
		t.Errorf("request 10.10.0.1 (no gateway on a secondary network): %v", err)
	}
	if _, err := New(Config{Subnets: pfx("10.10.0.0/29"), ExcludeSubnets: pfx("10.20.0.0/24"), NoGateway: true}); err == nil {
		t.Errorf("an excludeSubnet outside the subnets was accepted")
	}
}
