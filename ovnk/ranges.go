package ovnk

import (
	"net/netip"
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

// Keys of AdmissionParams. A range list holds one range per line, as
// "<prefix>|<what>|<flag>" (10.244.0.0/16|cluster default network subnet|cluster-subnets),
// so a policy's message reads as the webhook's did.
const (
	ParamInternalRanges            = "internalRanges"
	ParamTransitRanges             = "transitRanges"
	ParamPreconfiguredUDNAddresses = "preconfiguredUDNAddresses"
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
	return map[string]string{
		ParamInternalRanges:            lines(c.InternalRanges()),
		ParamTransitRanges:             lines(c.TransitRanges()),
		ParamPreconfiguredUDNAddresses: strconv.FormatBool(c.PreconfiguredUDNAddresses),
	}
}

// AdmissionParamsObject is the ConfigMap AdmissionParamsConfigMap in
// namespace, holding c.AdmissionParams().
func (c ClusterConfig) AdmissionParamsObject(namespace string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: AdmissionParamsConfigMap},
		Data:       c.AdmissionParams(),
	}
}
