package datapath_test

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/envtest/datapath/netns"
)

// hairpinSNAT are the addresses a load balancer SNATs a pod's connection
// to when it picks the pod itself as backend (options:hairpin_snat_ip):
// upstream's V4OVNServiceHairpinMasqueradeIP and
// V6OVNServiceHairpinMasqueradeIP, the masquerade subnets' fifth address
// (go-controller/pkg/config/utils.go AllocateV4MasqueradeIPs; 169.254.0.0/17
// and fd69::/112 as the suite's cluster and upstream's live run have
// them), which go-controller/pkg/ovn/controller/services/loadbalancer.go
// buildLB writes on every network's load balancers.
var hairpinSNAT = map[bool]netip.Addr{false: netip.MustParseAddr("169.254.0.5"), true: netip.MustParseAddr("fd69::5")}

// seenFrom fails the test unless each of 8 connections from from to dst
// on svcPort over dial is answered, by a ServePeer backend, with want:
// the source address the backend saw.
func seenFrom(t *testing.T, from *pod, dial string, dst, want netip.Addr) {
	t.Helper()
	seen := askNames(t, from, dial, dst, 8)
	if seen[want.String()] != 8 {
		t.Fatalf("%s over %s to %s: the backend saw the sources %v, want only %s", from.datapath.Label, dial, dst, seen, want)
	}
}

// TestServiceHairpin connects a pod to a ClusterIP Service whose only
// backend is the pod itself, through the load balancers udnkit's services
// controller writes in three zones, on a dual-stack Primary Layer2 UDN and
// on a Primary Layer3 UDN (IPv4, udnkit's own Layer3 topology): the
// connection leaves the pod, is load-balanced back to it and answered (TCP
// and UDP), the pod seeing it come from the hairpin SNAT address of its
// family, while a pod on another node is seen from its own address.
// Mutation: hairpin_snat_ip removed from the Service's TCP load balancer
// in the pod's zone, OVN SNATs the pod's TCP hairpin connections to the
// ClusterIP instead (UDP, on its own load balancer, keeps the hairpin
// address); the reconciler's next pass writes it back.
func TestServiceHairpin(t *testing.T) {
	c := needCluster(t)
	a, b := c.Node("node-a"), c.Node("node-b")
	t.Run("Layer2", func(t *testing.T) {
		net := newNetwork(t, "tenant-hairpin", "hairpin", 19, "10.180.0.0/16", "fd00:180::/64")
		program(t, c, net)
		web := &pod{net: net, name: "web", node: a, index: 5, tunnelID: 10}
		client := &pod{net: net, name: "client", node: b, index: 6, tunnelID: 11}
		podPorts(t, c, web, client)
		startOwnPods(t, c, web, client)
		hairpin(t, c, &service{net: net, name: "web", v4: netip.MustParseAddr("10.96.180.10"), v6: netip.MustParseAddr("fd00:10:96::180:10"),
			backends: []*pod{web}}, client)
	})
	t.Run("Layer3", func(t *testing.T) {
		net := newLayer3Network(t, "tenant-hairpin3", "hairpin3", 20, "10.181.0.0/16")
		web, client := &pod{net: net, name: "web", node: a, index: 5}, &pod{net: net, name: "client", node: b, index: 5}
		layer3Pods([]l3node{{Node: a, ID: 2, Host: netip.MustParsePrefix("10.181.2.0/24")},
			{Node: b, ID: 3, Host: netip.MustParsePrefix("10.181.3.0/24")}})(t, c, []*pod{web, client})
		hairpin(t, c, &service{net: net, name: "web", v4: netip.MustParseAddr("10.96.181.10"), backends: []*pod{web}}, client)
		t.Run("removing the pods from the API state deletes their ports in every zone", func(t *testing.T) {
			removePods(t, c, web, client)
		})
	})
}

// hairpin runs TestServiceHairpin's checks on svc, whose one backend is
// on node-a, and client, a pod of its network on another node.
func hairpin(t *testing.T, c *datapath.Cluster, svc *service, client *pod) {
	t.Helper()
	web, net := svc.backends[0], svc.net
	serveOnTarget(t, (*netns.Endpoint).ServePeer, web)
	programServices(t, c, serviceObjects(true, svc), net)
	// Afterwards the network has no Services: their load balancers go.
	t.Cleanup(func() { programServices(t, c, nil, net) })

	t.Run("a pod reaches itself through its Service, seen from the hairpin SNAT address (TCP and UDP)", func(t *testing.T) {
		for _, v6 := range svc.families() {
			for _, p := range protocols {
				seenFrom(t, web, p.dial, svc.clusterIP(v6), hairpinSNAT[v6])
			}
		}
	})
	t.Run("a pod on another node reaches the Service from its own address", func(t *testing.T) {
		for _, v6 := range svc.families() {
			for _, p := range protocols {
				seenFrom(t, client, p.dial, svc.clusterIP(v6), client.ip(v6))
			}
		}
	})
	t.Run("mutation: without hairpin_snat_ip the pod's hairpin connections come from the ClusterIP", func(t *testing.T) {
		web.node.NB().Must(t, "remove", "Load_Balancer", svc.lb(corev1.ProtocolTCP), "options", "hairpin_snat_ip")
		settle(t, c)
		for _, v6 := range svc.families() {
			seenFrom(t, web, "tcp", svc.clusterIP(v6), svc.clusterIP(v6))
			seenFrom(t, web, "udp", svc.clusterIP(v6), hairpinSNAT[v6])
		}
		programServices(t, c, serviceObjects(true, svc), net)
		for _, v6 := range svc.families() {
			seenFrom(t, web, "tcp", svc.clusterIP(v6), hairpinSNAT[v6])
		}
	})
}
