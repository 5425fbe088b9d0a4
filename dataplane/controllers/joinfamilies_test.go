package controllers

import (
	"net/netip"
	"slices"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
)

// A single-stack IPv4 network's gateway routers get a join IP of each of
// the cluster's families (upstream's GetGWRouterIPs by config.IPv4Mode and
// IPv6Mode), the join subnet a NAD leaves out being upstream's default, and
// the management port a masquerade IP of each; on an IPv4 cluster they get
// IPv4 only.
func TestLayer2JoinIPsFollowTheClusterFamilies(t *testing.T) {
	dual := ovnk.DefaultClusterConfig()
	dual.ClusterSubnets = []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00:10:244::/48")}
	dual.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16"), netip.MustParsePrefix("fd00:10:96::/112")}
	for _, tc := range []struct {
		name    string
		cluster ovnk.ClusterConfig
		config  string
		join    []string
		masq    []string
		rtotr   []string
	}{
		{"dual-stack cluster, NAD without joinSubnet", dual, redConfig,
			[]string{"100.65.0.0/16", "fd99::/64"}, []string{"169.254.0.12", "fd69::c"},
			[]string{"100.65.0.2/16", "fd99::2/64", "100.88.0.5/31"}},
		{"dual-stack cluster, NAD with an IPv4 joinSubnet", dual,
			`{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns2_tenant-red","netAttachDefName":"ns2/tenant-red",
			 "topology":"layer2","role":"primary","subnets":"10.20.0.0/24","joinSubnet":"100.70.0.0/16"}`,
			[]string{"100.70.0.0/16", "fd99::/64"}, []string{"169.254.0.12", "fd69::c"},
			[]string{"100.70.0.2/16", "fd99::2/64", "100.88.0.5/31"}},
		{"IPv4 cluster, NAD with both join subnets", ovnk.DefaultClusterConfig(),
			`{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns2_tenant-red","netAttachDefName":"ns2/tenant-red",
			 "topology":"layer2","role":"primary","subnets":"10.20.0.0/24","joinSubnet":"100.65.0.0/16,fd99::/64"}`,
			[]string{"100.65.0.0/16", "fd99::/64"}, []string{"169.254.0.12"},
			[]string{"100.65.0.2/16", "100.88.0.5/31"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			net, d := redLayer2(t, tc.cluster, tc.config)
			if got := strs(net.JoinSubnets); !slices.Equal(got, tc.join) {
				t.Errorf("join subnets = %v, want %v", got, tc.join)
			}
			if got := strs(net.MasqueradeIPs); !slices.Equal(got, tc.masq) {
				t.Errorf("masquerade IPs = %v, want %v", got, tc.masq)
			}
			var rtotr []string
			for _, r := range d.Routers {
				for _, p := range r.Ports {
					if p.Name == "rtotr-GR_ns2_tenant.red_node1" {
						rtotr = p.Networks
					}
				}
			}
			if !slices.Equal(rtotr, tc.rtotr) {
				t.Errorf("rtotr- networks = %v, want %v", rtotr, tc.rtotr)
			}
		})
	}
}

func strs[T interface{ String() string }](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.String()
	}
	return out
}

// redLayer2 is ns2/tenant-red's network read from a NAD of config (network
// ID 1) with the cluster's facts, and its topology with node1 local.
func redLayer2(t *testing.T, cluster ovnk.ClusterConfig, config string) (topology.Layer2Network, *rows.Desired) {
	t.Helper()
	nad := &nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns2", Name: "tenant-red",
			Annotations: map[string]string{ovnk.AnnotationNetworkID: "1", ovnk.AnnotationTunnelKeys: "[16711685,16715780]"}},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config},
	}
	net, ok, err := zone.Layer2NetworkFromNAD(nad)
	if err != nil || !ok {
		t.Fatalf("NAD: ok=%v %v", ok, err)
	}
	if err := zone.ClusterFacts(cluster, nad, &net); err != nil {
		t.Fatal(err)
	}
	d, err := topology.Layer2Topology(net, []topology.Layer2Node{
		{Name: "node1", ID: 2, Chassis: "c1", Local: true, TopologyVersion: ovnk.Layer2TopologyVersionTransitRouter}})
	if err != nil {
		t.Fatal(err)
	}
	return net, d
}
