package ovnk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Layer2TopologyVersionTransitRouter is the k8s.ovn.org/layer2-topology-version
// value of nodes on OKEP-5094's transit-router topology (upstream's
// types.TransitRouterTopoVersion).
const Layer2TopologyVersionTransitRouter = "2.0"

// AnnotationZoneName is the interconnect zone older OVN-Kubernetes versions
// publish on a node. Upstream (since Aug 2026) no longer writes it: a zone is
// a single node and is named after it. udnkit reads it when present, for
// clusters still running a version that writes it.
const AnnotationZoneName = "k8s.ovn.org/zone-name"

// ZoneOf is the interconnect zone a node belongs to: its
// k8s.ovn.org/zone-name when an older OVN-Kubernetes set one, else the
// node's name (upstream's single-node zones).
func ZoneOf(node *corev1.Node) string {
	if z := node.Annotations[AnnotationZoneName]; z != "" {
		return z
	}
	return node.Name
}

// DecodeNodeID reads k8s.ovn.org/node-id: ok is false when the node has
// none; a value that is not an integer in [FirstNodeID, MaxNodeID] is an
// error naming the annotation and the rule (an ID outside it cannot be a
// port tunnel key nor fit a /16 transit subnet).
func DecodeNodeID(node *corev1.Node) (id int, ok bool, err error) {
	v, found := node.Annotations[AnnotationNodeID]
	if !found {
		return 0, false, nil
	}
	id, err = strconv.Atoi(v)
	if err != nil || id < FirstNodeID || id > MaxNodeID {
		return 0, false, fmt.Errorf("node %s annotation %s=%q is not a node ID (an integer in [%d, %d])", node.Name, AnnotationNodeID, v, FirstNodeID, MaxNodeID)
	}
	return id, true, nil
}

// AnnotationNodeChassisID is the system-id of the node's OVN chassis, which
// ovnkube-node publishes once ovn-controller runs there (upstream's
// OvnNodeChassisID): the chassis a remote port's requested-chassis and a
// gateway router's options:chassis name.
const AnnotationNodeChassisID = "k8s.ovn.org/node-chassis-id"

// DecodeNodeChassisID reads k8s.ovn.org/node-chassis-id: ok is false while
// the node has none (its ovnkube-node has not registered the chassis yet);
// an empty value is an error naming the annotation.
func DecodeNodeChassisID(node *corev1.Node) (chassis string, ok bool, err error) {
	v, found := node.Annotations[AnnotationNodeChassisID]
	if !found {
		return "", false, nil
	}
	if strings.TrimSpace(v) == "" {
		return "", false, fmt.Errorf("node %s annotation %s is empty: it must name the node's OVN chassis", node.Name, AnnotationNodeChassisID)
	}
	return v, true, nil
}

// DecodeNodeSubnets reads k8s.ovn.org/node-subnets: network name to host
// subnets; each value is a CIDR or a list of CIDRs (upstream's
// parseSubnetAnnotation reads both). An absent annotation is an empty map.
func DecodeNodeSubnets(node *corev1.Node) (map[string][]netip.Prefix, error) {
	out := map[string][]netip.Prefix{}
	v, ok := node.Annotations[AnnotationNodeSubnets]
	if !ok {
		return out, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return nil, fmt.Errorf("node %s annotation %s is not a JSON object of network names to CIDRs: %w", node.Name, AnnotationNodeSubnets, err)
	}
	for network, m := range raw {
		var list []string
		if err := json.Unmarshal(m, &list); err != nil {
			var one string
			if json.Unmarshal(m, &one) != nil {
				return nil, fmt.Errorf("node %s annotation %s[%q] is not a CIDR or a list of CIDRs", node.Name, AnnotationNodeSubnets, network)
			}
			list = []string{one}
		}
		for _, s := range list {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("node %s annotation %s[%q]: %w", node.Name, AnnotationNodeSubnets, network, err)
			}
			out[network] = append(out[network], p)
		}
	}
	return out, nil
}

// NodeSubnetsChanged returns the networks whose entry differs between two
// values of k8s.ovn.org/node-subnets ("" for an absent annotation), sorted:
// entries added, removed, or written differently (a value re-formatted
// without changing its CIDRs counts as changed). Reading both values costs
// about what one DecodeNodeSubnets does (BenchmarkNodeSubnetsChanged).
func NodeSubnetsChanged(old, cur string) ([]string, error) {
	read := func(v string) (map[string]json.RawMessage, error) {
		var raw map[string]json.RawMessage
		if v == "" {
			return raw, nil
		}
		if err := json.Unmarshal([]byte(v), &raw); err != nil {
			return nil, fmt.Errorf("annotation %s is not a JSON object of network names to CIDRs: %w", AnnotationNodeSubnets, err)
		}
		return raw, nil
	}
	o, err := read(old)
	if err != nil {
		return nil, err
	}
	c, err := read(cur)
	if err != nil {
		return nil, err
	}
	var changed []string
	for k, v := range c {
		if ov, ok := o[k]; !ok || !bytes.Equal(ov, v) {
			changed = append(changed, k)
		}
	}
	for k := range o {
		if _, ok := c[k]; !ok {
			changed = append(changed, k)
		}
	}
	slices.Sort(changed)
	return changed, nil
}

// EncodeNodeSubnets writes the annotation value as upstream's
// updateSubnetAnnotation does: every network a list of CIDRs, keys sorted;
// "" when there are none (the annotation is then removed).
func EncodeNodeSubnets(subnets map[string][]netip.Prefix) string {
	if len(subnets) == 0 {
		return ""
	}
	out := make(map[string][]string, len(subnets))
	for _, k := range slices.Sorted(maps.Keys(subnets)) {
		for _, p := range subnets[k] {
			out[k] = append(out[k], p.String())
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// IsCanonicalNodeSubnets says whether v, a value of k8s.ovn.org/node-subnets
// that decodes to subnets, is what EncodeNodeSubnets writes for them, as
// JSON (key order and spacing aside); a value that is not is rewritten.
func IsCanonicalNodeSubnets(v string, subnets map[string][]netip.Prefix) bool {
	b := EncodeNodeSubnets(subnets)
	if v == b {
		return true
	}
	var x, y any
	if json.Unmarshal([]byte(v), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// DecodeNodeEncapIPs reads k8s.ovn.org/node-encap-ips (a JSON list of IPs,
// OKEP-5535), at most MaxTunnelIDsPerNode of them, none repeated.
func DecodeNodeEncapIPs(node *corev1.Node) ([]netip.Addr, error) {
	v, ok := node.Annotations[AnnotationNodeEncapIPs]
	if !ok {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal([]byte(v), &list); err != nil {
		return nil, fmt.Errorf("node %s annotation %s=%q is not a JSON list of IPs", node.Name, AnnotationNodeEncapIPs, v)
	}
	if len(list) > MaxTunnelIDsPerNode {
		return nil, fmt.Errorf("node %s annotation %s lists %d encap IPs; at most %d are supported", node.Name, AnnotationNodeEncapIPs, len(list), MaxTunnelIDsPerNode)
	}
	var out []netip.Addr
	for _, s := range list {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("node %s annotation %s: %q is not an IP", node.Name, AnnotationNodeEncapIPs, s)
		}
		if slices.Contains(out, a) {
			return nil, fmt.Errorf("node %s annotation %s lists %s twice", node.Name, AnnotationNodeEncapIPs, a)
		}
		out = append(out, a)
	}
	return out, nil
}

// DecodeNodeTunnelIDs reads k8s.ovn.org/node-transit-switch-port-tunnel-ids
// (OKEP-5535: a JSON list, one ID per encap IP, the node ID first); each must
// be a node ID.
func DecodeNodeTunnelIDs(node *corev1.Node) ([]int, error) {
	v, ok := node.Annotations[AnnotationNodeTransitSwitchPortTunnelIDs]
	if !ok {
		return nil, nil
	}
	var ids []int
	if err := json.Unmarshal([]byte(v), &ids); err != nil {
		return nil, fmt.Errorf("node %s annotation %s=%q is not a JSON list of integers", node.Name, AnnotationNodeTransitSwitchPortTunnelIDs, v)
	}
	if len(ids) > MaxTunnelIDsPerNode {
		return nil, fmt.Errorf("node %s annotation %s lists %d IDs; at most %d are supported", node.Name, AnnotationNodeTransitSwitchPortTunnelIDs, len(ids), MaxTunnelIDsPerNode)
	}
	for _, id := range ids {
		if id < FirstNodeID || id > MaxNodeID {
			return nil, fmt.Errorf("node %s annotation %s: %d is outside [%d, %d]", node.Name, AnnotationNodeTransitSwitchPortTunnelIDs, id, FirstNodeID, MaxNodeID)
		}
	}
	return ids, nil
}

// EncodeNodeTunnelIDs is the annotation value of ids.
func EncodeNodeTunnelIDs(ids []int) string {
	b, _ := json.Marshal(ids)
	return string(b)
}

// GatewayMTUSupported says whether a node's router ports get
// options:gateway_mtu, as upstream's ParseNodeGatewayMTUSupport reads
// k8s.ovn.org/gateway-mtu-support: anything but "false" is yes.
func GatewayMTUSupported(node *corev1.Node) bool {
	return node.Annotations[AnnotationGatewayMTUSupport] != "false"
}

// AnnotationLayer2GRLRPTunnelIDs is where OVN-Kubernetes' cluster manager
// publishes, per Primary Layer2 network, the tunnel key of a node's gateway
// router port on the old (pre-OKEP-5094) topology's switch: its own
// stor-<switch> port and every other zone's remote port for it carry it
// (upstream's UDNLayer2NodeGRLRPTunnelIDAnnotation,
// go-controller/pkg/util/node_annotations.go).
const AnnotationLayer2GRLRPTunnelIDs = "k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids"

// DecodeLayer2GRLRPTunnelID reads the node's old-topology gateway router
// port tunnel key for network from AnnotationLayer2GRLRPTunnelIDs (a JSON
// object of network name to a decimal string): ok is false when the node
// has none for network.
func DecodeLayer2GRLRPTunnelID(node *corev1.Node, network string) (key int, ok bool, err error) {
	v, found := node.Annotations[AnnotationLayer2GRLRPTunnelIDs]
	if !found {
		return 0, false, nil
	}
	var ids map[string]string
	if err := json.Unmarshal([]byte(v), &ids); err != nil {
		return 0, false, fmt.Errorf("node %s annotation %s=%q is not a JSON object of network names to tunnel keys", node.Name, AnnotationLayer2GRLRPTunnelIDs, v)
	}
	s, found := ids[network]
	if !found {
		return 0, false, nil
	}
	key, err = strconv.Atoi(s)
	if err != nil || key <= 0 {
		return 0, false, fmt.Errorf("node %s annotation %s: network %s's tunnel key %q is not a positive integer", node.Name, AnnotationLayer2GRLRPTunnelIDs, network, s)
	}
	return key, true, nil
}
