// Package network holds the admission of UserDefinedNetworks and
// ClusterUserDefinedNetworks: the validators (limits, OVN name collisions,
// one primary network per namespace), the checks of a NetworkSpec against
// the cluster's ranges that udnctl runs offline and the policies run in the
// apiserver, and the cached lookup of a namespace's primary network the pod
// webhooks share.
package network

import (
	"fmt"
	"net/netip"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/webhooks/admit"
)

// Messages of the Layer3 append-only rules (OKEP-5377), word for word the
// CRD's CEL messages, so a user sees the same sentence whichever enforced it.
const (
	MsgLayer3AppendOnly          = "Removing existing subnets is not allowed; existing subnets cannot be reordered or changed either, new subnets may only be appended."
	MsgLayer3HostSubnetImmutable = "hostSubnet is immutable for an existing subnet."
	MsgLayer3SecondaryImmutable  = "Subnets is immutable for Secondary role."
	MsgLayer3SameCIDR            = "Subnets with same CIDR are not allowed."
	MsgLayer3Overlap             = "Subnets must not overlap or contain each other."
	MsgLayer3HostSubnetPerFamily = "Subnets from the same IP family must use the same hostSubnet value."
)

// cidrField is one CIDR-valued field of a network spec.
type cidrField struct {
	path  *field.Path
	value string
	// subnet marks pod subnets and ranges inside them (not join subnets).
	subnet bool
}

// cidrFields lists every CIDR of spec that must stay clear of the cluster's
// internal ranges: subnets, joinSubnets, reservedSubnets and
// infrastructureSubnets, with their field paths under path (the NetworkSpec).
func cidrFields(path *field.Path, spec udnv1.NetworkSpec) []cidrField {
	var out []cidrField
	addList := func(p *field.Path, subnet bool, values ...string) {
		for i, v := range values {
			out = append(out, cidrField{path: p.Index(i), value: v, subnet: subnet})
		}
	}
	switch {
	case spec.Layer3 != nil:
		p := path.Child("layer3")
		for i, s := range spec.Layer3.Subnets {
			out = append(out, cidrField{path: p.Child("subnets").Index(i).Child("cidr"), value: string(s.CIDR), subnet: true})
		}
		addList(p.Child("joinSubnets"), false, admit.Strings(spec.Layer3.JoinSubnets)...)
	case spec.Layer2 != nil:
		p := path.Child("layer2")
		addList(p.Child("subnets"), true, admit.Strings(spec.Layer2.Subnets)...)
		addList(p.Child("joinSubnets"), false, admit.Strings(spec.Layer2.JoinSubnets)...)
		addList(p.Child("reservedSubnets"), true, admit.Strings(spec.Layer2.ReservedSubnets)...)
		addList(p.Child("infrastructureSubnets"), true, admit.Strings(spec.Layer2.InfrastructureSubnets)...)
	case spec.Localnet != nil:
		addList(path.Child("localnet").Child("subnets"), true, admit.Strings(spec.Localnet.Subnets)...)
	}
	return out
}

// ValidateNetworkAgainstRanges reports every CIDR of spec (subnets,
// joinSubnets, reservedSubnets, infrastructureSubnets; path is the
// NetworkSpec's path, e.g. spec for a UDN and spec.network for a CUDN) that
// overlaps one of the cluster's internal ranges in cfg. The transit subnets
// are errors for Layer3 networks only: a Primary Layer2 network gets a warning
// from NetworkWarnings instead, and other networks do not use them. CIDRs
// that do not parse are left to the CRD's CEL rules.
func ValidateNetworkAgainstRanges(path *field.Path, spec udnv1.NetworkSpec, cfg ovnk.ClusterConfig) field.ErrorList {
	return validateRanges(path, spec, nil, cfg)
}

// validateRanges is ValidateNetworkAgainstRanges that skips values old
// already had (in any of the fields), so a configuration change never
// blocks updating an existing network, while an appended subnet is still
// checked. udnkit-network-config does the same in the apiserver.
func validateRanges(path *field.Path, spec udnv1.NetworkSpec, old *udnv1.NetworkSpec, cfg ovnk.ClusterConfig) field.ErrorList {
	ranges := cfg.InternalRanges()
	if spec.Layer3 != nil {
		ranges = append(ranges, cfg.TransitRanges()...)
	}
	existing := oldValues(path, old)
	var errs field.ErrorList
	for _, f := range cidrFields(path, spec) {
		if existing[f.value] {
			continue
		}
		p, err := netip.ParsePrefix(f.value)
		if err != nil {
			continue
		}
		for _, r := range ranges {
			if p.Overlaps(r.Prefix) {
				errs = append(errs, field.Invalid(f.path, f.value, fmt.Sprintf(
					"%s overlaps the %s %s (--%s); user defined networks must not overlap the cluster's internal ranges.",
					p.Masked(), r.What, r.Prefix, r.Flag)))
			}
		}
	}
	return errs
}

// validateDefaultJoin refuses a Layer2 or Layer3 subnet that overlaps the
// join subnet the network gets by default (--udn-join-subnets) for an IP
// family its joinSubnets lack: OVN-Kubernetes routes the gateway router's
// and management port's addresses over the join subnet, so pods there are
// cut off (upstream's SubnetOverlapCheck refuses it, whatever the role). An
// explicit joinSubnets entry overlapping subnets is the CRD's CEL rule. On
// update only subnets old did not have are checked (see validateRanges).
func validateDefaultJoin(path *field.Path, spec udnv1.NetworkSpec, old *udnv1.NetworkSpec, cfg ovnk.ClusterConfig) field.ErrorList {
	var subnets []cidrField
	switch {
	case spec.Layer3 != nil:
		for i, s := range spec.Layer3.Subnets {
			subnets = append(subnets, cidrField{path: path.Child("layer3", "subnets").Index(i).Child("cidr"), value: string(s.CIDR)})
		}
	case spec.Layer2 != nil:
		for i, s := range spec.Layer2.Subnets {
			subnets = append(subnets, cidrField{path: path.Child("layer2", "subnets").Index(i), value: string(s)})
		}
	default:
		return nil
	}
	var explicit []netip.Prefix
	for _, j := range spec.JoinSubnetCIDRs() {
		if p, err := netip.ParsePrefix(j); err == nil {
			explicit = append(explicit, p)
		}
	}
	defaults := slices.DeleteFunc(cfg.JoinSubnetsFor(explicit), func(p netip.Prefix) bool { return slices.Contains(explicit, p) })
	existing := oldValues(path, old)
	var errs field.ErrorList
	for _, f := range subnets {
		p, err := netip.ParsePrefix(f.value)
		if err != nil || existing[f.value] {
			continue
		}
		for _, j := range defaults {
			if p.Overlaps(j) {
				errs = append(errs, field.Invalid(f.path, f.value, fmt.Sprintf(
					"%s overlaps the user defined join subnet %s (--%s), which the network uses as it sets no joinSubnets of that IP family; %s.",
					p.Masked(), j.Masked(), ovnk.FlagUDNJoinSubnets, ovnk.MsgSubnetJoinOverlap)))
			}
		}
	}
	return errs
}

// oldValues are the CIDRs old had in any of cidrFields' fields (none when
// old is nil).
func oldValues(path *field.Path, old *udnv1.NetworkSpec) map[string]bool {
	existing := map[string]bool{}
	if old != nil {
		for _, f := range cidrFields(path, *old) {
			existing[f.value] = true
		}
	}
	return existing
}

// TransitNotes says which subnets of a Primary Layer2 network overlap the
// default transit subnets: not an error, the reconciler picks other transit
// subnets for it (OKEP-5094 option 4), shows them in status.transitSubnets
// and reports them in a TransitSubnetsMoved Event. Admission does not say
// it (a policy that did cost every Primary Layer2 create); udnctl validate
// does, offline.
func TransitNotes(path *field.Path, spec udnv1.NetworkSpec, cfg ovnk.ClusterConfig) []string {
	if spec.Layer2 == nil || spec.Layer2.Role != udnv1.NetworkRolePrimary {
		return nil
	}
	var out []string
	for _, f := range cidrFields(path, spec) {
		p, err := netip.ParsePrefix(f.value)
		if err != nil || !f.subnet {
			continue
		}
		for _, r := range cfg.TransitRanges() {
			if p.Overlaps(r.Prefix) {
				out = append(out, fmt.Sprintf(
					"%s: %s overlaps the default %s %s (--%s); the network will use another transit subnet, shown in status.transitSubnets.",
					f.path, p.Masked(), r.What, r.Prefix, r.Flag))
			}
		}
	}
	return out
}

// NetworkWarnings returns what a user should look twice at without being
// refused, as the policy udnkit-network-warnings says it at admission: the
// Layer2 fields OVN-Kubernetes ignores while
// --preconfigured-udn-addresses-enable is off, and each subnet written with
// host bits set, naming the network it stands for.
func NetworkWarnings(path *field.Path, spec udnv1.NetworkSpec, cfg ovnk.ClusterConfig) []string {
	out := hostBitsWarnings(path, spec)
	if spec.Layer2 == nil {
		return out
	}
	if !cfg.PreconfiguredUDNAddresses {
		l2 := spec.Layer2
		for name, set := range map[string]bool{"defaultGatewayIPs": len(l2.DefaultGatewayIPs) > 0,
			"infrastructureSubnets": len(l2.InfrastructureSubnets) > 0, "reservedSubnets": len(l2.ReservedSubnets) > 0} {
			if set {
				out = append(out, fmt.Sprintf(
					"%s: ignored while --%s is off, as OVN-Kubernetes ignores it: the gateway is each subnet's first address and the management port its second.",
					layer2Path(path).Child(name), ovnk.FlagPreconfiguredUDNAddressesEnable))
			}
		}
		slices.Sort(out)
	}
	return out
}

func layer2Path(path *field.Path) *field.Path { return path.Child("layer2") }

// ValidateLayer3 checks the Layer3 subnet rules that the CRD also expresses
// in CEL, for apiservers without the CEL network libraries: on create (old
// nil) subnets must not repeat, overlap or contain each other and use one
// hostSubnet per IP family; on update, subnets are append-only (OKEP-5377),
// hostSubnet of an existing subnet is immutable, and a Secondary network's
// subnets are immutable. path is the layer3 field's path; the messages are
// the CRD's.
func ValidateLayer3(path *field.Path, old, cur *udnv1.Layer3Config) field.ErrorList {
	if cur == nil {
		return nil
	}
	var errs field.ErrorList
	subnets := make([]netip.Prefix, 0, len(cur.Subnets))
	hostSubnet := map[bool]map[int32]bool{}
	for _, s := range cur.Subnets {
		p, err := netip.ParsePrefix(string(s.CIDR))
		if err != nil {
			return errs // malformed CIDRs are the CRD's to report
		}
		subnets = append(subnets, p)
		v4 := p.Addr().Is4()
		if hostSubnet[v4] == nil {
			hostSubnet[v4] = map[int32]bool{}
		}
		hostSubnet[v4][s.HostSubnet] = true
	}
	same, overlap := repeatedOrOverlapping(cur.Subnets, subnets)
	if same {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, MsgLayer3SameCIDR))
	}
	if overlap {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, MsgLayer3Overlap))
	}
	if len(hostSubnet[true]) > 1 || len(hostSubnet[false]) > 1 {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, MsgLayer3HostSubnetPerFamily))
	}
	if old == nil {
		return errs
	}
	if old.Role == udnv1.NetworkRoleSecondary && !equalSubnets(old.Subnets, cur.Subnets) {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, MsgLayer3SecondaryImmutable))
	}
	appendOnly := len(cur.Subnets) >= len(old.Subnets)
	for i := 0; appendOnly && i < len(old.Subnets); i++ {
		appendOnly = cur.Subnets[i].CIDR == old.Subnets[i].CIDR
	}
	if !appendOnly {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, MsgLayer3AppendOnly))
	}
	for i, o := range old.Subnets {
		if i < len(cur.Subnets) && cur.Subnets[i].CIDR == o.CIDR && cur.Subnets[i].HostSubnet != o.HostSubnet {
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, MsgLayer3HostSubnetImmutable))
			break
		}
	}
	return errs
}

// repeatedOrOverlapping reports, as the CRD's two rules do, whether two
// subnets are written the same, and whether two written differently overlap
// (ps are the parsed subnets; host bits do not count).
func repeatedOrOverlapping(subnets []udnv1.Layer3Subnet, ps []netip.Prefix) (same, overlap bool) {
	for i := range ps {
		for j := i + 1; j < len(ps); j++ {
			if subnets[i].CIDR == subnets[j].CIDR {
				same = true
			} else if ps[i].Overlaps(ps[j]) {
				overlap = true
			}
		}
	}
	return same, overlap
}

func equalSubnets(a, b []udnv1.Layer3Subnet) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ValidateNetworkSpec runs every static check of this package on a network:
// the internal ranges (only for values old did not have, when old is set) and
// the Layer3 rules. path is the NetworkSpec's path; old is nil on create.
func ValidateNetworkSpec(path *field.Path, old *udnv1.NetworkSpec, spec udnv1.NetworkSpec, cfg ovnk.ClusterConfig) field.ErrorList {
	errs := append(validateRanges(path, spec, old, cfg), validateDefaultJoin(path, spec, old, cfg)...)
	if old == nil {
		errs = append(errs, ValidateDefaultGateways(path.Child("layer2"), spec.Layer2)...)
	}
	var oldL3 *udnv1.Layer3Config
	if old != nil {
		oldL3 = old.Layer3
		if oldL3 == nil && spec.Layer3 != nil {
			return errs // topology changed: the CRD refuses it
		}
	}
	return append(errs, ValidateLayer3(path.Child("layer3"), oldL3, spec.Layer3)...)
}

// ValidateDefaultGateways refuses a Layer2 defaultGatewayIPs entry that is its
// subnet's network address or IPv4 broadcast address. The CRD cannot say this
// in CEL: comparing IP values makes the rule's estimated cost unbounded.
func ValidateDefaultGateways(path *field.Path, l2 *udnv1.Layer2Config) field.ErrorList {
	if l2 == nil {
		return nil
	}
	var errs field.ErrorList
	for i, g := range l2.DefaultGatewayIPs {
		ip, err := netip.ParseAddr(string(g))
		if err != nil {
			continue // the CRD reports it
		}
		for _, s := range l2.Subnets {
			subnet, err := netip.ParsePrefix(string(s))
			if err != nil || !subnet.Contains(ip) {
				continue
			}
			subnet = subnet.Masked()
			switch {
			case ip == subnet.Addr():
				errs = append(errs, field.Invalid(path.Child("defaultGatewayIPs").Index(i), string(g),
					fmt.Sprintf("a default gateway must not be the network address of subnet %s.", subnet)))
			case ip.Is4() && subnet.Bits() < 31 && ip == ovnk.LastAddr(subnet):
				errs = append(errs, field.Invalid(path.Child("defaultGatewayIPs").Index(i), string(g),
					fmt.Sprintf("a default gateway must not be the broadcast address of subnet %s.", subnet)))
			}
		}
	}
	return errs
}

// hostBitsWarnings names, for each subnet of spec written with host bits set
// (admitted, as upstream OVN-Kubernetes admits it), the network it stands for.
func hostBitsWarnings(path *field.Path, spec udnv1.NetworkSpec) []string {
	var out []string
	warn := func(p *field.Path, v string) {
		if c, err := netip.ParsePrefix(v); err == nil && c.Masked() != c {
			out = append(out, fmt.Sprintf("%s: %s has host bits set; it stands for the network %s, as OVN-Kubernetes reads it.", p, v, c.Masked()))
		}
	}
	if spec.Layer3 != nil {
		for i, s := range spec.Layer3.Subnets {
			warn(path.Child("layer3", "subnets").Index(i).Child("cidr"), string(s.CIDR))
		}
	}
	var subnets udnv1.DualStackCIDRs
	name := "layer2"
	switch {
	case spec.Layer2 != nil:
		subnets = spec.Layer2.Subnets
	case spec.Localnet != nil:
		name, subnets = "localnet", spec.Localnet.Subnets
	}
	for i, s := range subnets {
		warn(path.Child(name, "subnets").Index(i), string(s))
	}
	return out
}
