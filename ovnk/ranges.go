package ovnk

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InternalRange is one of the cluster's internal ranges, described for
// messages: "overlaps the <What> <Prefix> (--<Flag>)".
type InternalRange struct {
	Prefix netip.Prefix
	What   string
	Flag   string
}

// InternalRanges are the ranges no user defined network may overlap: the
// cluster default network subnets, service CIDRs, default join and
// masquerade subnets and node subnets (the transit subnets are
// TransitRanges: only Layer3 networks must avoid them).
func (c ClusterConfig) InternalRanges() []InternalRange {
	var out []InternalRange
	add := func(ps []netip.Prefix, what, flag string) {
		for _, p := range ps {
			out = append(out, InternalRange{Prefix: p.Masked(), What: what, Flag: flag})
		}
	}
	add(c.ClusterSubnets, "cluster default network subnet", FlagClusterSubnets)
	add(c.ServiceCIDRs, "service CIDR", FlagServiceCIDRs)
	add(c.JoinSubnets, "default join subnet", FlagJoinSubnets)
	add(c.MasqueradeSubnets, "masquerade subnet", FlagMasqueradeSubnets)
	add(c.NodeSubnets, "node subnet", FlagNodeSubnets)
	return out
}

// TransitRanges are the interconnect transit subnets, described as
// InternalRanges.
func (c ClusterConfig) TransitRanges() []InternalRange {
	out := make([]InternalRange, 0, len(c.TransitSubnets))
	for _, p := range c.TransitSubnets {
		out = append(out, InternalRange{Prefix: p.Masked(), What: "transit subnet", Flag: FlagTransitSubnets})
	}
	return out
}

// AdmissionParamsConfigMap is the ConfigMap, in the manager's namespace, from
// which udnkit's ValidatingAdmissionPolicies read the cluster's ranges
// (their paramRef): the manager writes AdmissionParams into it at start.
const AdmissionParamsConfigMap = "udnkit-admission-params"

// Keys of AdmissionParams. The CIDR keys hold one family's prefixes only,
// separated by spaces, for the policies' checks (a value is compared with
// its own family's); the range keys the ranges one per line as
// "<prefix>|<what>|<flag>" (10.244.0.0/16|cluster default network
// subnet|cluster-subnets), read only to word a refusal as the webhook did.
// The apiserver pays for every CEL operation on every request.
const (
	ParamInternalCIDRs4            = "internalCIDRs4"
	ParamInternalCIDRs6            = "internalCIDRs6"
	ParamInternalRanges            = "internalRanges"
	ParamTransitCIDRs4             = "transitCIDRs4"
	ParamTransitCIDRs6             = "transitCIDRs6"
	ParamTransitRanges             = "transitRanges"
	ParamPreconfiguredUDNAddresses = "preconfiguredUDNAddresses"
	// ParamUDNJoinCIDRs4 and ParamUDNJoinCIDRs6 hold UDNJoinSubnets' prefix
	// of each family (or nothing): the join subnet of a Layer2 or Layer3
	// network that sets none of that family, which its subnets must not
	// overlap.
	ParamUDNJoinCIDRs4 = "udnJoinCIDRs4"
	ParamUDNJoinCIDRs6 = "udnJoinCIDRs6"
)

// AdmissionParams renders c for udnkit's ValidatingAdmissionPolicies: the
// data of AdmissionParamsConfigMap.
func (c ClusterConfig) AdmissionParams() map[string]string {
	lines := func(rs []InternalRange) string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = r.Prefix.String() + "|" + r.What + "|" + r.Flag
		}
		return strings.Join(out, "\n")
	}
	cidrs := func(rs []InternalRange, v4 bool) string {
		ps := make([]netip.Prefix, len(rs))
		for i, r := range rs {
			ps[i] = r.Prefix
		}
		return familyPrefixes(ps, v4)
	}
	return map[string]string{
		ParamInternalCIDRs4:            cidrs(c.InternalRanges(), true),
		ParamInternalCIDRs6:            cidrs(c.InternalRanges(), false),
		ParamInternalRanges:            lines(c.InternalRanges()),
		ParamTransitCIDRs4:             cidrs(c.TransitRanges(), true),
		ParamTransitCIDRs6:             cidrs(c.TransitRanges(), false),
		ParamTransitRanges:             lines(c.TransitRanges()),
		ParamPreconfiguredUDNAddresses: strconv.FormatBool(c.PreconfiguredUDNAddresses),
		ParamUDNJoinCIDRs4:             familyPrefixes(c.UDNJoinSubnets, true),
		ParamUDNJoinCIDRs6:             familyPrefixes(c.UDNJoinSubnets, false),
	}
}

// familyPrefixes joins the masked prefixes of ps of one family with spaces.
func familyPrefixes(ps []netip.Prefix, v4 bool) string {
	var out []string
	for _, p := range ps {
		if p.Addr().Is4() == v4 {
			out = append(out, p.Masked().String())
		}
	}
	return strings.Join(out, " ")
}

// AdmissionParamsObject is the ConfigMap AdmissionParamsConfigMap in
// namespace, holding c.AdmissionParams().
func (c ClusterConfig) AdmissionParamsObject(namespace string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: AdmissionParamsConfigMap},
		Data:       c.AdmissionParams(),
	}
}

// JoinSubnetsFor returns the join subnets OVN-Kubernetes gives a Layer2 or
// Layer3 network that sets explicit: explicit's of each IP family, and for a
// family explicit lacks the default of UDNJoinSubnets (upstream's
// parseJoinSubnet, which does so whatever the network's role).
func (c ClusterConfig) JoinSubnetsFor(explicit []netip.Prefix) []netip.Prefix {
	out := slices.Clone(explicit)
	for _, d := range c.UDNJoinSubnets {
		if !slices.ContainsFunc(explicit, func(p netip.Prefix) bool { return p.Addr().Is4() == d.Addr().Is4() }) {
			out = append(out, d)
		}
	}
	return out
}

// MsgSubnetJoinOverlap is upstream's SubnetOverlapCheck sentence, which every
// refusal of a network whose subnets overlap its join subnets carries.
const MsgSubnetJoinOverlap = "pod or join subnet overlaps with already configured internal subnets"

// SubnetJoinOverlap returns, in upstream's words (SubnetOverlapCheck), why
// the first of subnets that overlaps one of a network's join subnets makes
// the network unusable, or nil: the join subnet routes the gateway router's
// and the management port's addresses, which must not be pod addresses.
func SubnetJoinOverlap(subnets, join []netip.Prefix) error {
	for _, s := range subnets {
		for _, j := range join {
			if s.Overlaps(j) {
				return fmt.Errorf("%s: user defined join subnet %q overlaps user defined subnet %q", MsgSubnetJoinOverlap, j.Masked().String(), s.Masked().String())
			}
		}
	}
	return nil
}
