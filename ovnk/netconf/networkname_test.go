package netconf

import (
	"slices"
	"testing"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
)

// OwnerOfNetworkName inverts UDNNetworkName and CUDNNetworkName, and claims
// no name that no UDN or CUDN could be given.
func TestOwnerOfNetworkName(t *testing.T) {
	for _, o := range []ovnk.NetworkOwner{
		{Kind: udnv1.KindUserDefinedNetwork, Namespace: "bob", Name: "blue"},
		{Kind: udnv1.KindUserDefinedNetwork, Namespace: "team-a", Name: "net.v2-x"},
		{Kind: udnv1.KindClusterUserDefinedNetwork, Name: "shared"},
		{Kind: udnv1.KindClusterUserDefinedNetwork, Name: "col.x"},
	} {
		src := NADSource{Kind: o.Kind}
		src.Meta.Namespace, src.Meta.Name = o.Namespace, o.Name
		network := src.NetworkName()
		got, ok := ovnk.OwnerOfNetworkName(network)
		if !ok || got != o {
			t.Errorf("OwnerOfNetworkName(%q) = %+v, %v; want %+v", network, got, ok, o)
		}
	}
	// Every name under cluster_udn_ is a CUDN's, even one no CUDN can have.
	if got, ok := ovnk.OwnerOfNetworkName("cluster_udn_A_B"); !ok || got.Kind != udnv1.KindClusterUserDefinedNetwork || got.Name != "A_B" {
		t.Errorf("cluster_udn_A_B: %+v, %v", got, ok)
	}
	if got := (ovnk.NetworkOwner{Kind: udnv1.KindUserDefinedNetwork, Namespace: "bob", Name: "blue"}).String(); got != "UserDefinedNetwork bob/blue" {
		t.Errorf("String() = %q", got)
	}
	for _, network := range []string{"", "blue", "ovn-kubernetes", "default", "Bob_blue", "bob_", "_blue", "bob_blue_x", "bob.x_blue", "macvlan-conf"} {
		if got, ok := ovnk.OwnerOfNetworkName(network); ok {
			t.Errorf("OwnerOfNetworkName(%q) = %+v, want no owner", network, got)
		}
	}
}

// NetConfNetworkNames reads every name an OVN-Kubernetes reader could take,
// and none from a config that is not OVN-Kubernetes'. The readers are
// upstream's go-controller/pkg/config/cni.go (ParseNetConf: a single config
// through encoding/json, a plugin list through libcni, the type
// "ovn-k8s-cni-overlay" on the config or its first plugin).
func TestNetConfNetworkNames(t *testing.T) {
	for _, tc := range []struct {
		desc, config string
		want         []string
	}{
		{"rendered", `{"cniVersion":"1.1.0","name":"bob_blue","netAttachDefName":"bob/blue","role":"secondary","topology":"layer2","type":"ovn-k8s-cni-overlay"}`, []string{"bob_blue"}},
		{"escaped", `{"name":"bob\u005fblue","type":"ovn-k8s-cni-overlay"}`, []string{"bob_blue"}},
		{"last duplicate wins for both readers", `{"name":"mine","name":"bob_blue","type":"ovn-k8s-cni-overlay"}`, []string{"bob_blue"}},
		{"case-insensitive key", `{"name":"mine","NAME":"bob_blue","type":"ovn-k8s-cni-overlay"}`, []string{"bob_blue", "mine"}},
		{"case-insensitive type", `{"name":"bob_blue","Type":"ovn-k8s-cni-overlay"}`, []string{"bob_blue"}},
		{"plugin list", `{"cniVersion":"1.0.0","name":"bob_blue","plugins":[{"name":"inner","type":"ovn-k8s-cni-overlay"}]}`, []string{"bob_blue", "inner"}},
		{"OVN-Kubernetes' default network stub", `{"cniVersion":"0.4.0","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay"}`, []string{"ovn-kubernetes"}},
		{"another plugin", `{"name":"bob_blue","type":"macvlan"}`, nil},
		{"another plugin list", `{"name":"bob_blue","plugins":[{"type":"bridge"},{"type":"tuning"}]}`, nil},
		{"malformed", `{"name":"bob_blue","type":"ovn-k8s-cni-overlay"`, nil},
		{"name not a string", `{"name":7,"type":"ovn-k8s-cni-overlay"}`, nil},
	} {
		got := ovnk.NetConfNetworkNames(tc.config)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: NetConfNetworkNames = %q, want %q", tc.desc, got, tc.want)
		}
	}
}
