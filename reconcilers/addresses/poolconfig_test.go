package addresses

import (
	"testing"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
)

// The pool's gateway and management addresses are the NAD's and OVN's:
// with preconfigured-udn-addresses-enable off the NetConf carries no
// defaultGatewayIPs or infrastructureSubnets, so the pool ignores them too.
func TestPoolFollowsTheFeatureFlag(t *testing.T) {
	spec := udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{
		Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"192.168.100.0/24"},
		InfrastructureSubnets: []udnv1.NetworkCIDR{"192.168.100.0/30"}, ReservedSubnets: []udnv1.NetworkCIDR{"192.168.100.200/29"},
		DefaultGatewayIPs: udnv1.DualStackIPs{"192.168.100.2"},
	}}
	for _, tc := range []struct {
		predefined   bool
		gw, mgmt     string
		infraRefused bool
	}{
		{predefined: false, gw: "192.168.100.1", mgmt: "192.168.100.2", infraRefused: false},
		{predefined: true, gw: "192.168.100.2", mgmt: "192.168.100.1", infraRefused: true},
	} {
		cfg, err := poolConfig(spec, tc.predefined)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ipalloc.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if gw, mgmt := p.Gateways()[0].String(), p.ManagementIPs()[0].String(); gw != tc.gw || mgmt != tc.mgmt {
			t.Errorf("predefined=%v: gateway %s, management %s; want %s, %s", tc.predefined, gw, mgmt, tc.gw, tc.mgmt)
		}
		// .3 is in infrastructureSubnets: OVN-Kubernetes' when the feature is
		// on, a workload address when it is off.
		_, err = p.Allocate("pod/x/y", ipalloc.Request{IPs: []string{"192.168.100.3"}})
		if refused := err != nil; refused != tc.infraRefused {
			t.Errorf("predefined=%v: a request in infrastructureSubnets: err = %v", tc.predefined, err)
		}
	}
}
