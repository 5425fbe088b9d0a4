package v1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Accessors that let webhooks, reconcilers and the dataplane treat a
// UserDefinedNetwork and a ClusterUserDefinedNetwork alike.

// Network returns the UDN's spec as the NetworkSpec a CUDN carries.
func (s UserDefinedNetworkSpec) Network() NetworkSpec {
	return NetworkSpec{Topology: s.Topology, Layer2: s.Layer2, Layer3: s.Layer3}
}

// Role is the network's role; Localnet networks are always Secondary.
func (n NetworkSpec) Role() NetworkRole {
	switch {
	case n.Layer2 != nil:
		return n.Layer2.Role
	case n.Layer3 != nil:
		return n.Layer3.Role
	case n.Localnet != nil:
		return n.Localnet.Role
	}
	return ""
}

// IsPrimary reports whether the network is its namespaces' primary network.
func (n NetworkSpec) IsPrimary() bool { return n.Role() == NetworkRolePrimary }

// SubnetCIDRs are the network's subnets as CIDR strings (for Layer3, the
// cluster subnets without their hostSubnet), in spec order.
func (n NetworkSpec) SubnetCIDRs() []string {
	var out []string
	switch {
	case n.Layer2 != nil:
		for _, c := range n.Layer2.Subnets {
			out = append(out, string(c))
		}
	case n.Layer3 != nil:
		for _, s := range n.Layer3.Subnets {
			out = append(out, string(s.CIDR))
		}
	case n.Localnet != nil:
		for _, c := range n.Localnet.Subnets {
			out = append(out, string(c))
		}
	}
	return out
}

// JoinSubnetCIDRs are the network's join subnets, if it sets them.
func (n NetworkSpec) JoinSubnetCIDRs() []string {
	var in DualStackCIDRs
	switch {
	case n.Layer2 != nil:
		in = n.Layer2.JoinSubnets
	case n.Layer3 != nil:
		in = n.Layer3.JoinSubnets
	}
	out := make([]string, 0, len(in))
	for _, c := range in {
		out = append(out, string(c))
	}
	return out
}

// UnimplementedFeatures lists the fields of n that udnkit admits (they are
// upstream OVN-Kubernetes API) but does not implement, as paths in a
// ClusterUserDefinedNetwork, in spec order; nil when there are none.
func (n NetworkSpec) UnimplementedFeatures() []string {
	var out []string
	if n.Transport != "" {
		out = append(out, "spec.network.transport")
	}
	if n.NoOverlay != nil {
		out = append(out, "spec.network.noOverlay")
	}
	if n.EVPN != nil {
		out = append(out, "spec.network.evpn")
	}
	return out
}

// UnimplementedFeatures lists the fields of s that udnkit admits but does not
// implement: spec.uplinks and those of the network.
func (s ClusterUserDefinedNetworkSpec) UnimplementedFeatures() []string {
	var out []string
	if len(s.Uplinks) > 0 {
		out = append(out, "spec.uplinks")
	}
	return append(out, s.Network.UnimplementedFeatures()...)
}

// NotImplementedConditions are the conditions a ClusterUserDefinedNetwork
// with unimplemented fields reports, with the condition types upstream
// OVN-Kubernetes uses for them: TransportAccepted when spec.network.transport
// is set, UplinksReady when spec.uplinks is; each False with reason
// FeatureNotImplemented and a message naming the fields. The caller sets
// ObservedGeneration and LastTransitionTime. It returns nil when every field
// s sets is implemented.
func (s ClusterUserDefinedNetworkSpec) NotImplementedConditions() []metav1.Condition {
	var out []metav1.Condition
	if len(s.Uplinks) > 0 {
		out = append(out, notImplemented(ConditionUplinksReady, []string{"spec.uplinks"}))
	}
	if f := s.Network.UnimplementedFeatures(); len(f) > 0 {
		out = append(out, notImplemented(ConditionTransportAccepted, f))
	}
	return out
}

func notImplemented(conditionType string, fields []string) metav1.Condition {
	return metav1.Condition{
		Type:    conditionType,
		Status:  metav1.ConditionFalse,
		Reason:  ReasonFeatureNotImplemented,
		Message: "udnkit accepts but does not implement " + strings.Join(fields, ", ") + ".",
	}
}
