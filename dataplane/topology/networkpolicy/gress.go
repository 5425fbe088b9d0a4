package networkpolicy

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/topology/policy"
	"github.com/udnkit/udnkit/ovnk"
)

// ACL index values of a rule's ACLs (gress_policy.go emptyIdx and
// ipBlockCombinedIdx), and the protocol of a rule without ports
// (libovsdbutil.UnspecifiedL4Protocol).
const (
	selectorsIdx     = -1
	ipBlocksIdx      = -2
	noProtocol       = "None"
	ownerNetworkPol  = "NetworkPolicy"
	ownerNetpolNS    = "NetpolNamespace"
	ownerPodSelector = "PodSelector"
)

// gress is one ingress or egress rule of a policy (upstream's gressPolicy).
type gress struct {
	ingress bool
	idx     int
	ports   []l4Port
	blocks  []networkingv1.IPBlock
	// v4Sets and v6Sets are the "$name" of the peers' address sets, sorted.
	v4Sets, v6Sets []string
	hasSelector    bool
	v4, v6         bool
}

// l4Port is libovsdbutil.NetworkPolicyPort: a protocol, a port (0: all)
// and the end of a range (0: none).
type l4Port struct {
	protocol      string
	port, endPort int32
}

// addPort is addPortPolicy: TCP by default; a named port's number is 0,
// so it allows the whole protocol, as upstream does.
func (g *gress) addPort(p networkingv1.NetworkPolicyPort) {
	proto := corev1.ProtocolTCP
	if p.Protocol != nil {
		proto = *p.Protocol
	}
	lp := l4Port{protocol: ovnProtocol(proto)}
	if p.Port != nil {
		if p.Port.Type == intstr.Int {
			lp.port = p.Port.IntVal
		}
		if p.EndPort != nil {
			lp.endPort = *p.EndPort
		}
	}
	g.ports = append(g.ports, lp)
}

// ovnProtocol is ConvertK8sProtocolToOVNProtocol.
func ovnProtocol(p corev1.Protocol) string {
	switch p {
	case corev1.ProtocolTCP:
		return "tcp"
	case corev1.ProtocolUDP:
		return "udp"
	case corev1.ProtocolSCTP:
		return "sctp"
	}
	return ""
}

// addSets is addPeerAddressSets: the peer's set of each of the network's
// families.
func (g *gress) addSets(v4, v6 string) {
	if g.v4 && v4 != "" && !slices.Contains(g.v4Sets, "$"+v4) {
		g.v4Sets = append(g.v4Sets, "$"+v4)
		slices.Sort(g.v4Sets)
		g.hasSelector = true
	}
	if g.v6 && v6 != "" && !slices.Contains(g.v6Sets, "$"+v6) {
		g.v6Sets = append(g.v6Sets, "$"+v6)
		slices.Sort(g.v6Sets)
		g.hasSelector = true
	}
}

// l4Matches is GetL4MatchesFromNetworkPolicyPorts: by protocol, its ports
// and ranges ("None": the rule has no ports).
func (g *gress) l4Matches() map[string]string {
	type ports struct{ list, ranges []string }
	by := map[string]*ports{}
	for _, p := range g.ports {
		pp, ok := by[p.protocol]
		if !ok {
			pp = &ports{}
			by[p.protocol] = pp
		}
		if p.endPort != 0 && p.endPort != p.port {
			pp.ranges = append(pp.ranges, fmt.Sprintf("%d<=%s.dst<=%d", p.port, p.protocol, p.endPort))
		} else if p.port != 0 {
			pp.list = append(pp.list, strconv.Itoa(int(p.port)))
		}
	}
	if len(by) == 0 {
		return map[string]string{noProtocol: noProtocol}
	}
	out := map[string]string{}
	for proto, pp := range by {
		var all []string
		switch len(pp.list) {
		case 0:
		case 1:
			all = append(all, fmt.Sprintf("%s.dst==%s", proto, pp.list[0]))
		default:
			all = append(all, fmt.Sprintf("%s.dst=={%s}", proto, strings.Join(pp.list, ",")))
		}
		all = append(all, pp.ranges...)
		switch len(all) {
		case 0:
			out[proto] = proto
		case 1:
			out[proto] = proto + " && " + all[0]
		default:
			out[proto] = proto + " && (" + strings.Join(all, " || ") + ")"
		}
	}
	return out
}

func (g *gress) dir() string {
	if g.ingress {
		return "src"
	}
	return "dst"
}

// setsMatch is getL3MatchFromAddressSet ("" when no set is selected).
func (g *gress) setsMatch() string {
	var ms []string
	if g.v4 && len(g.v4Sets) > 0 {
		ms = append(ms, fmt.Sprintf("ip4.%s == {%s}", g.dir(), strings.Join(g.v4Sets, ", ")))
	}
	if g.v6 && len(g.v6Sets) > 0 {
		ms = append(ms, fmt.Sprintf("ip6.%s == {%s}", g.dir(), strings.Join(g.v6Sets, ", ")))
	}
	if len(ms) == 2 {
		return "(" + ms[0] + " || " + ms[1] + ")"
	}
	return strings.Join(ms, "")
}

// allIPs is allIPsMatch.
func (g *gress) allIPs() string {
	switch {
	case g.v4 && g.v6:
		return "(ip4 || ip6)"
	case g.v6:
		return "ip6"
	}
	return "ip4"
}

// blocksMatch is getMatchFromIPBlock's address part: each block's CIDR
// less its exceptions, of the CIDR's family.
func (g *gress) blocksMatch() string {
	var ms []string
	for _, b := range g.blocks {
		f := "ip4"
		if strings.Contains(b.CIDR, ":") {
			f = "ip6"
		}
		if len(b.Except) == 0 {
			ms = append(ms, fmt.Sprintf("%s.%s == %s", f, g.dir(), b.CIDR))
		} else {
			ms = append(ms, fmt.Sprintf("(%s.%s == %s && %s.%s != {%s})", f, g.dir(), b.CIDR, f, g.dir(), strings.Join(b.Except, ", ")))
		}
	}
	if len(ms) == 1 {
		return ms[0]
	}
	return "(" + strings.Join(ms, " || ") + ")"
}

// acls is buildLocalPodACLs: per protocol, the ACL of the rule's ipBlocks
// and the ACL of its selector peers (or of everything, for a rule without
// peers), on the policy's port group pg.
func (g *gress) acls(ctrl, policyKey, pg string, logging ovnk.ACLLogging) []nbdb.ACL {
	lport := "inport == @" + pg
	direction := "Egress"
	if g.ingress {
		lport, direction = "outport == @"+pg, "Ingress"
	}
	empty := !g.hasSelector && len(g.blocks) == 0
	l4 := g.l4Matches()
	var out []nbdb.ACL
	add := func(idx int, proto, l3, l4 string) {
		match := l3 + " && " + l4 + " && " + lport
		if l4 == noProtocol {
			match = l3 + " && " + lport
		}
		keys := [][2]string{{ovnk.ExternalIDObjectName, policyKey}, {ovnk.ExternalIDPolicyDirection, direction},
			{ovnk.ExternalIDGressIndex, strconv.Itoa(g.idx)}, {ovnk.ExternalIDPortPolicyProtocol, proto},
			{ovnk.ExternalIDIPBlockIndex, strconv.Itoa(idx)}}
		a := policy.DefaultTierACL(ctrl, ownerNetworkPol, keys, policy.DefaultAllowPriority, match, nbdb.ACLActionAllowRelated, g.ingress)
		named(&a, fmt.Sprintf("NP:%s:%s:%d", policyKey, direction, g.idx), logging.Allow)
		out = append(out, a)
	}
	for _, proto := range slices.Sorted(maps.Keys(l4)) {
		if len(g.blocks) > 0 {
			add(ipBlocksIdx, proto, g.blocksMatch(), l4[proto])
		}
		if g.hasSelector || empty {
			l3 := g.allIPs()
			if !empty {
				l3 = g.setsMatch()
			}
			add(selectorsIdx, proto, l3, l4[proto])
		}
	}
	return out
}

// named gives an ACL upstream's GetACLName (cut to 63 characters) and
// its logging: a severity logs, "" does not (getLogSeverity).
func named(a *nbdb.ACL, name, severity string) {
	name = fmt.Sprintf("%.63s", name)
	a.Name = &name
	if severity != "" {
		s := severity
		a.Severity = &s
		a.Log = true
	}
}
