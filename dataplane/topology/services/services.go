package services

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// Network is a primary user-defined network as its Services' load
// balancers read it.
type Network struct {
	// Name is the network's name (k8s.ovn.org/network), Topology
	// base.TopologyLayer2 or base.TopologyLayer3.
	Name, Topology string
	// Subnets are the network's subnets: an endpoint outside them is a
	// host-network endpoint (upstream's IsHostEndpoint).
	Subnets []netip.Prefix
	// ServiceCIDRs are the cluster's Service CIDRs: internalTrafficPolicy
	// applies to the vips inside them (util.IsClusterIP).
	ServiceCIDRs []netip.Prefix
	// MasqueradeSubnets give the hairpin SNAT, host and ETP-local
	// masquerade addresses; a family missing takes upstream's default.
	MasqueradeSubnets []netip.Prefix
}

// Node is one of the zone's nodes on the network (upstream's nodeInfo of
// the local node): the switch and gateway router its per-node load
// balancers go on, and the addresses its NodePort vips and hairpin
// targets read.
type Node struct {
	Name string
	// Switch is the network's switch of the node (a Layer2 network's one
	// switch, a Layer3 network's node switch).
	Switch string
	// GatewayRouter is the node's gateway router on the network; "" when
	// the node has no l3-gateway-config (or its mode is disabled).
	GatewayRouter string
	// HostAddresses are the node's k8s.ovn.org/host-cidrs addresses: its
	// NodePort vips.
	HostAddresses []netip.Addr
	// GatewayAddresses are its l3-gateway-config ip-addresses: a router
	// target among them is the host, reached through the host masquerade
	// address.
	GatewayAddresses []netip.Addr
	// NodePortEnabled is the l3-gateway-config's node-port-enable.
	NodePortEnabled bool
}

// Service is one Service of the network's namespaces with the
// EndpointSlices of its namespace that may be its mirrored ones (the
// builder keeps those labelled with its name and annotated with the
// network).
type Service struct {
	Service *corev1.Service
	Slices  []*discoveryv1.EndpointSlice
}

// LoadBalancers are the piece of the network's Services in a zone, as
// upstream's syncService builds them for the zone's nodes: each Service's
// cluster-wide load balancers, held by the network's cluster-wide group
// (referenced: the topology creates it), and its per-node ones on the
// nodes' switches and gateway routers (referenced by name). Services and
// nodes are read in any order; rows are sorted by name.
func LoadBalancers(net Network, nodes []Node, svcs []Service) (*rows.Desired, error) {
	if net.Name == "" || (net.Topology != base.TopologyLayer2 && net.Topology != base.TopologyLayer3) {
		return nil, fmt.Errorf("services of network %q: topology %q: want %s or %s", net.Name, net.Topology,
			base.TopologyLayer2, base.TopologyLayer3)
	}
	m, err := masqueradeAddrs(net.MasqueradeSubnets)
	if err != nil {
		return nil, err
	}
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	d := &rows.Desired{Owner: rows.Owner{Network: net.Name, Topology: net.Topology, Piece: base.PieceServices}}
	var all []lb
	for _, s := range svcs {
		if s.Service == nil {
			return nil, errors.New("services: a Service entry has no Service")
		}
		if !hasClusterIP(s.Service) {
			continue // headless, ExternalName: upstream's syncService deletes their load balancers
		}
		perNode, cluster := serviceConfigs(net, nodes, s)
		all = append(all, clusterLBs(net, s.Service, cluster)...)
		all = append(all, perNodeLBs(net, s.Service, perNode, nodes, m)...)
	}
	attach(d, net, all, m.hairpin)
	return d, d.Validate()
}

// ServiceOwner is the part of the network's services piece that holds
// one Service's load balancers: the rows of LoadBalancers' owner whose
// k8s.ovn.org/owner is the Service's namespace/name (rows.Owner.Only).
func ServiceOwner(net Network, namespace, name string) rows.Owner {
	return rows.Owner{Network: net.Name, Topology: net.Topology, Piece: base.PieceServices,
		Only: [2]string{ovnk.ExternalIDLoadBalancerOwner, namespace + "/" + name}}
}

// ServiceLoadBalancers is the Service's part of the piece LoadBalancers
// builds (ServiceOwner): the same rows for it, and the network's group,
// switches and routers holding them by reference; an empty part (s nil:
// the Service is gone) removes its load balancers and their memberships.
func ServiceLoadBalancers(net Network, nodes []Node, namespace, name string, s *Service) (*rows.Desired, error) {
	d := &rows.Desired{}
	if s != nil {
		if s.Service == nil || s.Service.Namespace != namespace || s.Service.Name != name {
			return nil, fmt.Errorf("services: the part of Service %s/%s holds another Service", namespace, name)
		}
		var err error
		if d, err = LoadBalancers(net, nodes, []Service{*s}); err != nil {
			return nil, err
		}
	}
	d.Owner = ServiceOwner(net, namespace, name)
	return d, d.Validate()
}

// attach writes the load balancers into d: the rows, the cluster-wide
// group's members, and the switches and routers holding per-node ones.
func attach(d *rows.Desired, net Network, all []lb, hairpin string) {
	slices.SortFunc(all, func(a, b lb) int { return strings.Compare(a.name, b.name) })
	switches, routers := map[string][]string{}, map[string][]string{}
	var group []string
	for _, l := range all {
		d.LoadBalancers = append(d.LoadBalancers, l.row(net.Name, hairpin))
		if l.group {
			group = append(group, l.name)
		}
		for _, s := range l.switches {
			if !slices.Contains(switches[s], l.name) {
				switches[s] = append(switches[s], l.name)
			}
		}
		for _, r := range l.routers {
			if !slices.Contains(routers[r], l.name) {
				routers[r] = append(routers[r], l.name)
			}
		}
	}
	if len(group) > 0 {
		d.LoadBalancerGroups = []rows.LoadBalancerGroup{{Row: nbdb.LoadBalancerGroup{Name: ovnk.NamesFor(net.Name).ClusterLBGroup()},
			Ref: true, LoadBalancers: group}}
	}
	for _, name := range slices.Sorted(maps.Keys(switches)) {
		d.Switches = append(d.Switches, rows.Switch{Row: nbdb.LogicalSwitch{Name: name}, Ref: true, LoadBalancers: switches[name]})
	}
	for _, name := range slices.Sorted(maps.Keys(routers)) {
		d.Routers = append(d.Routers, rows.Router{Row: nbdb.LogicalRouter{Name: name}, Ref: true, LoadBalancers: routers[name]})
	}
}

// masquerade are the masquerade addresses the load balancers use, by
// family (0: IPv4, 1: IPv6): the hairpin SNAT option, the host's (a
// router target on the host) and the ETP-local vip.
type masquerade struct {
	hairpin        string
	host, etpLocal [2]string
}

// masqueradeAddrs reads them from the masquerade subnets (the fifth,
// second and third address: config.go's V4OVNServiceHairpinMasqueradeIP,
// V4HostMasqueradeIP, V4HostETPLocalMasqueradeIP and their V6 pairs); a
// family without a subnet takes upstream's default (169.254.169.0/29,
// fd69::/125).
func masqueradeAddrs(subnets []netip.Prefix) (masquerade, error) {
	hairpin := [2]string{"169.254.169.5", "fd69::5"}
	m := masquerade{host: [2]string{"169.254.169.2", "fd69::2"}, etpLocal: [2]string{"169.254.169.3", "fd69::3"}}
	for _, s := range subnets {
		f := family(s.Addr())
		for _, a := range []struct {
			to  *string
			get func(netip.Prefix) (netip.Addr, error)
		}{{&hairpin[f], ovnk.ServiceHairpinMasqueradeIP}, {&m.host[f], ovnk.HostMasqueradeIP}, {&m.etpLocal[f], ovnk.HostETPLocalMasqueradeIP}} {
			ip, err := a.get(s)
			if err != nil {
				return m, fmt.Errorf("masquerade addresses of subnet %s: %w", s, err)
			}
			*a.to = ip.String()
		}
	}
	m.hairpin = hairpin[0] + " " + hairpin[1]
	return m, nil
}

// family is 0 for IPv4, 1 for IPv6.
func family(a netip.Addr) int {
	if a.Is4() || a.Is4In6() {
		return 0
	}
	return 1
}

// hostPort is util.JoinHostPortInt32: "ip:port", an IPv6 address in brackets.
func hostPort(ip string, port int32) string {
	if strings.Contains(ip, ":") {
		return "[" + ip + "]:" + strconv.Itoa(int(port))
	}
	return ip + ":" + strconv.Itoa(int(port))
}

// Session affinity timeouts (k8s.io/kubernetes/pkg/apis/core:
// DefaultClientIPServiceAffinitySeconds, MaxClientIPServiceAffinitySeconds).
const (
	defaultAffinitySeconds = 10800
	maxAffinitySeconds     = 86400
)

// affinityTimeout is the Service's ClientIP affinity timeout (0: no
// affinity), lb_config.go's getSessionAffinityTimeOut.
func affinityTimeout(svc *corev1.Service) int32 {
	if svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP {
		return 0
	}
	if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
		return *c.ClientIP.TimeoutSeconds
	}
	return defaultAffinitySeconds
}

// lbOptions are loadbalancer.go's buildLB options with lb_config.go's
// lbOpts: reject when there are no endpoints, no empty_lb events (udnkit
// has no --ovn-empty-lb-events), SNAT kept, no neighbour answers, hairpin
// traffic SNATed to the hairpin masquerade addresses, and the affinity
// timeout unless it is the maximum (selection fields then).
func lbOptions(svc *corev1.Service, hairpin string) map[string]string {
	o := map[string]string{
		"reject": "true", "event": "false", "skip_snat": "false", "neighbor_responder": "none", "hairpin_snat_ip": hairpin,
	}
	if t := affinityTimeout(svc); t > 0 && t != maxAffinitySeconds {
		o["affinity_timeout"] = strconv.Itoa(int(t))
	}
	return o
}

// selectionFields are ip_src and ip_dst for an affinity of the maximum
// timeout (buildLB), else none.
func selectionFields(svc *corev1.Service) []string {
	if affinityTimeout(svc) == maxAffinitySeconds {
		return []string{nbdb.LoadBalancerSelectionFieldsIPSrc, nbdb.LoadBalancerSelectionFieldsIPDst}
	}
	return nil
}

// externalIDs are utils.go's getExternalIDsForLoadBalancer for a
// user-defined network: the Service's kind and namespace/name, the
// network and its role.
func externalIDs(network string, svc *corev1.Service) map[string]string {
	return map[string]string{
		ovnk.ExternalIDLoadBalancerKind:  "Service",
		ovnk.ExternalIDLoadBalancerOwner: svc.Namespace + "/" + svc.Name,
		ovnk.ExternalIDNetwork:           network,
		ovnk.ExternalIDNetworkRole:       "primary",
	}
}

// hasClusterIP says whether the Service has load balancers at all
// (util.ServiceTypeHasClusterIP and IsClusterIPSet).
func hasClusterIP(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	default:
		return false
	}
	return svc.Spec.ClusterIP != corev1.ClusterIPNone && svc.Spec.ClusterIP != ""
}

// clusterIPs are util.GetClusterIPs: ClusterIPs, or the single ClusterIP.
func clusterIPs(svc *corev1.Service) []string {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 {
		ips = []string{svc.Spec.ClusterIP}
	}
	return canonical(ips)
}

// externalIPs are util.GetExternalAndLBIPs: the ExternalIPs, then a
// LoadBalancer Service's ingress IPs.
func externalIPs(svc *corev1.Service) []string {
	ips := slices.Clone(svc.Spec.ExternalIPs)
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		for _, in := range svc.Status.LoadBalancer.Ingress {
			ips = append(ips, in.IP)
		}
	}
	return canonical(ips)
}

// canonical parses addresses (unparsable ones dropped) into their
// canonical text, as utilnet.ParseIPSloppy(...).String().
func canonical(ips []string) []string {
	var out []string
	for _, s := range ips {
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, a.Unmap().String())
		}
	}
	return out
}

// hasHostEndpoint says whether a target lies outside the network's
// subnets (utils.go: hasHostEndpoints).
func hasHostEndpoint(subnets []netip.Prefix, targets []entry) bool {
	for _, e := range targets {
		for _, ip := range append(slices.Clone(e.v4), e.v6...) {
			a, err := netip.ParseAddr(ip)
			if err != nil {
				continue
			}
			if !slices.ContainsFunc(subnets, func(p netip.Prefix) bool { return p.Contains(a) }) {
				return true
			}
		}
	}
	return false
}
