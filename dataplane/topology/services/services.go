package services

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

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
	// MasqueradeSubnets give the hairpin SNAT addresses (their fifth
	// address); a family missing takes upstream's default.
	MasqueradeSubnets []netip.Prefix
}

// Service is one Service of the network's namespaces with the
// EndpointSlices of its namespace that may be its mirrored ones (the
// builder keeps those labelled with its name and annotated with the
// network).
type Service struct {
	Service *corev1.Service
	Slices  []*discoveryv1.EndpointSlice
}

// Skipped is a Service, or the part of it, that the piece leaves out.
type Skipped struct {
	Service types.NamespacedName
	Reason  string
}

// The reasons of Skipped.
const (
	ReasonPerNode = "per-node load balancers (NodePort, externalTrafficPolicy or internalTrafficPolicy Local, " +
		"host-network endpoints) are not written"
)

// Upstream's hairpin SNAT addresses when the masquerade subnets lack a
// family (config.go: the defaults of V4OVNServiceHairpinMasqueradeIP and
// V6OVNServiceHairpinMasqueradeIP).
var defaultHairpin = [2]string{"169.254.169.5", "fd69::5"}

// LoadBalancers are the piece of the network's Services in a zone: their
// cluster-wide load balancers, held by the network's cluster-wide group
// (referenced: the topology creates it). Services are read in any order;
// the rows are sorted by name. Skipped lists the Services whose per-node
// part is left out.
func LoadBalancers(net Network, svcs []Service) (*rows.Desired, []Skipped, error) {
	if net.Name == "" || (net.Topology != base.TopologyLayer2 && net.Topology != base.TopologyLayer3) {
		return nil, nil, fmt.Errorf("services of network %q: topology %q: want %s or %s", net.Name, net.Topology,
			base.TopologyLayer2, base.TopologyLayer3)
	}
	hairpin, err := hairpinSNATIP(net.MasqueradeSubnets)
	if err != nil {
		return nil, nil, err
	}
	d := &rows.Desired{Owner: rows.Owner{Network: net.Name, Topology: net.Topology, Piece: base.PieceServices}}
	var skipped []Skipped
	for _, s := range svcs {
		if s.Service == nil {
			return nil, nil, errors.New("services: a Service entry has no Service")
		}
		lbs, perNode := serviceLBs(net, hairpin, s)
		d.LoadBalancers = append(d.LoadBalancers, lbs...)
		if perNode {
			skipped = append(skipped, Skipped{Service: types.NamespacedName{Namespace: s.Service.Namespace, Name: s.Service.Name},
				Reason: ReasonPerNode})
		}
	}
	slices.SortFunc(d.LoadBalancers, func(a, b nbdb.LoadBalancer) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(skipped, func(a, b Skipped) int { return strings.Compare(a.Service.String(), b.Service.String()) })
	if len(d.LoadBalancers) > 0 {
		g := rows.LoadBalancerGroup{Row: nbdb.LoadBalancerGroup{Name: ovnk.NamesFor(net.Name).ClusterLBGroup()}, Ref: true}
		for _, lb := range d.LoadBalancers {
			g.LoadBalancers = append(g.LoadBalancers, lb.Name)
		}
		d.LoadBalancerGroups = []rows.LoadBalancerGroup{g}
	}
	return d, skipped, d.Validate()
}

// hairpinSNATIP is the hairpin_snat_ip option, "<v4> <v6>" as
// loadbalancer.go's buildLB formats it, whatever the cluster's IP modes.
func hairpinSNATIP(masquerade []netip.Prefix) (string, error) {
	ips := defaultHairpin
	for _, s := range masquerade {
		a, err := ovnk.ServiceHairpinMasqueradeIP(s)
		if err != nil {
			return "", fmt.Errorf("hairpin SNAT address of masquerade subnet %s: %w", s, err)
		}
		if s.Addr().Is4() {
			ips[0] = a.String()
		} else {
			ips[1] = a.String()
		}
	}
	return ips[0] + " " + ips[1], nil
}

// lbConfig is one Service port's cluster-wide part (lb_config.go:
// lbConfig): its vips, protocol and port, and its endpoints by target port.
type lbConfig struct {
	vips     []string
	protocol corev1.Protocol
	inport   int32
	targets  []entry
}

// protocols are the protocols in upstream's order (lb_config.go: protos).
var protocols = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}

// serviceLBs are a Service's cluster-wide load balancers, one per
// protocol (buildServiceLBConfigs and buildClusterLBs), and whether
// upstream would also write per-node ones. A Service without a ClusterIP
// (headless, ExternalName) has none, as upstream's syncService deletes them.
func serviceLBs(net Network, hairpin string, s Service) ([]nbdb.LoadBalancer, bool) {
	svc := s.Service
	if !hasClusterIP(svc) {
		return nil, false
	}
	eps := endpointsByPort(mirroredSlices(net.Name, svc, s.Slices), svc)
	etpLocal := svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	itpLocal := svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal
	perNode := false
	byProto := map[corev1.Protocol][]lbConfig{}
	for _, p := range svc.Spec.Ports {
		targets := eps[portKey(p.Protocol, p.Name)]
		perNode = perNode || p.NodePort != 0
		vips := clusterIPs(svc)
		if ext := externalIPs(svc); etpLocal && len(ext) > 0 {
			perNode = true
		} else {
			vips = append(vips, ext...)
		}
		if itpLocal || hasHostEndpoint(net.Subnets, targets) {
			perNode = true
			continue
		}
		byProto[p.Protocol] = append(byProto[p.Protocol], lbConfig{vips: vips, protocol: p.Protocol, inport: p.Port, targets: targets})
	}
	names := ovnk.NamesFor(net.Name)
	var out []nbdb.LoadBalancer
	for _, proto := range protocols {
		cfgs := byProto[proto]
		if len(cfgs) == 0 {
			continue
		}
		out = append(out, nbdb.LoadBalancer{
			Name:            names.ServiceLoadBalancer(svc.Namespace, svc.Name, string(proto), "cluster"),
			Protocol:        base.Ptr(strings.ToLower(string(proto))),
			Vips:            vipMap(cfgs),
			Options:         lbOptions(svc, hairpin),
			SelectionFields: selectionFields(svc),
			ExternalIDs:     externalIDs(net.Name, svc),
		})
	}
	return out, perNode
}

// vipMap maps each vip and port to its family's targets, joined by ","
// (buildClusterLBs and buildVipMap: a source two configs share gets both
// configs' targets).
func vipMap(cfgs []lbConfig) map[string]string {
	targets := map[string][]string{}
	for _, c := range cfgs {
		for _, vip := range c.vips {
			src := hostPort(vip, c.inport)
			is6 := strings.Contains(vip, ":")
			for _, e := range c.targets {
				ips := e.v4
				if is6 {
					ips = e.v6
				}
				for _, ip := range ips {
					targets[src] = append(targets[src], hostPort(ip, e.port))
				}
			}
			if _, ok := targets[src]; !ok {
				targets[src] = nil
			}
		}
	}
	out := make(map[string]string, len(targets))
	for src, t := range targets {
		out[src] = strings.Join(t, ",")
	}
	return out
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
