package dataplane

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// apiAndDNS are upstream's default UDN-enabled services, dual-stack.
func apiAndDNS() []topology.UDNEnabledService {
	return []topology.UDNEnabledService{
		{Key: "default/kubernetes", ClusterIPs: []netip.Addr{addr("10.96.0.1"), addr("fd00:10:96::1")}},
		{Key: "kube-system/kube-dns", ClusterIPs: []netip.Addr{addr("10.96.0.10"), addr("fd00:10:96::a")}},
	}
}

// serviceRoutes lists the routes that carry a UDN-enabled service's key as
// "ip_prefix nexthop policy key", with ovn-nbctl.
func (e *env) serviceRoutes() string {
	e.t.Helper()
	out := e.nbctl("--format=csv", "--data=bare", "--no-headings", "--columns=ip_prefix,nexthop,policy,external_ids",
		"find", "Logical_Router_Static_Route", "external_ids:"+ovnk.ExternalIDUDNEnabledService+"!=\"\"")
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		if l == "" {
			continue
		}
		f := strings.SplitN(l, ",", 4)
		if len(f) < 4 {
			e.t.Fatalf("route row %q", l)
		}
		key := ""
		for _, kv := range strings.Fields(f[3]) {
			if k, v, _ := strings.Cut(kv, "="); k == ovnk.ExternalIDUDNEnabledService {
				key = v
			}
			if !strings.HasPrefix(kv, ovnk.ExternalIDNetwork+"=") && !strings.HasPrefix(kv, ovnk.ExternalIDTopology+"=") &&
				!strings.HasPrefix(kv, ovnk.ExternalIDPiece+"=") && !strings.HasPrefix(kv, ovnk.ExternalIDUDNEnabledService+"=") {
				e.t.Errorf("service route %s has external ID %s besides the owner's and the service's", f[0], kv)
			}
		}
		if !strings.Contains(f[3], ovnk.ExternalIDNetwork+"=test12_namespace-scoped") || !strings.Contains(f[3], ovnk.ExternalIDTopology+"=layer2") {
			e.t.Errorf("service route %s lacks the network's external IDs: %s", f[0], f[3])
		}
		rows = append(rows, strings.Join([]string{f[0], f[1], f[2], key}, " "))
	}
	return strings.Join(rows, "\n")
}

// routeUUIDs are the UUIDs of the routes to prefix.
func (e *env) routeUUIDs(prefix string) string {
	e.t.Helper()
	return e.nbctl("--bare", "--columns=_uuid", "find", "Logical_Router_Static_Route", "ip_prefix=\""+prefix+"\"")
}

// Each UDN-enabled service that exists has its spec.clusterIP (the first of
// its ClusterIPs; the other family of a dual-stack service is not routed,
// as upstream's configureUDNEnabledServiceRoute in
// ovn/controller/services/services_controller.go) routed on the transit
// router to the management port of its family, marked with the service's
// key; a service that goes away loses its route and nothing else changes; a
// headless service and a family the network lacks get none.
func TestServiceRoutesFollowTheServices(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	net.Subnets = append(net.Subnets, pfx("2010:100:200::/60"))
	net.JoinSubnets = append(net.JoinSubnets, pfx("fd99::/64"))
	net.Services = apiAndDNS()
	e.apply(mustLayer2(t, net, nodes))
	wantLines(t, "service routes", e.serviceRoutes(),
		"10.96.0.1 203.203.0.2 dst-ip default/kubernetes",
		"10.96.0.10 203.203.0.2 dst-ip kube-system/kube-dns",
	)
	for _, r := range strings.Split(e.nbctl("lr-route-list", gr1), "\n") {
		if strings.Contains(r, "10.96.") || strings.Contains(r, "fd00:10:96") {
			t.Errorf("a service route on the gateway router: %s", r)
		}
	}
	if ops := e.apply(mustLayer2(t, net, nodes)); ops != 0 {
		t.Errorf("second apply sent %d operations, want 0", ops)
	}

	// kube-dns deleted: its route goes, the API's stays as it is.
	api := e.routeUUIDs("10.96.0.1")
	net.Services = apiAndDNS()[:1]
	e.apply(mustLayer2(t, net, nodes))
	wantLines(t, "service routes after kube-dns is deleted", e.serviceRoutes(),
		"10.96.0.1 203.203.0.2 dst-ip default/kubernetes",
	)
	// An IPv6-first dual-stack service: its IPv6 ClusterIP only.
	net.Services = append(apiAndDNS()[:1], topology.UDNEnabledService{Key: "kube-system/kube-dns",
		ClusterIPs: []netip.Addr{addr("fd00:10:96::a"), addr("10.96.0.10")}})
	e.apply(mustLayer2(t, net, nodes))
	wantLines(t, "service routes with an IPv6-first kube-dns", e.serviceRoutes(),
		"10.96.0.1 203.203.0.2 dst-ip default/kubernetes",
		"fd00:10:96::a 2010:100:200::2 dst-ip kube-system/kube-dns",
	)
	if got := e.routeUUIDs("10.96.0.1"); got != api {
		t.Errorf("the API route was replaced (%s, was %s) when another service went away", got, api)
	}

	// Headless (no ClusterIPs) and single-stack IPv6 on an IPv4 network.
	v4, nodes := exampleV4()
	v4.Services = []topology.UDNEnabledService{{Key: "default/kubernetes"}, {Key: "kube-system/kube-dns", ClusterIPs: []netip.Addr{addr("fd00:10:96::a")}}}
	e.apply(mustLayer2(t, v4, nodes))
	if got := e.serviceRoutes(); got != "" {
		t.Errorf("routes for a headless service and an IPv6 ClusterIP on an IPv4 network:\n%s", got)
	}
}

// A zone without a local node routes no service: the routes' next hop is a
// local node's management port (upstream: no nodeInfo, no route).
func TestServiceRoutesNeedALocalNode(t *testing.T) {
	net, nodes := exampleV4()
	net.Services = apiAndDNS()
	nodes[0].Local = false
	d := mustLayer2(t, net, nodes)
	for _, r := range d.Routers {
		for _, rt := range r.Routes {
			if rt.ExternalIDs[ovnk.ExternalIDUDNEnabledService] != "" {
				t.Errorf("%s routes %s with no local node", r.Row.Name, rt.IPPrefix)
			}
		}
	}
}

// With --adopt-legacy-layer2, the service routes upstream's services
// controller wrote on the network's transit router are taken over, not
// doubled: the listed service's row is kept and gains the piece, and the
// route of a service no longer listed goes (as upstream's repair removes it).
func TestServiceRoutesAdoptUpstreams(t *testing.T) {
	e := newEnv(t)
	net, nodes := exampleV4()
	upstreamIDs := func(key string) []string {
		return []string{`external_ids:"k8s.ovn.org/network"=test12_namespace-scoped`, `external_ids:"k8s.ovn.org/topology"=layer2`,
			`external_ids:"` + ovnk.ExternalIDUDNEnabledService + `"="` + key + `"`}
	}
	args := append([]string{"lr-add", tr, "--", "set", "Logical_Router", tr}, upstreamIDs("")[:2]...)
	for i, svc := range []struct{ ip, key string }{{"10.96.0.10", "kube-system/kube-dns"}, {"10.96.0.99", "default/gone"}} {
		id := "@r" + strconv.Itoa(i)
		args = append(args, "--", "--id="+id, "create", "Logical_Router_Static_Route", "ip_prefix="+svc.ip, "nexthop=203.203.0.2", "policy=dst-ip")
		args = append(args, upstreamIDs(svc.key)...)
		args = append(args, "--", "add", "Logical_Router", tr, "static_routes", id)
	}
	e.nbctl(args...)
	dns := e.routeUUIDs("10.96.0.10")

	net.AdoptLegacy = true
	net.Services = apiAndDNS()
	e.apply(mustLayer2(t, net, nodes))
	wantLines(t, "service routes after the takeover", e.serviceRoutes(),
		"10.96.0.1 203.203.0.2 dst-ip default/kubernetes",
		"10.96.0.10 203.203.0.2 dst-ip kube-system/kube-dns",
	)
	if got := e.routeUUIDs("10.96.0.10"); got != dns {
		t.Errorf("kube-dns's route is %s, want upstream's row %s kept", got, dns)
	}
	if got := e.nbctl("get", "Logical_Router_Static_Route", dns, "external_ids:"+`"`+ovnk.ExternalIDPiece+`"`); got != base.PieceTransitRouter {
		t.Errorf("the adopted route's piece is %s", got)
	}
}
