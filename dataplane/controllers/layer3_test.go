package controllers

import (
	"slices"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers"
)

// A primary Layer3 UDN, through the NAD the udn reconciler writes, gets the
// OKEP-5377 pair policies on a cluster router udnkit creates; appending a
// subnet adds the pairs; a foreign cluster router of a second network keeps
// its own rows; deleting the UDN removes what udnkit wrote and nothing else.
func TestLayer3PoliciesFromAPIState(t *testing.T) {
	s := newStack(t)
	cfg := reconcilers.DefaultConfig()
	cfg.Controllers = []string{reconcilers.ControllerUDN}
	if err := reconcilers.SetupWithManager(s.mgr, cfg); err != nil {
		t.Fatal(err)
	}
	o := s.opts()
	o.Policy.EgressIP = true // the OKEP-5377 policies are EgressIP's no-reroute policies
	if _, err := Setup(s.ctx, s.mgr, o); err != nil {
		t.Fatal(err)
	}
	// The second network's topology belongs to OVN-Kubernetes: its cluster
	// router and its join switch, which its ovnkube-controller creates
	// together (layer3_user_defined_network_controller.go: init).
	const foreign = "tenant.red_red_ovn_cluster_router"
	s.nbctl("lr-add", foreign)
	s.nbctl("lr-policy-add", foreign, "1004", "ip4.dst == 172.18.0.3", "reroute", "10.210.0.2")
	s.nbctl("ls-add", "tenant.red_red_join", "--", "set", "Logical_Switch", "tenant.red_red_join", "external_ids:k8s.ovn.org/network=tenant-red_red")
	s.start()

	label := map[string]string{ovnk.LabelPrimaryUserDefinedNetwork: ""}
	green, red := namespace("tenant-green"), namespace("tenant-red")
	green.Labels, red.Labels = label, label
	udn := func(ns, name string, cidrs ...string) *udnv1.UserDefinedNetwork {
		u := &udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: udnv1.UserDefinedNetworkSpec{Topology: udnv1.NetworkTopologyLayer3,
				Layer3: &udnv1.Layer3Config{Role: udnv1.NetworkRolePrimary}}}
		for _, c := range cidrs {
			u.Spec.Layer3.Subnets = append(u.Spec.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: udnv1.CIDR(c), HostSubnet: 24})
		}
		return u
	}
	g := udn("tenant-green", "green", "10.200.0.0/16")
	s.create(green, red, g, udn("tenant-red", "red", "10.210.0.0/16"))

	const router = "tenant.green_green_ovn_cluster_router"
	policies := func(r string) string { return normalized(s.nbctl("lr-policy-list", r)) }
	s.eventually("green's policy on a router udnkit created", func() bool {
		return strings.Contains(s.nbctl("--bare", "--columns=name", "list", "Logical_Router"), router) &&
			policies(router) == "Routing Policies\n102 ip4.src == 10.200.0.0/16 && ip4.dst == 10.200.0.0/16 allow\n102 pkt.mark == 42 allow"
	})
	if got := s.nbctl("--bare", "--columns=external_ids", "find", "Logical_Router", "name="+router); !strings.Contains(got, "k8s.ovn.org/network=tenant-green_green") ||
		!strings.Contains(got, "k8s.ovn.org/udnkit-piece=subnet-policies") {
		t.Errorf("created router's external_ids = %q, want it owned by network tenant-green_green", got)
	}
	switches := func() string {
		names := strings.Fields(s.nbctl("--bare", "--columns=name", "list", "Logical_Switch"))
		slices.Sort(names)
		return strings.Join(names, " ")
	}
	s.eventually("green's join and transit switches; none of red's beside OVN-Kubernetes' join switch", func() bool {
		return switches() == "tenant.green_green_join tenant.green_green_transit_switch tenant.red_red_join"
	})
	if ports := s.nbctl("--bare", "--columns=ports", "find", "Logical_Router", "name="+foreign); ports != "" {
		t.Errorf("OVN-Kubernetes' router of red got ports %q: the topology must stand aside", ports)
	}
	s.eventually("red's policy beside the foreign router's own", func() bool {
		return policies(foreign) == "Routing Policies\n"+
			"1004 ip4.dst == 172.18.0.3 reroute 10.210.0.2\n"+
			"102 ip4.src == 10.210.0.0/16 && ip4.dst == 10.210.0.0/16 allow\n"+
			"102 pkt.mark == 42 allow"
	})

	// Append a subnet (OKEP-5377): one policy over the set of both subnets.
	// The UDN controller writes green's status meanwhile: retry on conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(g), g); err != nil {
			return err
		}
		g.Spec.Layer3.Subnets = append(g.Spec.Layer3.Subnets, udnv1.Layer3Subnet{CIDR: "10.201.0.0/16", HostSubnet: 24})
		return s.c.Update(s.ctx, g)
	}); err != nil {
		t.Fatal(err)
	}
	set := ovnk.NamesFor("tenant-green_green").SubnetsAddressSet("ip4")
	want := "Routing Policies\n102 ip4.src == $" + set + " && ip4.dst == $" + set + " allow\n102 pkt.mark == 42 allow"
	s.eventually("one policy over the address set of both subnets", func() bool {
		return policies(router) == want &&
			s.nbctl("--bare", "--columns=addresses", "find", "Address_Set", "name="+set) == "10.200.0.0/16 10.201.0.0/16"
	})

	// Deleting the UDNs: green's router goes (udnkit owned it); red's
	// foreign router stays with its own policy only.
	for _, u := range []*udnv1.UserDefinedNetwork{g, udn("tenant-red", "red")} {
		if err := s.c.Delete(s.ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	s.eventually("green's router, address set and red's policy removed", func() bool {
		return s.nbctl("--bare", "--columns=name", "list", "Logical_Router") == foreign &&
			s.nbctl("--bare", "--columns=name", "list", "Address_Set") == "" &&
			policies(foreign) == "Routing Policies\n1004 ip4.dst == 172.18.0.3 reroute 10.210.0.2" &&
			switches() == "tenant.red_red_join"
	})

	for _, c := range []struct{ config, want string }{
		{`{"name":"n","topology":"layer3","role":"primary","subnets":"10.1.0.0/16/x"}`, `spec.config subnets[0] "10.1.0.0/16/x": must be CIDR or CIDR/hostSubnet`},
		{`{"name":"n","topology":"layer3","role":"primary"}`, "a Layer3 network needs a name and subnets"},
		{`{"name":`, "NAD ns/bad spec.config"},
	} {
		_, _, _, err := zone.Layer3NetworkFromNAD(&nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bad"},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: c.config}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Layer3NetworkFromNAD(%s): err = %v, want %q", c.config, err, c.want)
		}
	}
	if _, _, ok, err := zone.Layer3NetworkFromNAD(&nadv1.NetworkAttachmentDefinition{Spec: nadv1.NetworkAttachmentDefinitionSpec{
		Config: `{"name":"s","topology":"layer3","role":"secondary","subnets":"10.1.0.0/16/24"}`}}); ok || err != nil {
		t.Errorf("secondary Layer3 network: ok = %v, err = %v; want skipped", ok, err)
	}
}
