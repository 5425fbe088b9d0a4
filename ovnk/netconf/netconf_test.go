package netconf

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
)

var defaultJoin = []netip.Prefix{netip.MustParsePrefix("100.65.0.0/16"), netip.MustParsePrefix("fd99::/64")}

func TestRender(t *testing.T) {
	udn := Options{NetworkName: "tenant-blue_blue", NADName: "tenant-blue/blue", DefaultJoinSubnets: defaultJoin}
	withTransit := udn
	withTransit.TransitSubnets = []netip.Prefix{netip.MustParsePrefix("100.88.0.0/16"), netip.MustParsePrefix("fd97::/64")}
	cudn := Options{NetworkName: "cluster_udn_network-l2", NADName: "migrated-apps/network-l2", DefaultJoinSubnets: defaultJoin,
		TransitSubnets: []netip.Prefix{netip.MustParsePrefix("100.88.0.0/16")}}
	predefined := cudn
	predefined.PredefinedAddresses = true
	l2predef := udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{
		Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"192.168.100.0/24"},
		InfrastructureSubnets: []udnv1.NetworkCIDR{"192.168.100.0/30"}, ReservedSubnets: []udnv1.NetworkCIDR{"192.168.100.200/29", "192.168.100.208/29"},
		DefaultGatewayIPs: udnv1.DualStackIPs{"192.168.100.2"},
	}}
	for _, tc := range []struct {
		name string
		spec udnv1.NetworkSpec
		opts Options
		want string
	}{{
		name: "Primary Layer2 dual-stack with persistent IPs gets join and transit subnets of both families",
		spec: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{
			Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.100.0.0/16", "fd00:100::/64"},
			IPAM: &udnv1.IPAMConfig{Lifecycle: udnv1.IPAMLifecyclePersistent}}},
		opts: withTransit,
		want: `{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay","name":"tenant-blue_blue","netAttachDefName":"tenant-blue/blue",
			"topology":"layer2","role":"primary","subnets":"10.100.0.0/16,fd00:100::/64","joinSubnet":"100.65.0.0/16,fd99::/64",
			"transitSubnet":"100.88.0.0/16,fd97::/64","allowPersistentIPs":true}`,
	}, {
		name: "Primary Layer3 IPv4 only: hostSubnet appended, default join subnets of both families (as upstream), mtu",
		spec: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer3, Layer3: &udnv1.Layer3Config{
			Role: udnv1.NetworkRolePrimary, MTU: 1300, Subnets: []udnv1.Layer3Subnet{{CIDR: "10.200.0.0/16", HostSubnet: 24}, {CIDR: "10.201.0.0/16", HostSubnet: 24}}}},
		opts: udn,
		want: `{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay","name":"tenant-blue_blue","netAttachDefName":"tenant-blue/blue",
			"topology":"layer3","role":"primary","mtu":1300,"subnets":"10.200.0.0/16/24,10.201.0.0/16/24","joinSubnet":"100.65.0.0/16,fd99::/64"}`,
	}, {
		name: "Primary Layer3 IPv6 with explicit join subnets and a default hostSubnet",
		spec: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer3, Layer3: &udnv1.Layer3Config{
			Role: udnv1.NetworkRolePrimary, Subnets: []udnv1.Layer3Subnet{{CIDR: "fd00:10::/48"}}, JoinSubnets: udnv1.DualStackCIDRs{"fd98::/64"}}},
		opts: udn,
		want: `{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay","name":"tenant-blue_blue","netAttachDefName":"tenant-blue/blue",
			"topology":"layer3","role":"primary","subnets":"fd00:10::/48","joinSubnet":"fd98::/64"}`,
	}, {
		name: "Secondary Layer2 without IPAM: no subnets, no join or transit subnet",
		spec: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{
			Role: udnv1.NetworkRoleSecondary, IPAM: &udnv1.IPAMConfig{Mode: udnv1.IPAMDisabled}}},
		opts: withTransit,
		want: `{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay","name":"tenant-blue_blue","netAttachDefName":"tenant-blue/blue",
			"topology":"layer2","role":"secondary"}`,
	}, {
		name: "Localnet with VLAN, excluded subnets and mtu",
		spec: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLocalnet, Localnet: &udnv1.LocalnetConfig{
			Role: udnv1.NetworkRoleSecondary, PhysicalNetworkName: "physnet-ext", Subnets: udnv1.DualStackCIDRs{"192.0.2.0/24"},
			ExcludeSubnets: []udnv1.CIDR{"192.0.2.0/28", "192.0.2.64/28"}, MTU: 1500,
			VLAN: &udnv1.VLANConfig{Mode: udnv1.VLANModeAccess, Access: &udnv1.AccessVLANConfig{ID: 200}}}},
		opts: Options{NetworkName: "cluster_udn_physnet-ext", NADName: "tenant-blue/physnet-ext", DefaultJoinSubnets: defaultJoin},
		want: `{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay","name":"cluster_udn_physnet-ext","netAttachDefName":"tenant-blue/physnet-ext",
			"topology":"localnet","role":"secondary","mtu":1500,"subnets":"192.0.2.0/24","excludeSubnets":"192.0.2.0/28,192.0.2.64/28",
			"physicalNetworkName":"physnet-ext","vlanID":200}`,
	}, {
		name: "Localnet without mtu gets the cluster MTU plus the overlay's 100 bytes (upstream's localnetMTU)",
		spec: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLocalnet, Localnet: &udnv1.LocalnetConfig{
			Role: udnv1.NetworkRoleSecondary, PhysicalNetworkName: "physnet-ext", Subnets: udnv1.DualStackCIDRs{"192.0.2.0/24"}}},
		opts: Options{NetworkName: "cluster_udn_physnet-ext", NADName: "tenant-blue/physnet-ext", DefaultJoinSubnets: defaultJoin},
		want: `{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay","name":"cluster_udn_physnet-ext","netAttachDefName":"tenant-blue/physnet-ext",
			"topology":"localnet","role":"secondary","mtu":1500,"subnets":"192.0.2.0/24","physicalNetworkName":"physnet-ext"}`,
	}, {
		name: "dual-stack with the IPv6 subnet first: transitSubnet in the subnets' order",
		spec: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{
			Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"fd00:100::/64", "10.100.0.0/16"}}},
		opts: func() Options {
			o := udn
			o.TransitSubnets, _ = ovnk.TransitSubnets(nil, []netip.Prefix{netip.MustParsePrefix("fd00:100::/64"), netip.MustParsePrefix("10.100.0.0/16")}, nil)
			return o
		}(),
		want: `{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay","name":"tenant-blue_blue","netAttachDefName":"tenant-blue/blue",
			"topology":"layer2","role":"primary","subnets":"fd00:100::/64,10.100.0.0/16","joinSubnet":"100.65.0.0/16,fd99::/64",
			"transitSubnet":"fd97::/64,100.88.0.0/16"}`,
	}, {
		name: "NoOverlay transport as upstream renders it (transport, lower-case outboundSNAT) and the CUDN's uplink",
		spec: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer3, Layer3: &udnv1.Layer3Config{
			Role: udnv1.NetworkRolePrimary, Subnets: []udnv1.Layer3Subnet{{CIDR: "10.220.0.0/16", HostSubnet: 24}}},
			Transport: udnv1.TransportOptionNoOverlay, NoOverlay: &udnv1.NoOverlayConfig{OutboundSNAT: udnv1.SNATEnabled, Routing: udnv1.RoutingManaged}},
		opts: func() Options { o := udn; o.Uplink = "uplink-a"; return o }(),
		want: `{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay","name":"tenant-blue_blue","netAttachDefName":"tenant-blue/blue",
			"topology":"layer3","role":"primary","subnets":"10.220.0.0/16/24","joinSubnet":"100.65.0.0/16,fd99::/64",
			"transport":"no-overlay","outboundSNAT":"enabled","uplink":"uplink-a"}`,
	}, {
		name: "predefined addresses are left out while the feature is off",
		spec: l2predef, opts: cudn,
		want: `{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay","name":"cluster_udn_network-l2","netAttachDefName":"migrated-apps/network-l2",
			"topology":"layer2","role":"primary","subnets":"192.168.100.0/24","joinSubnet":"100.65.0.0/16,fd99::/64","transitSubnet":"100.88.0.0/16"}`,
	}, {
		name: "predefined addresses are rendered comma-joined with the feature on",
		spec: l2predef, opts: predefined,
		want: `{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay","name":"cluster_udn_network-l2","netAttachDefName":"migrated-apps/network-l2",
			"topology":"layer2","role":"primary","subnets":"192.168.100.0/24","joinSubnet":"100.65.0.0/16,fd99::/64","transitSubnet":"100.88.0.0/16",
			"reservedSubnets":"192.168.100.200/29,192.168.100.208/29","infrastructureSubnets":"192.168.100.0/30","defaultGatewayIPs":"192.168.100.2"}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Render(tc.spec, tc.opts)
			g.Expect(err).NotTo(HaveOccurred())
			// Upstream marshals a map: the same keys and values, sorted.
			var m map[string]any
			g.Expect(json.Unmarshal([]byte(tc.want), &m)).To(Succeed())
			upstream, _ := json.Marshal(m)
			g.Expect(got).To(Equal(string(upstream)))
		})
	}
}

func TestRenderRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec udnv1.NetworkSpec
		opts Options
		want string
	}{
		{"missing layer3 block", udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer3}, Options{NetworkName: "a_b", NADName: "a/b"}, "spec.layer3 is required"},
		{"unknown topology", udnv1.NetworkSpec{Topology: "Layer4"}, Options{NetworkName: "a_b", NADName: "a/b"}, `topology "Layer4"`},
		{"missing names", udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRoleSecondary}}, Options{}, "network name and NAD name are required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Render(tc.spec, tc.opts)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

func TestNames(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ovnk.UDNNetworkName("tenant-blue", "blue")).To(Equal("tenant-blue_blue"))
	g.Expect(ovnk.CUDNNetworkName("network-l2")).To(Equal("cluster_udn_network-l2"))
}

// A CUDN's spec.uplinks reaches its NAD as upstream's renderer writes it
// (net-attach-def-template.go: "uplink" is spec.uplinks[0]); a UDN has none.
func TestNewNADRendersTheUplink(t *testing.T) {
	spec := udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: &udnv1.Layer2Config{
		Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.41.0.0/24"}}}
	for _, c := range []struct {
		src  NADSource
		want string
	}{
		{NADSource{Kind: udnv1.KindClusterUserDefinedNetwork, Meta: metav1.ObjectMeta{Name: "blue"}, Spec: spec, Uplinks: []string{"uplink-a"}}, `"uplink":"uplink-a"`},
		{NADSource{Kind: udnv1.KindClusterUserDefinedNetwork, Meta: metav1.ObjectMeta{Name: "blue"}, Spec: spec}, ""},
		{NADSource{Kind: udnv1.KindUserDefinedNetwork, Meta: metav1.ObjectMeta{Name: "blue", Namespace: "ns"}, Spec: spec}, ""},
	} {
		cluster := ovnk.DefaultClusterConfig()
		transit, err := TransitSubnetsFor(spec, cluster)
		if err != nil {
			t.Fatal(err)
		}
		nad, err := NewNAD(c.src, "ns", cluster, transit, ovnk.NetworkIDs{ID: 3})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(nad.Spec.Config, `"uplink"`); got != (c.want != "") || !strings.Contains(nad.Spec.Config, c.want) {
			t.Errorf("%s %v: config %s, want %q", c.src.Kind, c.src.Uplinks, nad.Spec.Config, c.want)
		}
	}
}
