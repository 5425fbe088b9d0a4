package endpointslicemirror_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// TestLayer2UDNDualStack: a dual-stack Service with pods on two nodes in a
// Primary Layer2 UDN's namespace gets one mirror per default slice (IPv4,
// IPv6) with the pods' UDN addresses; scaling up, a pod whose address is
// not written yet, scaling down, a default slice's deletion and the UDN's
// deletion are followed.
func TestLayer2UDNDualStack(t *testing.T) {
	requireEnv(t)
	const ns, network = "blue-tenant", "blue-tenant_blue"
	namespace(t, ns, true)
	must(t, admin.Create(ctx, testobj.MakeUDN(ns, "blue").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16", "fd10:100::/64")).Obj()))
	key := ns + "/blue"
	web0 := &backend{name: "web-0", node: "node-a", defaultIPs: []string{"10.244.1.5", "fd00:10:244:1::5"}}
	web1 := &backend{name: "web-1", node: "node-b", defaultIPs: []string{"10.244.2.6", "fd00:10:244:2::6"}}
	web2 := &backend{name: "web-2", node: "node-b", defaultIPs: []string{"10.244.2.7", "fd00:10:244:2::7"}}
	for _, b := range []*backend{web0, web1} {
		createPod(t, ns, b, "web")
	}
	annotatePod(t, web0, key, layer2Entry(t, "10.100.0.5/16", "fd10:100::5/64"))
	annotatePod(t, web1, key, layer2Entry(t, "10.100.0.6/16", "fd10:100::6/64"))
	svc := service(t, ns, "web")
	v4 := defaultSlice(svc, discoveryv1.AddressTypeIPv4, web0, web1)
	v6 := defaultSlice(svc, discoveryv1.AddressTypeIPv6, web0, web1)
	must(t, admin.Create(ctx, v4))
	must(t, admin.Create(ctx, v6))
	m4 := waitMirror(t, v4, network, map[string]string{"web-0": "10.100.0.5", "web-1": "10.100.0.6"})
	waitMirror(t, v6, network, map[string]string{"web-0": "fd10:100::5", "web-1": "fd10:100::6"})
	if m4.Name == v4.Name || m4.Labels[discoveryv1.LabelServiceName] != "" {
		t.Errorf("mirror %s carries %s=%q or the source's name", m4.Name, discoveryv1.LabelServiceName, m4.Labels[discoveryv1.LabelServiceName])
	}

	// Scale up: web-2 is in the default slices before it has its UDN
	// address; it is left out until it has.
	createPod(t, ns, web2, "web")
	setEndpoints(t, v4, web0, web1, web2)
	setEndpoints(t, v6, web0, web1, web2)
	waitMirror(t, v4, network, map[string]string{"web-0": "10.100.0.5", "web-1": "10.100.0.6"})
	annotatePod(t, web2, key, layer2Entry(t, "10.100.0.7/16", "fd10:100::7/64"))
	waitMirror(t, v4, network, map[string]string{"web-0": "10.100.0.5", "web-1": "10.100.0.6", "web-2": "10.100.0.7"})
	waitMirror(t, v6, network, map[string]string{"web-0": "fd10:100::5", "web-1": "fd10:100::6", "web-2": "fd10:100::7"})

	// Scale down.
	setEndpoints(t, v4, web1, web2)
	setEndpoints(t, v6, web1, web2)
	m4after := waitMirror(t, v4, network, map[string]string{"web-1": "10.100.0.6", "web-2": "10.100.0.7"})
	waitMirror(t, v6, network, map[string]string{"web-1": "fd10:100::6", "web-2": "fd10:100::7"})
	if m4after.UID != m4.UID {
		t.Errorf("the IPv4 mirror was replaced (%s → %s), not updated", m4.Name, m4after.Name)
	}

	// The default slice's deletion deletes its mirror only.
	must(t, admin.Delete(ctx, v6))
	waitNoMirror(t, ns, v6.Name)
	waitMirror(t, v4, network, map[string]string{"web-1": "10.100.0.6", "web-2": "10.100.0.7"})

	// The namespace loses its Primary UDN: its mirrors go.
	must(t, admin.Delete(ctx, testobj.MakeUDN(ns, "blue").Obj()))
	waitNoMirror(t, ns, v4.Name)
}

// TestLayer3UDNDualStack: a dual-stack Service in a Primary Layer3 UDN's
// namespace, with pods on two nodes and a host-network pod: each pod's
// addresses in its node's host subnets, and the host-network pod's own
// addresses (upstream's getPodIP: a host-network pod has no address on the
// network).
func TestLayer3UDNDualStack(t *testing.T) {
	requireEnv(t)
	const ns, network = "green-tenant", "green-tenant_green"
	namespace(t, ns, true)
	spec := testobj.Layer3(udnv1.NetworkRolePrimary, "10.200.0.0/16")
	spec.Layer3.Subnets = append(spec.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: "fd20::/48", HostSubnet: 64})
	must(t, admin.Create(ctx, testobj.MakeUDN(ns, "green").Spec(spec).Obj()))
	key := ns + "/green"
	api0 := &backend{name: "api-0", node: "node-a", defaultIPs: []string{"10.244.1.8", "fd00:10:244:1::8"}}
	api1 := &backend{name: "api-1", node: "node-b", defaultIPs: []string{"10.244.2.9", "fd00:10:244:2::9"}}
	host := &backend{name: "api-host", node: "node-c", defaultIPs: []string{"172.18.0.4", "fc00:f853:ccd:e793::4"}, hostNetwork: true}
	for _, b := range []*backend{api0, api1, host} {
		createPod(t, ns, b, "api")
	}
	annotatePod(t, api0, key, layer3Entry("10.200.1.4/24", "fd20:0:0:1::4/64"))
	annotatePod(t, api1, key, layer3Entry("10.200.2.4/24", "fd20:0:0:2::4/64"))
	svc := service(t, ns, "api")
	v4 := defaultSlice(svc, discoveryv1.AddressTypeIPv4, api0, api1, host)
	v6 := defaultSlice(svc, discoveryv1.AddressTypeIPv6, api0, api1, host)
	must(t, admin.Create(ctx, v4))
	must(t, admin.Create(ctx, v6))
	waitMirror(t, v4, network, map[string]string{"api-0": "10.200.1.4", "api-1": "10.200.2.4", "api-host": "172.18.0.4"})
	waitMirror(t, v6, network, map[string]string{"api-0": "fd20:0:0:1::4", "api-1": "fd20:0:0:2::4", "api-host": "fc00:f853:ccd:e793::4"})
}

// TestCUDN: a namespace a Primary CUDN selects gets mirrors on the CUDN's
// network (cluster_udn_<name>, the pods' entry under the CUDN's NAD in
// their namespace), and loses them when the CUDN stops selecting it.
func TestCUDN(t *testing.T) {
	requireEnv(t)
	const ns, network = "red-tenant", "cluster_udn_red"
	must(t, admin.Create(ctx, testobj.MakeNamespace(ns).Primary().Labels(map[string]string{"tenant": "red"}).Obj()))
	must(t, admin.Create(ctx, testobj.MakeCUDN("red").SelectLabels(map[string]string{"tenant": "red"}).
		Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.210.0.0/16")).Obj()))
	b := &backend{name: "r-0", node: "node-a", defaultIPs: []string{"10.244.1.70"}}
	createPod(t, ns, b, "r")
	annotatePod(t, b, ns+"/red", layer2Entry(t, "10.210.0.70/16"))
	src := defaultSlice(service(t, ns, "r"), discoveryv1.AddressTypeIPv4, b)
	must(t, admin.Create(ctx, src))
	waitMirror(t, src, network, map[string]string{"r-0": "10.210.0.70"})

	var n corev1.Namespace
	must(t, admin.Get(ctx, client.ObjectKey{Name: ns}, &n))
	delete(n.Labels, "tenant")
	must(t, admin.Update(ctx, &n))
	waitNoMirror(t, ns, src.Name)
}

// TestNoPrimaryUDN: a Service in a namespace without a Primary UDN (no
// label; or the label and only a Secondary UDN) gets no mirror.
func TestNoPrimaryUDN(t *testing.T) {
	requireEnv(t)
	for _, c := range []struct {
		ns      string
		labeled bool
	}{{"plain", false}, {"secondary-only", true}} {
		namespace(t, c.ns, c.labeled)
		must(t, admin.Create(ctx, testobj.MakeUDN(c.ns, "side").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.120.0.0/16")).Obj()))
		b := &backend{name: "db-0", node: "node-a", defaultIPs: []string{"10.244.1.20"}}
		createPod(t, c.ns, b, "db")
		side := layer3Entry("10.120.0.20/16")
		side.Role = podannotation.RoleSecondary
		annotatePod(t, b, c.ns+"/side", side)
		must(t, admin.Create(ctx, defaultSlice(service(t, c.ns, "db"), discoveryv1.AddressTypeIPv4, b)))
	}
	// A mirror written after these slices is the barrier: with one worker
	// and the namespaces served in turn, theirs would be written by then.
	const ns = "barrier"
	svc, b := oneBackend(t, ns, "10.130.0.0/16", "b", "10.244.1.30", "10.130.0.30")
	src := defaultSlice(svc, discoveryv1.AddressTypeIPv4, b)
	must(t, admin.Create(ctx, src))
	waitMirror(t, src, "barrier_net", map[string]string{"b-0": "10.130.0.30"})
	for _, n := range []string{"plain", "secondary-only"} {
		var list discoveryv1.EndpointSliceList
		must(t, admin.List(ctx, &list, client.InNamespace(n), client.MatchingLabels{discoveryv1.LabelManagedBy: ovnk.EndpointSliceMirrorControllerName}))
		if len(list.Items) != 0 {
			t.Errorf("namespace %s without a Primary UDN has mirrors %v", n, names(list.Items))
		}
	}
}

// TestStaleAndDuplicateMirrors: a mirror whose source is gone is deleted;
// two mirrors of one slice are both deleted and one written again (as
// upstream's syncDefaultEndpointSlice does).
func TestStaleAndDuplicateMirrors(t *testing.T) {
	requireEnv(t)
	const ns, network = "stale", "stale_net"
	svc, b := oneBackend(t, ns, "10.140.0.0/16", "s", "10.244.1.40", "10.140.0.40")
	forged := func(source string) *discoveryv1.EndpointSlice {
		m := defaultSlice(svc, discoveryv1.AddressTypeIPv4, b)
		m.Labels = map[string]string{discoveryv1.LabelManagedBy: ovnk.EndpointSliceMirrorControllerName, ovnk.LabelUserDefinedServiceName: "s"}
		m.Annotations = map[string]string{ovnk.AnnotationSourceEndpointSlice: source, ovnk.AnnotationEndpointSliceNetwork: network}
		return m
	}
	must(t, udnkit.Create(ctx, forged("gone")))
	waitNoMirror(t, ns, "gone")

	// Two mirrors for a slice that does not exist yet, then the slice: as
	// upstream, both are deleted and one written again. (The controller may
	// take one of them for stale before the slice exists and keep the other
	// as the mirror, updated: either way one mirror with the slice's
	// endpoints is left.)
	src := defaultSlice(svc, discoveryv1.AddressTypeIPv4, b)
	src.GenerateName, src.Name = "", "s-abcde"
	must(t, udnkit.Create(ctx, forged(src.Name)))
	must(t, udnkit.Create(ctx, forged(src.Name)))
	must(t, admin.Create(ctx, src))
	testenv.Eventually(t, "one mirror of "+src.Name+" with its endpoint", func() error {
		var list discoveryv1.EndpointSliceList
		if err := admin.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelManagedBy: ovnk.EndpointSliceMirrorControllerName}); err != nil {
			return err
		}
		var addrs []string
		n := 0
		for _, m := range list.Items {
			if m.Annotations[ovnk.AnnotationSourceEndpointSlice] != src.Name {
				continue
			}
			n++
			for _, ep := range m.Endpoints {
				addrs = append(addrs, ep.Addresses...)
			}
		}
		if n != 1 || len(addrs) != 1 || addrs[0] != "10.140.0.40" {
			return fmt.Errorf("%d mirrors with addresses %v, want one with [10.140.0.40]", n, addrs)
		}
		return nil
	})
}
