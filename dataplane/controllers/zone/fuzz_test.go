package zone

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/cel"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
)

// fuzzUDN builds a UDN spec from fuzz input: Layer2 or Layer3, one or two
// IP families, any prefix lengths (host bits included), optional gateway,
// join subnets and MTU. Most are refused by CEL; the rest are what the
// apiserver admits.
func fuzzUDN(l3, dual bool, a4 uint32, bits4 uint8, a6 uint64, bits6, host uint8, gw uint16, join4 uint32, joinBits uint8, mtu uint16) *udnv1.UserDefinedNetwork {
	v4 := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(a4 >> 24), byte(a4 >> 16), byte(a4 >> 8), byte(a4)}), int(bits4%33)).String()
	var b16 [16]byte
	for i := range 8 {
		b16[i] = byte(a6 >> (56 - 8*i))
	}
	v6 := netip.PrefixFrom(netip.AddrFrom16(b16), int(bits6%129)).String()
	u := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "fuzz", Name: "net"}}
	u.SetGroupVersionKind(udnv1.GroupVersion.WithKind(udnv1.KindUserDefinedNetwork))
	if l3 {
		subnets := []udnv1.Layer3Subnet{{CIDR: udnv1.CIDR(v4), HostSubnet: int32(host % 33)}}
		if dual {
			subnets = append(subnets, udnv1.Layer3Subnet{CIDR: udnv1.CIDR(v6), HostSubnet: int32((int(host) + 40) % 129)})
		}
		u.Spec = udnv1.UserDefinedNetworkSpec{Topology: udnv1.NetworkTopologyLayer3,
			Layer3: &udnv1.Layer3Config{Role: udnv1.NetworkRolePrimary, Subnets: subnets, MTU: int32(mtu)}}
		return u
	}
	l2 := &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{udnv1.CIDR(v4)}, MTU: int32(mtu)}
	if dual {
		l2.Subnets = append(l2.Subnets, udnv1.CIDR(v6))
	}
	if p, err := netip.ParsePrefix(v4); err == nil && gw != 0 {
		if a, err := ovnk.AddrAt(p.Masked(), uint64(gw)); err == nil {
			l2.DefaultGatewayIPs = udnv1.DualStackIPs{udnv1.IP(a.String())}
			l2.InfrastructureSubnets = []udnv1.NetworkCIDR{udnv1.NetworkCIDR(netip.PrefixFrom(a, 32).String())}
		}
	}
	if joinBits != 0 {
		j := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(join4 >> 24), byte(join4 >> 16), byte(join4 >> 8), byte(join4)}), int(joinBits%33))
		l2.JoinSubnets = udnv1.DualStackCIDRs{udnv1.CIDR(j.String())}
	}
	u.Spec = udnv1.UserDefinedNetworkSpec{Topology: udnv1.NetworkTopologyLayer2, Layer2: l2}
	return u
}

// FuzzAdmittedSpecToRows follows an admitted network from its spec to the
// OVN rows, as the components do through the apiserver: CEL (offline, the
// apiserver's own code) admits the spec; the reconcilers' NAD (netconf.NewNAD,
// with IDs and tunnel keys as the allocators give them); the dataplane reads
// the NAD back and builds the rows with nodes of any admissible IDs,
// duplicates included. Nothing may panic, an admitted network must yield
// rows, and no tunnel key outside OVN's range may be in them. `make test`
// runs the seeds; `make fuzz` explores.
func FuzzAdmittedSpecToRows(f *testing.F) {
	v, err := cel.NewDefault()
	if err != nil {
		f.Fatal(err)
	}
	cluster := ovnk.DefaultClusterConfig()
	// Seeds: the README's examples and the odd subnets.
	f.Add(false, true, uint32(0x0a640000), uint8(16), uint64(0xfd00010000000000), uint8(64), uint8(0), uint16(0), uint32(0), uint8(0), uint16(0), uint16(1), uint64(0x0002000300030004))
	f.Add(false, false, uint32(0x0a3c0000), uint8(32), uint64(0), uint8(0), uint8(0), uint16(0), uint32(0), uint8(0), uint16(0), uint16(7), uint64(0x7fff7fff00020002))
	f.Add(false, true, uint32(0x0a420001), uint8(24), uint64(0xfd00003100000000), uint8(128), uint8(0), uint16(1), uint32(0x64410000), uint8(16), uint16(1400), uint16(4095), uint64(0xffffffffffffffff))
	f.Add(false, false, uint32(0xc0a86400), uint8(24), uint64(0), uint8(0), uint8(0), uint16(1), uint32(0), uint8(0), uint16(9000), uint16(2), uint64(2))
	f.Add(true, true, uint32(0x0a960000), uint8(16), uint64(0xfd00015000000000), uint8(48), uint8(24), uint16(0), uint32(0), uint8(0), uint16(0), uint16(3), uint64(0x0002000300040005))
	f.Add(true, false, uint32(0x0ac80000), uint8(16), uint64(0), uint8(0), uint8(31), uint16(0), uint32(0), uint8(0), uint16(0), uint16(5), uint64(0))
	f.Fuzz(func(t *testing.T, l3, dual bool, a4 uint32, bits4 uint8, a6 uint64, bits6, host uint8, gw uint16, join4 uint32, joinBits uint8, mtu uint16, netID uint16, nodeIDs uint64) {
		u := fuzzUDN(l3, dual, a4, bits4, a6, bits6, host, gw, join4, joinBits, mtu)
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(u)
		if err != nil {
			t.Fatal(err)
		}
		res, err := v.Validate(context.Background(), &unstructured.Unstructured{Object: m}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Violations()) > 0 {
			return // refused at admission
		}
		spec := u.Spec.Network()
		id := 1 + int(netID)%ovnk.MaxNetworkID
		ids := ovnk.NetworkIDs{ID: id, HasID: true}
		if !l3 {
			legacy, err := ovnk.LegacyTransitSwitchKey(id)
			if err != nil {
				t.Fatalf("admitted network ID %d: %v", id, err)
			}
			ids.TunnelKeys = []int{legacy, ovnk.LastInterconnectKey - int(netID)}
		}
		transit, err := netconf.TransitSubnetsFor(spec, cluster)
		if err != nil {
			// A subnet as large as ::/0 leaves no transit subnet: the
			// network reports SyncError in its status (and must not hang:
			// the seed in testdata once did).
			if !strings.Contains(err.Error(), "avoids the network's subnets") {
				t.Fatalf("admitted spec %+v: transit subnets: %v", spec, err)
			}
			return
		}
		src := netconf.NADSource{Kind: udnv1.KindUserDefinedNetwork, Spec: spec, Meta: u.ObjectMeta}
		nad, err := netconf.NewNAD(src, u.Namespace, cluster, transit, ids)
		if err != nil {
			t.Fatalf("admitted spec %+v: NAD: %v", spec, err)
		}
		if l3 {
			name, subnets, ok, err := Layer3NetworkFromNAD(nad)
			if err != nil || !ok {
				t.Fatalf("admitted Layer3 spec %+v: NAD read back: ok=%v %v", spec, ok, err)
			}
			if _, err := topology.Layer3SubnetPolicies(name, subnets); err != nil {
				t.Fatalf("admitted Layer3 spec %+v: rows: %v", spec, err)
			}
			return
		}
		net, ok, err := Layer2NetworkFromNAD(nad)
		if err != nil || !ok {
			t.Fatalf("admitted Layer2 spec %+v: NAD read back: ok=%v %v", spec, ok, err)
		}
		if err := ClusterFacts(cluster, nad, &net); err != nil {
			t.Fatalf("admitted Layer2 spec %+v: cluster facts: %v", spec, err)
		}
		var nodes []topology.Layer2Node
		for i := range 4 {
			raw := int(nodeIDs>>(16*i)) & 0xffff
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i),
				Annotations: map[string]string{ovnk.AnnotationNodeID: strconv.Itoa(raw)}}}
			if n, ok, err := Layer2NodeFromNode(node); err == nil && ok {
				n.TopologyVersion = ovnk.Layer2TopologyVersionTransitRouter
				nodes = append(nodes, n)
			}
		}
		kept, _ := topology.Layer2UsableNodes(net, nodes)
		d, err := topology.Layer2Topology(net, kept)
		if err != nil {
			t.Fatalf("admitted Layer2 spec %+v with nodes %+v: rows: %v", spec, kept, err)
		}
		checkTunnelKeys(t, d)
	})
}

// checkTunnelKeys fails on a requested-tnl-key outside OVN's range (24-bit
// datapath keys, 15-bit port keys): such a row freezes ovn-northd.
func checkTunnelKeys(t *testing.T, d *rows.Desired) {
	t.Helper()
	check := func(what string, opts map[string]string, max int) {
		v, ok := opts["requested-tnl-key"]
		if !ok {
			return
		}
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 || k > max {
			t.Fatalf("%s: requested-tnl-key %q is outside [1, %d]", what, v, max)
		}
	}
	for _, r := range d.Routers {
		check("router "+r.Row.Name, r.Row.Options, 1<<24-1)
		for _, p := range r.Ports {
			check("router port "+p.Name, p.Options, 1<<15-1)
		}
	}
	for _, s := range d.Switches {
		check("switch "+s.Row.Name, s.Row.OtherConfig, 1<<24-1)
		for _, p := range s.Ports {
			check("switch port "+p.Name, p.Options, 1<<15-1)
		}
	}
}
