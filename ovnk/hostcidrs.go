package ovnk

import (
	"encoding/json"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
)

// AnnotationHostCIDRs lists a node's own addresses with their networks
// (ovnkube-node writes it; upstream's util.OVNNodeHostCIDRs).
const AnnotationHostCIDRs = "k8s.ovn.org/host-cidrs"

// DecodeNodeHostCIDRs reads k8s.ovn.org/host-cidrs (["192.0.2.2/24",
// "2001:db8::2/64"]) as upstream's ParseNodeHostCIDRs does: ok is false
// when the node has none; a value that is not a JSON list of CIDRs is an
// error.
func DecodeNodeHostCIDRs(node *corev1.Node) (cidrs []netip.Prefix, ok bool, err error) {
	v, found := node.Annotations[AnnotationHostCIDRs]
	if !found {
		return nil, false, nil
	}
	var list []string
	if err := json.Unmarshal([]byte(v), &list); err != nil {
		return nil, false, fmt.Errorf("node %s annotation %s=%q is not a JSON list of CIDRs", node.Name, AnnotationHostCIDRs, v)
	}
	for _, s := range list {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, false, fmt.Errorf("node %s annotation %s: %q is not a CIDR", node.Name, AnnotationHostCIDRs, s)
		}
		cidrs = append(cidrs, netip.PrefixFrom(p.Addr().Unmap(), p.Bits()))
	}
	return cidrs, true, nil
}
