package v1

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestUnimplementedFeatures(t *testing.T) {
	l3 := NetworkSpec{Topology: NetworkTopologyLayer3, Layer3: &Layer3Config{Role: NetworkRolePrimary}}
	noOverlay := l3
	noOverlay.Transport = TransportOptionNoOverlay
	noOverlay.NoOverlay = &NoOverlayConfig{OutboundSNAT: SNATEnabled, Routing: RoutingManaged}
	evpn := l3
	evpn.Transport = TransportOptionEVPN
	evpn.EVPN = &EVPNConfig{VTEP: "vtep-a", IPVRF: &VRFConfig{VNI: 300}}
	// CEL refuses an evpn block without transport; the helper still names it.
	evpnOnly := l3
	evpnOnly.EVPN = &EVPNConfig{VTEP: "vtep-a"}

	for _, tc := range []struct {
		name string
		spec ClusterUserDefinedNetworkSpec
		want []string
		// conditions maps condition type to message.
		conditions map[string]string
	}{
		{name: "default transport, no uplinks", spec: ClusterUserDefinedNetworkSpec{Network: l3}},
		{name: "UDN spec as a network", spec: ClusterUserDefinedNetworkSpec{Network: UserDefinedNetworkSpec{Topology: NetworkTopologyLayer2, Layer2: &Layer2Config{}}.Network()}},
		{
			name: "NoOverlay", spec: ClusterUserDefinedNetworkSpec{Network: noOverlay},
			want:       []string{"spec.network.transport", "spec.network.noOverlay"},
			conditions: map[string]string{ConditionTransportAccepted: "udnkit accepts but does not implement spec.network.transport, spec.network.noOverlay."},
		},
		{
			name: "EVPN", spec: ClusterUserDefinedNetworkSpec{Network: evpn},
			want:       []string{"spec.network.transport", "spec.network.evpn"},
			conditions: map[string]string{ConditionTransportAccepted: "udnkit accepts but does not implement spec.network.transport, spec.network.evpn."},
		},
		{
			name: "evpn block alone", spec: ClusterUserDefinedNetworkSpec{Network: evpnOnly},
			want:       []string{"spec.network.evpn"},
			conditions: map[string]string{ConditionTransportAccepted: "udnkit accepts but does not implement spec.network.evpn."},
		},
		{
			name: "uplinks", spec: ClusterUserDefinedNetworkSpec{Network: l3, Uplinks: []string{"uplink-a"}},
			want:       []string{"spec.uplinks"},
			conditions: map[string]string{ConditionUplinksReady: "udnkit accepts but does not implement spec.uplinks."},
		},
		{
			name: "uplinks and NoOverlay", spec: ClusterUserDefinedNetworkSpec{Network: noOverlay, Uplinks: []string{"uplink-a"}},
			want: []string{"spec.uplinks", "spec.network.transport", "spec.network.noOverlay"},
			conditions: map[string]string{
				ConditionUplinksReady:      "udnkit accepts but does not implement spec.uplinks.",
				ConditionTransportAccepted: "udnkit accepts but does not implement spec.network.transport, spec.network.noOverlay.",
			},
		},
		{name: "an empty uplinks list is not set", spec: ClusterUserDefinedNetworkSpec{Network: l3, Uplinks: []string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.spec.UnimplementedFeatures(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("UnimplementedFeatures() = %q, want %q", got, tc.want)
			}
			conds := tc.spec.NotImplementedConditions()
			if len(conds) != len(tc.conditions) {
				t.Fatalf("NotImplementedConditions() = %+v, want %d conditions", conds, len(tc.conditions))
			}
			for _, c := range conds {
				want, ok := tc.conditions[c.Type]
				if !ok {
					t.Errorf("unexpected condition %q", c.Type)
					continue
				}
				if c.Status != metav1.ConditionFalse || c.Reason != ReasonFeatureNotImplemented || c.Message != want {
					t.Errorf("condition %s = %s/%s %q, want False/%s %q", c.Type, c.Status, c.Reason, c.Message, ReasonFeatureNotImplemented, want)
				}
			}
		})
	}
}
