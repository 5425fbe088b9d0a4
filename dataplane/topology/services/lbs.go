package services

import (
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// nodeVIP stands for the node's host addresses among a config's vips
// (lb_config.go: placeholderNodeIPs).
const nodeVIP = "node"

// lbConfig is one Service port's abstract load balancer (lb_config.go:
// lbConfig): vips (nodeVIP for a NodePort), protocol and port, the
// endpoints by target port, cluster-wide and per local node, and the
// traffic policies that apply to it.
type lbConfig struct {
	vips               []string
	protocol           corev1.Protocol
	inport             int32
	targets            []entry
	local              map[string][]entry
	etpLocal, itpLocal bool
	nodePort           bool
}

// rule is one vip ("ip:port") and its targets ("ip:port" each).
type rule struct {
	src     string
	targets []string
}

// lb is a load balancer being built (loadbalancer.go: LB): its rules,
// options and where it goes (the cluster-wide group, or switches and
// routers).
type lb struct {
	name              string
	svc               *corev1.Service
	protocol          corev1.Protocol
	rules             []rule
	skipSNAT          bool
	group             bool
	switches, routers []string
}

// row is the load balancer's Northbound row (loadbalancer.go: buildLB
// with buildVipMap: a source several rules share gets all their targets).
func (l lb) row(network, hairpin string) nbdb.LoadBalancer {
	targets := map[string][]string{}
	for _, r := range l.rules {
		targets[r.src] = append(targets[r.src], r.targets...)
	}
	vips := make(map[string]string, len(targets))
	for src, t := range targets {
		vips[src] = strings.Join(t, ",")
	}
	opts := lbOptions(l.svc, hairpin)
	if l.skipSNAT {
		opts["skip_snat"] = "true"
	}
	return nbdb.LoadBalancer{Name: l.name, Protocol: base.Ptr(strings.ToLower(string(l.protocol))), Vips: vips, Options: opts,
		SelectionFields: selectionFields(l.svc), ExternalIDs: externalIDs(network, l.svc)}
}

// serviceConfigs are the Service's per-node and cluster-wide configs
// (lb_config.go: buildServiceLBConfigs without templates, which upstream
// turns off on user-defined networks): a NodePort gets a per-node config;
// ExternalIPs and LoadBalancer ingress IPs join the ClusterIPs unless
// externalTrafficPolicy is Local (then per node); the ClusterIP config is
// per node with internalTrafficPolicy Local or a host-network endpoint.
func serviceConfigs(net Network, nodes []Node, s Service) (perNode, cluster []lbConfig) {
	svc := s.Service
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	etpLocal := svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	itpLocal := svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal
	eps, local := endpointsByPort(mirroredSlices(net.Name, svc, s.Slices), svc, names, etpLocal || itpLocal)
	for _, p := range svc.Spec.Ports {
		key := portKey(p.Protocol, p.Name)
		c := lbConfig{protocol: p.Protocol, targets: eps[key], local: local[key]}
		if p.NodePort != 0 {
			np := c
			np.inport, np.vips, np.etpLocal, np.nodePort = p.NodePort, []string{nodeVIP}, etpLocal, true
			perNode = append(perNode, np)
		}
		vips := clusterIPs(svc)
		if ext := externalIPs(svc); etpLocal && len(ext) > 0 {
			e := c
			e.inport, e.vips, e.etpLocal = p.Port, ext, true
			perNode = append(perNode, e)
		} else {
			vips = append(vips, ext...)
		}
		c.inport, c.vips, c.itpLocal = p.Port, vips, itpLocal
		if itpLocal || hasHostEndpoint(net.Subnets, c.targets) {
			perNode = append(perNode, c)
		} else {
			cluster = append(cluster, c)
		}
	}
	return perNode, cluster
}

// byProtocol groups configs by protocol, in upstream's order (protos).
func byProtocol(cfgs []lbConfig) [][]lbConfig {
	var out [][]lbConfig
	for _, proto := range []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP} {
		var group []lbConfig
		for _, c := range cfgs {
			if c.protocol == proto {
				group = append(group, c)
			}
		}
		if len(group) > 0 {
			out = append(out, group)
		}
	}
	return out
}

// clusterLBs are the cluster-wide load balancers, one per protocol, in
// the network's cluster-wide group (lb_config.go: buildClusterLBs): each
// vip maps to its family's endpoints.
func clusterLBs(net Network, svc *corev1.Service, cfgs []lbConfig) []lb {
	var out []lb
	for _, group := range byProtocol(cfgs) {
		l := lb{name: ovnk.NamesFor(net.Name).ServiceLoadBalancer(svc.Namespace, svc.Name, string(group[0].protocol), "cluster"),
			svc: svc, protocol: group[0].protocol, group: true}
		for _, c := range group {
			for _, vip := range c.vips {
				l.rules = append(l.rules, rule{src: hostPort(vip, c.inport), targets: joinTargets(c.targets, isV6(vip), nil)})
			}
		}
		out = append(out, l)
	}
	return out
}

// joinTargets are entries' addresses of one family as "ip:port", each
// address passed through swap (nil: kept).
func joinTargets(entries []entry, v6 bool, swap func(string) string) []string {
	var out []string
	for _, e := range entries {
		ips := e.v4
		if v6 {
			ips = e.v6
		}
		for _, ip := range ips {
			if swap != nil {
				ip = swap(ip)
			}
			out = append(out, hostPort(ip, e.port))
		}
	}
	return out
}

// localEntries are a node's endpoints of the cluster entries' target
// ports (util.LBEndpoints.GetEntryByPort: an empty entry when the node has
// none of a port).
func localEntries(cluster []entry, local []entry) []entry {
	out := make([]entry, 0, len(cluster))
	for _, c := range cluster {
		e := entry{port: c.port}
		for _, l := range local {
			if l.port == c.port {
				e = l
			}
		}
		out = append(out, e)
	}
	return out
}

func isV6(ip string) bool { return strings.Contains(ip, ":") }

// isClusterIP says whether a vip lies in the Service CIDRs (util.IsClusterIP).
func isClusterIP(cidrs []netip.Prefix, vip string) bool {
	a, err := netip.ParseAddr(vip)
	return err == nil && slices.ContainsFunc(cidrs, func(p netip.Prefix) bool { return p.Contains(a) })
}

// sortedAddrs are addresses as text, sorted as text (sets.List).
func sortedAddrs(addrs []netip.Addr) []string {
	set := map[string]bool{}
	for _, a := range addrs {
		set[a.Unmap().String()] = true
	}
	return slices.Sorted(maps.Keys(set))
}
