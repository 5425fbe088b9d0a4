package network

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/webhooks/internal/webhooktest"
)

func l2(role udnv1.NetworkRole, subnets ...udnv1.CIDR) udnv1.NetworkSpec {
	return udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{Role: role, Subnets: subnets}}
}

func l3(role udnv1.NetworkRole, subnets ...udnv1.Layer3Subnet) udnv1.NetworkSpec {
	return udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer3, Layer3: &udnv1.Layer3Config{Role: role, Subnets: subnets}}
}

func sub(cidr udnv1.CIDR, host int32) udnv1.Layer3Subnet {
	return udnv1.Layer3Subnet{CIDR: cidr, HostSubnet: host}
}

var spec = field.NewPath("spec")

func TestValidateNetworkAgainstRanges(t *testing.T) {
	cfg := ovnk.DefaultClusterConfig()
	cfg.NodeSubnets = mustPrefixes("192.168.10.0/24")
	withL2 := func(mut func(*udnv1.Layer2Config)) udnv1.NetworkSpec {
		s := l2(udnv1.NetworkRolePrimary, "10.100.0.0/16", "fd00:100::/64")
		mut(s.Layer2)
		return s
	}
	cases := []struct {
		name string
		spec udnv1.NetworkSpec
		want []webhooktest.Want
	}{
		{"disjoint dual-stack Layer2", l2(udnv1.NetworkRolePrimary, "10.100.0.0/16", "fd00:100::/64"), nil},
		{"disjoint Layer3", l3(udnv1.NetworkRolePrimary, sub("10.200.0.0/16", 24)), nil},
		{"cluster subnet contained", l2(udnv1.NetworkRolePrimary, "10.244.8.0/24"),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: "spec.layer2.subnets[0]", Detail: "overlaps the cluster default network subnet 10.244.0.0/16 (--cluster-subnets)"}}},
		{"service CIDR contains the network", l3(udnv1.NetworkRoleSecondary, sub("10.96.1.0/24", 28)),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: "spec.layer3.subnets[0].cidr", Detail: "10.96.1.0/24 overlaps the service CIDR 10.96.0.0/16 (--service-cidrs)"}}},
		{"default join subnet, IPv6", l2(udnv1.NetworkRolePrimary, "10.100.0.0/16", "fd98::/48"),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: "spec.layer2.subnets[1]", Detail: "fd98::/48 overlaps the default join subnet fd98::/64 (--join-subnets)"}}},
		{"masquerade", l2(udnv1.NetworkRoleSecondary, "169.254.100.0/24"),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: "spec.layer2.subnets[0]", Detail: "masquerade subnet 169.254.0.0/17"}}},
		{"node subnet", l2(udnv1.NetworkRoleSecondary, "192.168.0.0/16"),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: "spec.layer2.subnets[0]", Detail: "node subnet 192.168.10.0/24 (--node-subnets)"}}},
		{"transit is an error for Layer3", l3(udnv1.NetworkRolePrimary, sub("100.88.0.0/14", 24)),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: "spec.layer3.subnets[0].cidr", Detail: "transit subnet 100.88.0.0/16 (--transit-subnets)"}}},
		{"transit is not an error for Layer2", l2(udnv1.NetworkRolePrimary, "100.88.0.0/16"), nil},
		{"joinSubnets checked", withL2(func(c *udnv1.Layer2Config) { c.JoinSubnets = udnv1.DualStackCIDRs{"100.64.0.0/16"} }),
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: "spec.layer2.joinSubnets[0]", Detail: "default join subnet 100.64.0.0/16"}}},
		{"reserved and infrastructure subnets checked", func() udnv1.NetworkSpec {
			s := l2(udnv1.NetworkRolePrimary, "10.0.0.0/8")
			s.Layer2.ReservedSubnets = []udnv1.NetworkCIDR{"10.96.0.0/24"}
			s.Layer2.InfrastructureSubnets = []udnv1.NetworkCIDR{"10.244.0.0/30"}
			return s
		}(), []webhooktest.Want{
			{Type: field.ErrorTypeInvalid, Field: "spec.layer2.subnets[0]", Detail: "cluster default network subnet"},
			{Type: field.ErrorTypeInvalid, Field: "spec.layer2.subnets[0]", Detail: "service CIDR"},
			{Type: field.ErrorTypeInvalid, Field: "spec.layer2.reservedSubnets[0]", Detail: "service CIDR 10.96.0.0/16"},
			{Type: field.ErrorTypeInvalid, Field: "spec.layer2.infrastructureSubnets[0]", Detail: "cluster default network subnet 10.244.0.0/16"},
		}},
		{"localnet subnets checked", udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLocalnet,
			Localnet: &udnv1.LocalnetConfig{Role: udnv1.NetworkRoleSecondary, PhysicalNetworkName: "p", Subnets: udnv1.DualStackCIDRs{"10.244.0.0/24"}}},
			[]webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: "spec.localnet.subnets[0]", Detail: "cluster default network subnet"}}},
		{"malformed CIDR is left to CEL", l2(udnv1.NetworkRolePrimary, "10.244.0.0/99"), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			webhooktest.Check(t, ValidateNetworkAgainstRanges(spec, tc.spec, cfg), tc.want)
		})
	}
}

func TestValidateNetworkSpecUpdateChecksOnlyNewValues(t *testing.T) {
	old := l3(udnv1.NetworkRolePrimary, sub("10.200.0.0/16", 24))
	cfg := ovnk.DefaultClusterConfig()
	// The cluster was reconfigured after the network was created: the
	// existing subnet now overlaps, which must not block appending.
	cfg.ClusterSubnets = mustPrefixes("10.200.0.0/16")
	appended := l3(udnv1.NetworkRolePrimary, sub("10.200.0.0/16", 24), sub("10.201.0.0/16", 24))
	webhooktest.Check(t, ValidateNetworkSpec(spec, &old, appended, cfg), nil)
	intoService := l3(udnv1.NetworkRolePrimary, sub("10.200.0.0/16", 24), sub("10.96.0.0/20", 24))
	webhooktest.Check(t, ValidateNetworkSpec(spec, &old, intoService, cfg), []webhooktest.Want{
		{Type: field.ErrorTypeInvalid, Field: "spec.layer3.subnets[1].cidr", Detail: "overlaps the service CIDR 10.96.0.0/16"}})
	// On create the same spec is refused for its first subnet.
	webhooktest.Check(t, ValidateNetworkSpec(spec, nil, appended, cfg), []webhooktest.Want{
		{Type: field.ErrorTypeInvalid, Field: "spec.layer3.subnets[0].cidr", Detail: "cluster default network subnet 10.200.0.0/16"}})
}

func TestValidateLayer3(t *testing.T) {
	p := field.NewPath("spec", "layer3")
	prim := func(s ...udnv1.Layer3Subnet) *udnv1.Layer3Config { return l3(udnv1.NetworkRolePrimary, s...).Layer3 }
	sec := func(s ...udnv1.Layer3Subnet) *udnv1.Layer3Config { return l3(udnv1.NetworkRoleSecondary, s...).Layer3 }
	a, b, c := sub("10.1.0.0/16", 24), sub("10.2.0.0/16", 24), sub("fd00:3::/48", 64)
	cases := []struct {
		name     string
		old, cur *udnv1.Layer3Config
		want     []webhooktest.Want
	}{
		{"create, disjoint", nil, prim(a, b, c), nil},
		{"create, contained", nil, prim(a, sub("10.1.2.0/24", 24)), []webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: "spec.layer3", Detail: MsgLayer3Overlap}}},
		{"create, repeated", nil, prim(a, a), []webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: "spec.layer3", Detail: MsgLayer3SameCIDR}}},
		{"create, one network once masked", nil, prim(a, sub("10.1.3.0/16", 24)), []webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: "spec.layer3", Detail: MsgLayer3Overlap}}},
		{"create, two hostSubnets for IPv4", nil, prim(a, sub("10.2.0.0/16", 26)), []webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: "spec.layer3", Detail: MsgLayer3HostSubnetPerFamily}}},
		{"append", prim(a), prim(a, b, c), nil},
		{"unchanged", prim(a, b), prim(a, b), nil},
		{"remove last", prim(a, b), prim(a), []webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: "spec.layer3", Detail: MsgLayer3AppendOnly}}},
		{"reorder", prim(a, b), prim(b, a), []webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: "spec.layer3", Detail: MsgLayer3AppendOnly}}},
		{"insert before", prim(b), prim(a, b), []webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: "spec.layer3", Detail: MsgLayer3AppendOnly}}},
		{"append overlapping", prim(a), prim(a, sub("10.1.128.0/17", 24)), []webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: "spec.layer3", Detail: MsgLayer3Overlap}}},
		{"hostSubnet changed", prim(a, b), prim(a, sub("10.2.0.0/16", 25)), []webhooktest.Want{
			{Type: field.ErrorTypeInvalid, Field: "spec.layer3", Detail: MsgLayer3HostSubnetPerFamily},
			{Type: field.ErrorTypeInvalid, Field: "spec.layer3", Detail: MsgLayer3HostSubnetImmutable}}},
		{"secondary append", sec(a), sec(a, c), []webhooktest.Want{{Type: field.ErrorTypeInvalid, Field: "spec.layer3", Detail: MsgLayer3SecondaryImmutable}}},
		{"secondary unchanged", sec(a, c), sec(a, c), nil},
		{"no layer3", nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			webhooktest.Check(t, ValidateLayer3(p, tc.old, tc.cur), tc.want)
		})
	}
}

func TestLayer3MessagesMatchTheCRD(t *testing.T) {
	// The webhook repeats the CEL rules' messages word for word; find each in
	// the generated CRD so a reworded rule cannot drift apart silently.
	// YAML folds long plain scalars over lines; unfold them.
	crd := strings.Join(strings.Fields(readRepoFile(t, "charts/udnkit/files/crds/k8s.ovn.org_userdefinednetworks.yaml")), " ")
	for _, msg := range []string{MsgLayer3AppendOnly, MsgLayer3HostSubnetImmutable, MsgLayer3SecondaryImmutable, MsgLayer3Overlap, MsgLayer3HostSubnetPerFamily} {
		if !strings.Contains(crd, msg) {
			t.Errorf("message %q is not in the CRD", msg)
		}
	}
}

func TestTransitNotes(t *testing.T) {
	cfg := ovnk.DefaultClusterConfig()
	over := l2(udnv1.NetworkRolePrimary, "100.88.0.0/20", "fd97::/64")
	if w := NetworkWarnings(spec, over, cfg); len(w) != 0 {
		t.Errorf("admission warnings %q: the transit subnets are the reconciler's to report", w)
	}
	got := TransitNotes(spec, over, cfg)
	if len(got) != 2 || !strings.Contains(got[0], "spec.layer2.subnets[0]: 100.88.0.0/20 overlaps the default transit subnet 100.88.0.0/16") ||
		!strings.Contains(got[1], "spec.layer2.subnets[1]: fd97::/64 overlaps the default transit subnet fd97::/64") {
		t.Errorf("notes = %q", got)
	}
	for name, s := range map[string]udnv1.NetworkSpec{
		"secondary Layer2":  l2(udnv1.NetworkRoleSecondary, "100.88.0.0/20"),
		"disjoint":          l2(udnv1.NetworkRolePrimary, "10.100.0.0/16"),
		"Layer3 (an error)": l3(udnv1.NetworkRolePrimary, sub("100.88.0.0/20", 24)),
	} {
		if w := TransitNotes(spec, s, cfg); len(w) != 0 {
			t.Errorf("%s: unexpected notes %q", name, w)
		}
	}
}

func mustPrefixes(cidrs ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(cidrs))
	for i, c := range cidrs {
		out[i] = netip.MustParsePrefix(c)
	}
	return out
}

func TestPredefinedFieldsWarnWhileTheFeatureIsOff(t *testing.T) {
	spec := l2(udnv1.NetworkRolePrimary, "192.168.100.0/24")
	spec.Layer2.DefaultGatewayIPs = udnv1.DualStackIPs{"192.168.100.2"}
	spec.Layer2.InfrastructureSubnets = []udnv1.NetworkCIDR{"192.168.100.0/30"}
	path := field.NewPath("spec")
	off := ovnk.DefaultClusterConfig()
	got := NetworkWarnings(path, spec, off)
	if len(got) != 2 || !strings.Contains(got[0], "spec.layer2.defaultGatewayIPs: ignored while --preconfigured-udn-addresses-enable is off") ||
		!strings.Contains(got[1], "spec.layer2.infrastructureSubnets: ignored") {
		t.Errorf("feature off: warnings = %q", got)
	}
	on := off
	on.PreconfiguredUDNAddresses = true
	if got := NetworkWarnings(path, spec, on); len(got) != 0 {
		t.Errorf("feature on: warnings = %q", got)
	}
}

// A subnet written with host bits is admitted, as upstream admits it, with a
// warning naming the network it stands for; reservedSubnets and
// infrastructureSubnets are the CRD's to refuse, so they never warn.
func TestHostBitsWarn(t *testing.T) {
	cfg := ovnk.DefaultClusterConfig()
	cfg.PreconfiguredUDNAddresses = true
	cudnPath := field.NewPath("spec", "network")
	for name, c := range map[string]struct {
		path *field.Path
		spec udnv1.NetworkSpec
		want []string
	}{
		"Layer3 as upstream's EVPN example": {spec, l3(udnv1.NetworkRolePrimary, sub("10.20.0.0/16", 24), sub("10.21.100.0/16", 24)),
			[]string{"spec.layer3.subnets[1].cidr: 10.21.100.0/16 has host bits set; it stands for the network 10.21.0.0/16, as OVN-Kubernetes reads it."}},
		"Layer2 dual-stack of a CUDN": {cudnPath, l2(udnv1.NetworkRolePrimary, "10.66.0.1/24", "fd00:66::1/64"),
			[]string{"spec.network.layer2.subnets[0]: 10.66.0.1/24 has host bits set; it stands for the network 10.66.0.0/24, as OVN-Kubernetes reads it.",
				"spec.network.layer2.subnets[1]: fd00:66::1/64 has host bits set; it stands for the network fd00:66::/64, as OVN-Kubernetes reads it."}},
		"Localnet": {cudnPath, udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLocalnet, Localnet: &udnv1.LocalnetConfig{
			Role: udnv1.NetworkRoleSecondary, PhysicalNetworkName: "physnet", Subnets: udnv1.DualStackCIDRs{"192.0.2.7/24"}}},
			[]string{"spec.network.localnet.subnets[0]: 192.0.2.7/24 has host bits set; it stands for the network 192.0.2.0/24, as OVN-Kubernetes reads it."}},
		"masked subnets": {spec, l2(udnv1.NetworkRolePrimary, "10.66.0.0/24", "fd00:66::/64"), nil},
	} {
		if got := NetworkWarnings(c.path, c.spec, cfg); !slices.Equal(got, c.want) {
			t.Errorf("%s: warnings %q, want %q", name, got, c.want)
		}
	}
}
