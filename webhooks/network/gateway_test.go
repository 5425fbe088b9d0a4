package network

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
)

func TestValidateDefaultGateways(t *testing.T) {
	path := field.NewPath("spec", "layer2")
	cases := []struct {
		name     string
		subnets  udnv1.DualStackCIDRs
		gateways udnv1.DualStackIPs
		want     []string // fields of the errors
	}{
		{"usable IPv4 gateway", udnv1.DualStackCIDRs{"192.168.100.0/24"}, udnv1.DualStackIPs{"192.168.100.2"}, nil},
		{"IPv4 network address", udnv1.DualStackCIDRs{"192.168.100.0/24"}, udnv1.DualStackIPs{"192.168.100.0"}, []string{"spec.layer2.defaultGatewayIPs[0]"}},
		{"IPv4 broadcast address", udnv1.DualStackCIDRs{"192.168.100.0/24"}, udnv1.DualStackIPs{"192.168.100.255"}, []string{"spec.layer2.defaultGatewayIPs[0]"}},
		{"IPv6 subnet-router anycast", udnv1.DualStackCIDRs{"192.168.100.0/24", "fd00::/64"}, udnv1.DualStackIPs{"192.168.100.1", "fd00::"}, []string{"spec.layer2.defaultGatewayIPs[1]"}},
		{"IPv6 last address is usable", udnv1.DualStackCIDRs{"fd00::/64"}, udnv1.DualStackIPs{"fd00::ffff:ffff:ffff:ffff"}, nil},
		{"/31 has no broadcast", udnv1.DualStackCIDRs{"10.0.0.0/31"}, udnv1.DualStackIPs{"10.0.0.1"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := ValidateDefaultGateways(path, &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: c.subnets, DefaultGatewayIPs: c.gateways})
			if len(errs) != len(c.want) {
				t.Fatalf("errors %v, want fields %v", errs, c.want)
			}
			for i, e := range errs {
				if e.Type != field.ErrorTypeInvalid || e.Field != c.want[i] {
					t.Errorf("error %d: %s %s, want Invalid %s", i, e.Type, e.Field, c.want[i])
				}
			}
		})
	}
}
