package networkpolicy

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/policy"
	"github.com/udnkit/udnkit/ovnk"
)

// The default-deny ACLs' types (netpolDefaultDenyACLType) and the ARP/ND
// allow match (arpAllowPolicyMatch).
const (
	defaultDeny = "defaultDeny"
	arpAllow    = "arpAllow"
	arpMatch    = "(arp || nd)"
)

// builder holds one Build's state: the address sets by name, and the
// default-deny members of each namespace.
type builder struct {
	net  Network
	ctrl string
	ns   map[string]Namespace
	sets map[string]nbdb.AddressSet
	// denyIn and denyOut are the ports of each namespace's ingress and
	// egress default-deny port groups.
	denyIn, denyOut map[string]map[string]bool
}

// Build is the network's network-policy rows in the zone (see the package
// doc). A network without policies has none: the Desired is Empty. A
// policy that cannot be built (a selector that does not parse, a selector
// peer on a network without addresses) has no rows, as upstream's failed
// createNetworkPolicy leaves none: the error names each such policy, and
// the Desired holds the others'. An invalid network returns no Desired.
func Build(n Network) (*rows.Desired, error) {
	if err := n.validate(); err != nil {
		return nil, err
	}
	b := &builder{net: n, ctrl: policy.NetworkController(n.Name), ns: map[string]Namespace{}, sets: map[string]nbdb.AddressSet{},
		denyIn: map[string]map[string]bool{}, denyOut: map[string]map[string]bool{}}
	for _, ns := range n.Namespaces {
		b.ns[ns.Name] = ns
	}
	d := &rows.Desired{Owner: rows.Owner{Network: n.Name, Topology: n.Topology, Piece: Piece}}
	nps := slices.Clone(n.Policies)
	slices.SortFunc(nps, func(a, b networkingv1.NetworkPolicy) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	var errs []error
	for i := range nps {
		pg, err := b.policy(&nps[i])
		if err != nil {
			errs = append(errs, fmt.Errorf("policy %s/%s: %w", nps[i].Namespace, nps[i].Name, err))
			continue
		}
		d.PortGroups = append(d.PortGroups, pg)
	}
	for _, ns := range slices.Sorted(maps.Keys(b.denyIn)) {
		d.PortGroups = append(d.PortGroups, b.denyGroup(ns, true), b.denyGroup(ns, false))
	}
	for _, name := range slices.Sorted(maps.Keys(b.sets)) {
		d.AddressSets = append(d.AddressSets, b.sets[name])
	}
	if len(d.PortGroups) > 0 {
		d.Meters = []rows.ZoneMeter{policy.ACLLoggingMeter()}
	}
	return d, errors.Join(errs...)
}

// PolicyPortGroup is the name of a policy's port group
// (getNetworkPolicyPGName).
func PolicyPortGroup(network, namespace, name string) string {
	_, n := policy.ObjectIDs(policy.NetworkController(network), ownerNetworkPol, [2]string{ovnk.ExternalIDObjectName, namespace + ":" + name})
	return n
}

// DenyPortGroup is the name of a namespace's ingress or egress
// default-deny port group (defaultDenyPortGroupName).
func DenyPortGroup(network, namespace string, ingress bool) string {
	_, n := policy.ObjectIDs(policy.NetworkController(network), ownerNetpolNS, denyKeys(namespace, ingress)...)
	return n
}

func denyKeys(namespace string, ingress bool) [][2]string {
	return [][2]string{{ovnk.ExternalIDObjectName, namespace}, {ovnk.ExternalIDPolicyDirection, direction(ingress)}}
}

func direction(ingress bool) string {
	if ingress {
		return "Ingress"
	}
	return "Egress"
}

// policy is createNetworkPolicy's port group: the ACLs of every rule,
// ingress and egress whatever the policy types, and the zone's ports of
// the pods the podSelector selects; those ports join the namespace's
// default-deny groups of the policy's types.
func (b *builder) policy(np *networkingv1.NetworkPolicy) (rows.PortGroup, error) {
	key := np.Namespace + ":" + np.Name
	ids, name := policy.ObjectIDs(b.ctrl, ownerNetworkPol, [2]string{ovnk.ExternalIDObjectName, key})
	pg := rows.PortGroup{Row: nbdb.PortGroup{Name: name, ExternalIDs: ids}}
	logging := b.ns[np.Namespace].Logging
	for i, r := range np.Spec.Ingress {
		g, err := b.gress(np.Namespace, true, i, r.Ports, r.From)
		if err != nil {
			return pg, err
		}
		pg.ACLs = append(pg.ACLs, g.acls(b.ctrl, key, name, logging)...)
	}
	for i, r := range np.Spec.Egress {
		g, err := b.gress(np.Namespace, false, i, r.Ports, r.To)
		if err != nil {
			return pg, err
		}
		pg.ACLs = append(pg.ACLs, g.acls(b.ctrl, key, name, logging)...)
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		return pg, fmt.Errorf("spec.podSelector: %w", err)
	}
	for _, p := range b.net.Pods {
		if p.Namespace == np.Namespace && p.Port != "" && sel.Matches(labels.Set(p.Labels)) {
			pg.Ports = append(pg.Ports, p.Port)
		}
	}
	slices.Sort(pg.Ports)
	pg.Ports = slices.Compact(pg.Ports)
	ingress, egress := policyTypes(np)
	for _, deny := range []struct {
		on bool
		m  map[string]map[string]bool
	}{{ingress, b.denyIn}, {egress, b.denyOut}} {
		if deny.m[np.Namespace] == nil {
			deny.m[np.Namespace] = map[string]bool{}
		}
		if deny.on {
			for _, p := range pg.Ports {
				deny.m[np.Namespace][p] = true
			}
		}
	}
	return pg, nil
}

// policyTypes is getPolicyType.
func policyTypes(np *networkingv1.NetworkPolicy) (ingress, egress bool) {
	for _, t := range np.Spec.PolicyTypes {
		switch t {
		case networkingv1.PolicyTypeIngress:
			ingress = true
		case networkingv1.PolicyTypeEgress:
			egress = true
		}
	}
	return ingress, egress
}

// gress is a rule with its ports and peers (setupGressPolicy): an ipBlock
// is kept for the rule's ipBlock ACL, a selector peer names its address
// sets; a peer with neither is ignored.
func (b *builder) gress(namespace string, ingress bool, idx int, ports []networkingv1.NetworkPolicyPort,
	peers []networkingv1.NetworkPolicyPeer) (*gress, error) {
	g := &gress{ingress: ingress, idx: idx, v4: b.net.IPv4, v6: b.net.IPv6}
	for _, p := range ports {
		g.addPort(p)
	}
	for _, peer := range peers {
		switch {
		case peer.IPBlock != nil:
			g.blocks = append(g.blocks, *peer.IPBlock)
		case peer.PodSelector == nil && peer.NamespaceSelector == nil:
		case !b.net.IPv4 && !b.net.IPv6:
			// convertMultiNetPolicyToNetPolicy refuses them (doesNetworkRequireIPAM).
			return nil, fmt.Errorf("%s[%d]: a network without IPAM can only have ipBlock peers", strings.ToLower(direction(ingress)), idx)
		default:
			v4, v6, err := b.peerSets(namespace, peer)
			if err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", strings.ToLower(direction(ingress)), idx, err)
			}
			g.addSets(v4, v6)
		}
	}
	return g, nil
}

// peerSets ensures the peer's pod-selector address sets (EnsureAddressSet
// with the policy's namespace when the peer has no namespace selector) and
// returns their names ("" for a family the network lacks).
func (b *builder) peerSets(namespace string, peer networkingv1.NetworkPolicyPeer) (v4, v6 string, err error) {
	legacy := peer.NamespaceSelector != nil && peer.PodSelector == nil
	podSel := peer.PodSelector
	if podSel == nil {
		podSel = &metav1.LabelSelector{}
	}
	pods, err := metav1.LabelSelectorAsSelector(podSel)
	if err != nil {
		return "", "", fmt.Errorf("podSelector: %w", err)
	}
	inNamespace := func(ns string) bool { return ns == namespace }
	if peer.NamespaceSelector != nil {
		nsSel, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
		if err != nil {
			return "", "", fmt.Errorf("namespaceSelector: %w", err)
		}
		inNamespace = func(ns string) bool {
			n, ok := b.ns[ns]
			return nsSel.Empty() || ok && nsSel.Matches(labels.Set(n.Labels))
		}
	}
	var addrs []netip.Addr
	for _, p := range b.net.Pods {
		if inNamespace(p.Namespace) && pods.Matches(labels.Set(p.Labels)) {
			addrs = append(addrs, p.IPs...)
		}
	}
	key := podSelectorKey(podSel, peer.NamespaceSelector, namespace, legacy)
	if b.net.IPv4 {
		v4 = b.addressSet(key, false, addrs)
	}
	if b.net.IPv6 {
		v6 = b.addressSet(key, true, addrs)
	}
	return v4, v6, nil
}

// addressSet is one family's pod-selector address set (buildAddressSet of
// GetPodSelectorAddrSetDbIDs with the family): the family's addresses.
func (b *builder) addressSet(key string, v6 bool, addrs []netip.Addr) string {
	fam := "v4"
	if v6 {
		fam = "v6"
	}
	ids, name := policy.ObjectIDs(b.ctrl, ownerPodSelector, [2]string{ovnk.ExternalIDObjectName, key}, [2]string{ovnk.ExternalIDIPFamily, fam})
	if _, ok := b.sets[name]; ok {
		return name
	}
	var out []string
	for _, a := range addrs {
		if a.Is6() == v6 {
			out = append(out, a.String())
		}
	}
	slices.Sort(out)
	b.sets[name] = nbdb.AddressSet{Name: name, ExternalIDs: ids, Addresses: slices.Compact(out)}
	return name
}

// denyGroup is one of a namespace's default-deny port groups
// (createDefaultDenyPGAndACLs, buildDenyACLs): the drop ACL, logged at the
// namespace's deny severity, and the ARP/ND allow ACL.
func (b *builder) denyGroup(namespace string, ingress bool) rows.PortGroup {
	ids, name := policy.ObjectIDs(b.ctrl, ownerNetpolNS, denyKeys(namespace, ingress)...)
	lport := "inport == @" + name
	members := b.denyOut[namespace]
	if ingress {
		lport, members = "outport == @"+name, b.denyIn[namespace]
	}
	aclName := "NP:" + namespace + ":" + direction(ingress)
	keys := func(typ string) [][2]string {
		return append(denyKeys(namespace, ingress), [2]string{ovnk.ExternalIDType, typ})
	}
	deny := policy.DefaultTierACL(b.ctrl, ownerNetpolNS, keys(defaultDeny), policy.DefaultDenyPriority, lport, nbdb.ACLActionDrop, ingress)
	named(&deny, aclName, b.ns[namespace].Logging.Deny)
	arp := policy.DefaultTierACL(b.ctrl, ownerNetpolNS, keys(arpAllow), policy.DefaultAllowPriority, lport+" && "+arpMatch, nbdb.ACLActionAllow, ingress)
	named(&arp, aclName, "")
	pg := rows.PortGroup{Row: nbdb.PortGroup{Name: name, ExternalIDs: ids}, ACLs: []nbdb.ACL{deny, arp}}
	pg.Ports = slices.Sorted(maps.Keys(members))
	return pg
}
