package services

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/udnkit/udnkit/ovnk"
)

// nodeRules are one node's rules of one protocol: its switch's, its
// gateway router's and, for externalTrafficPolicy Local, its router's
// rules without SNAT.
type nodeRules struct{ sw, router, noSNAT []rule }

// perNodeLBs are the per-node load balancers of each zone node and
// protocol (lb_config.go: buildPerNodeLBs), merged where upstream merges
// them (mergeLBs): "node_router+switch_<node>" when the switch's and the
// router's rules agree, else "node_router_<node>", "node_local_router_<node>"
// (skip_snat) and "node_switch_<node>".
func perNodeLBs(net Network, svc *corev1.Service, cfgs []lbConfig, nodes []Node, m masquerade) []lb {
	names := ovnk.NamesFor(net.Name)
	var out []lb
	for _, n := range nodes {
		for _, group := range byProtocol(cfgs) {
			proto := group[0].protocol
			name := func(scope string) string {
				return names.ServiceLoadBalancer(svc.Namespace, svc.Name, string(proto), scope+n.Name)
			}
			var r nodeRules
			for _, c := range group {
				r.add(net, n, c, m)
			}
			base := lb{svc: svc, protocol: proto}
			if len(r.sw) > 0 && n.GatewayRouter != "" && slices.EqualFunc(r.sw, r.router, sameRule) {
				l := base
				l.name, l.rules, l.routers, l.switches = name("node_router+switch_"), r.router, []string{n.GatewayRouter}, []string{n.Switch}
				out = append(out, l)
				continue
			}
			if len(r.router) > 0 && n.GatewayRouter != "" {
				l := base
				l.name, l.rules, l.routers = name("node_router_"), r.router, []string{n.GatewayRouter}
				out = append(out, l)
			}
			if len(r.noSNAT) > 0 && n.GatewayRouter != "" {
				l := base
				l.name, l.rules, l.routers, l.skipSNAT = name("node_local_router_"), r.noSNAT, []string{n.GatewayRouter}, true
				out = append(out, l)
			}
			if len(r.sw) > 0 {
				l := base
				l.name, l.rules, l.switches = name("node_switch_"), r.sw, []string{n.Switch}
				out = append(out, l)
			}
		}
	}
	return mergeLBs(out)
}

// add adds one config's rules on node n: its vips ("node": the node's
// host addresses unless node ports are disabled) to the switch with every
// endpoint (the local ones for an internalTrafficPolicy Local ClusterIP,
// plus the ETP-local masquerade vip to the local ones for a NodePort with
// externalTrafficPolicy Local) and to the router with the endpoints (the
// local ones for externalTrafficPolicy Local, then without SNAT), the
// node's own addresses among them swapped for the host masquerade address
// (makeNodeSwitchTargetIPs, makeNodeRouterTargetIPs).
func (r *nodeRules) add(net Network, n Node, c lbConfig, m masquerade) {
	local := localEntries(c.targets, c.local[n.Name])
	routerEntries := c.targets
	if c.etpLocal {
		routerEntries = local
	}
	gateway := sortedAddrs(n.GatewayAddresses)
	swap := func(f int) func(string) string {
		return func(ip string) string {
			if slices.Contains(gateway, ip) {
				return m.host[f]
			}
			return ip
		}
	}
	var vips []string
	for _, vip := range c.vips {
		if vip != nodeVIP {
			vips = append(vips, vip)
		} else if n.NodePortEnabled {
			vips = append(vips, sortedAddrs(n.HostAddresses)...)
		}
	}
	for _, vip := range vips {
		v6, f := isV6(vip), 0
		if v6 {
			f = 1
		}
		if c.etpLocal && c.nodePort {
			r.sw = append(r.sw, rule{src: hostPort(m.etpLocal[f], c.inport), targets: joinTargets(local, v6, nil)})
		}
		swEntries := c.targets
		if c.itpLocal && isClusterIP(net.ServiceCIDRs, vip) {
			swEntries = local
		}
		r.sw = append(r.sw, rule{src: hostPort(vip, c.inport), targets: joinTargets(swEntries, v6, nil)})
		rt := rule{src: hostPort(vip, c.inport), targets: joinTargets(routerEntries, v6, swap(f))}
		if c.etpLocal && len(rt.targets) > 0 {
			r.noSNAT = append(r.noSNAT, rt)
		} else {
			r.router = append(r.router, rt)
		}
	}
}

func sameRule(a, b rule) bool { return a.src == b.src && slices.Equal(a.targets, b.targets) }

// mergeLBs joins load balancers of the same protocol, options and rules
// into the first of them, named with "_merged", on all their switches
// and routers (lb_config.go: mergeLBs, canMergeLB).
func mergeLBs(lbs []lb) []lb {
	var out []lb
next:
	for _, l := range lbs {
		for i := range out {
			o := &out[i]
			if o.protocol == l.protocol && o.skipSNAT == l.skipSNAT && slices.EqualFunc(o.rules, l.rules, sameRule) {
				o.switches = append(o.switches, l.switches...)
				o.routers = append(o.routers, l.routers...)
				if !strings.HasSuffix(o.name, "_merged") {
					o.name += "_merged"
				}
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}
