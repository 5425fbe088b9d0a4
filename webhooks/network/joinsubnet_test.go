package network_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/webhooks/internal/webhooktest"
	"github.com/udnkit/udnkit/webhooks/network"
)

func TestValidateNetworkSpecDefaultJoinSubnet(t *testing.T) {
	cfg := ovnk.DefaultClusterConfig()
	l2Join := func(join udnv1.CIDR, subnets ...udnv1.CIDR) udnv1.NetworkSpec {
		s := testobj.Layer2(udnv1.NetworkRolePrimary, subnets...)
		s.Layer2.JoinSubnets = udnv1.DualStackCIDRs{join}
		return s
	}
	old := testobj.Layer3(udnv1.NetworkRolePrimary, "10.20.0.0/16")
	for _, tc := range []struct {
		name string
		old  *udnv1.NetworkSpec
		spec udnv1.NetworkSpec
		want []string
	}{
		{"Layer2 in the IPv4 default", nil, testobj.Layer2(udnv1.NetworkRolePrimary, "100.65.0.0/24"), []string{"FieldValueInvalid spec.layer2.subnets[0]"}},
		{"Layer2 Secondary in the IPv6 default", nil, testobj.Layer2(udnv1.NetworkRoleSecondary, "10.1.0.0/24", "fd99::/80"), []string{"FieldValueInvalid spec.layer2.subnets[1]"}},
		{"Layer3 on the default", nil, testobj.Layer3(udnv1.NetworkRolePrimary, "100.65.0.0/16"), []string{"FieldValueInvalid spec.layer3.subnets[0].cidr"}},
		{"own IPv4 join subnet", nil, l2Join("100.66.0.0/16", "100.65.0.0/24"), nil},
		{"own IPv4 join subnet, IPv6 default", nil, l2Join("100.66.0.0/16", "100.65.0.0/24", "fd99::/112"), []string{"FieldValueInvalid spec.layer2.subnets[1]"}},
		{"beside the default", nil, testobj.Layer2(udnv1.NetworkRolePrimary, "100.66.0.0/24"), nil},
		{"appended Layer3 subnet on the default", &old, testobj.Layer3(udnv1.NetworkRolePrimary, "10.20.0.0/16", "100.65.0.0/16"), []string{"FieldValueInvalid spec.layer3.subnets[1].cidr"}},
		{"a subnet the old spec had is not checked again", specPtr(testobj.Layer3(udnv1.NetworkRolePrimary, "100.65.0.0/16")), testobj.Layer3(udnv1.NetworkRolePrimary, "100.65.0.0/16"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := network.ValidateNetworkSpec(field.NewPath("spec"), tc.old, tc.spec, cfg)
			if got := webhooktest.TypesAndFields(errs); !slices.Equal(got, tc.want) {
				t.Fatalf("errors %v, want %v (%v)", got, tc.want, errs)
			}
			for _, e := range errs {
				if !strings.Contains(e.Detail, "(--udn-join-subnets), which the network uses as it sets no joinSubnets of that IP family; "+ovnk.MsgSubnetJoinOverlap+".") {
					t.Errorf("detail %q lacks the rule", e.Detail)
				}
			}
		})
	}
}

func specPtr(s udnv1.NetworkSpec) *udnv1.NetworkSpec { return &s }
