package webhooks_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// A network whose subnets overlap its own join subnets is refused through
// the apiserver: by the CRD's CEL rule when it sets joinSubnets, by the
// udnkit-network-config policy when the join subnet is --udn-join-subnets'
// default; a UDN and a CUDN alike.
func TestNetworkOverlappingItsJoinSubnetsIsRefused(t *testing.T) {
	env := startEnv(t)
	c := synced(env.Client)
	namespace(t, c, "join-overlap", true, nil)
	withJoin := func(s udnv1.NetworkSpec, join ...udnv1.CIDR) udnv1.NetworkSpec {
		if s.Layer2 != nil {
			s.Layer2.JoinSubnets = join
		} else {
			s.Layer3.JoinSubnets = join
		}
		return s
	}
	const defaultJoin = "(--udn-join-subnets), which the network uses as it sets no joinSubnets of that IP family; pod or join subnet overlaps with already configured internal subnets."
	const explicitJoin = "joinSubnets must not overlap subnets: pod or join subnet overlaps with already configured internal subnets."
	for _, tc := range []struct {
		name string
		spec udnv1.NetworkSpec
		want string // the sentence after the field path of a UDN ("spec."), "" when admitted
	}{
		{"Primary Layer2 inside the default join subnet", testobj.Layer2(udnv1.NetworkRolePrimary, "100.65.0.0/24"),
			"layer2.subnets[0]: 100.65.0.0/24 overlaps the user defined join subnet 100.65.0.0/16 " + defaultJoin},
		{"Primary Layer3 on the default join subnet", testobj.Layer3(udnv1.NetworkRolePrimary, "100.65.0.0/16"),
			"layer3.subnets[0].cidr: 100.65.0.0/16 overlaps the user defined join subnet 100.65.0.0/16 " + defaultJoin},
		{"Secondary Layer2 over the IPv6 default join subnet", testobj.Layer2(udnv1.NetworkRoleSecondary, "10.150.0.0/16", "fd99::/48"),
			"layer2.subnets[1]: fd99::/48 overlaps the user defined join subnet fd99::/64 " + defaultJoin},
		{"explicit join subnet inside the subnet", withJoin(testobj.Layer2(udnv1.NetworkRolePrimary, "10.182.0.0/16"), "10.182.0.0/24"),
			"layer2.joinSubnets: Invalid value: " + explicitJoin},
		{"explicit Layer3 join subnet around a subnet", withJoin(testobj.Layer3(udnv1.NetworkRolePrimary, "10.184.0.0/20"), "10.184.0.0/16"),
			"layer3.joinSubnets: Invalid value: " + explicitJoin},
		{"own join subnet moves it off the default", withJoin(testobj.Layer2(udnv1.NetworkRolePrimary, "100.65.0.0/24"), "100.66.0.0/16"), ""},
		{"beside the default join subnet", testobj.Layer2(udnv1.NetworkRolePrimary, "100.66.0.0/24"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, obj := range []client.Object{testobj.MakeUDN("join-overlap", "n").Spec(tc.spec).Obj(), testobj.MakeCUDN("join-overlap-n").SelectLabels(map[string]string{"none": "none"}).Spec(tc.spec).Obj()} {
				path := []string{"spec.", "spec.network."}[i]
				err := c.Create(ctx, obj, client.DryRunAll)
				if tc.want == "" {
					if err != nil {
						t.Fatalf("%T: refused: %v", obj, err)
					}
					continue
				}
				expectInvalid(t, err, path+tc.want)
				t.Logf("%T refused: %v", obj, err)
			}
		})
	}
}

// Every refusal is bounded: a 10,000-character default-network annotation is
// echoed as an excerpt with its length, and a request of 900 IPs gets five
// causes and a count; each refusal is smaller than its request.
func TestRefusalsAreBounded(t *testing.T) {
	env := startEnv(t)
	c := synced(env.Client)
	namespace(t, c, "bounded", true, nil)
	if err := c.Create(ctx, testobj.MakeUDN("bounded", "n").Spec(predefinedNetwork()).Obj()); err != nil {
		t.Fatal(err)
	}
	const path = "metadata.annotations[v1.multus-cni.io/default-network]"
	ips := make([]string, 900)
	for i := range ips {
		ips[i] = fmt.Sprintf("%q", fmt.Sprintf("192.168.100.%d", 10+i%150))
	}
	const start = `{"name": "default", "namespace": "ovn-kubernetes", "ips": [`
	long := start + strings.Repeat(" ", 10000-len(start)-1) + "]"
	for _, tc := range []struct {
		name, value string
		want        []string
	}{
		{"a 10,000-character value", long, []string{path + `: Invalid value: "{\"name\": \"default\", \"namespace\": \"ovn-kubernetes\", \"ips\": [     … (10000 characters)"`}},
		{"900 IPs", `{"name": "default", "namespace": "ovn-kubernetes", "ips": [` + strings.Join(ips, ", ") + `]}`,
			[]string{path + ".ips[5]", path + ".ips[*]: Invalid value: and 894 more errors like these."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testobj.MakePod("bounded", "p").Annotations(nse(tc.value)).Obj()
			request, _ := json.Marshal(p)
			err := c.Create(ctx, p)
			expectInvalid(t, err, tc.want...)
			var se *apierrors.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("%T is no StatusError", err)
			}
			if n := len(se.ErrStatus.Details.Causes); n > 7 {
				t.Errorf("%d causes", n)
			}
			refusal, _ := json.Marshal(se.ErrStatus)
			t.Logf("request %d bytes, refusal %d bytes: %s", len(request), len(refusal), err)
			if len(refusal) >= len(request) || len(refusal) > 4096 {
				t.Errorf("the refusal (%d bytes) is not bounded (the request: %d bytes)", len(refusal), len(request))
			}
		})
	}
}

// A pod that cannot get addresses is refused at admission: a request of one
// IP family on a dual-stack network, and an IP or MAC another pod of the
// network holds (as its k8s.ovn.org/pod-networks shows in the webhook's
// cache), naming that pod.
func TestPodThatCannotGetAddressesIsRefused(t *testing.T) {
	env := startEnv(t)
	c := synced(env.Client)
	dual := testobj.Layer2(udnv1.NetworkRolePrimary, "10.190.0.0/24", "fd00:190::/64")
	for _, ns := range []string{"addr-a", "addr-other"} {
		namespace(t, c, ns, true, nil)
		if err := c.Create(ctx, testobj.MakeUDN(ns, "net").Spec(dual).Obj()); err != nil {
			t.Fatal(err)
		}
	}
	const path = "metadata.annotations[v1.multus-cni.io/default-network]"
	element := func(mac string, ips ...string) map[string]string {
		b, _ := json.Marshal(map[string]any{"name": "default", "namespace": "ovn-kubernetes", "ips": ips, "mac": mac})
		return nse(string(b))
	}
	t.Run("one family on a dual-stack network", func(t *testing.T) {
		p := testobj.MakePod("addr-a", "v4-only").Annotations(element("", "10.190.0.10")).Obj()
		expectInvalid(t, c.Create(ctx, p), path+`.ips: Invalid value: ["10.190.0.10"]: must hold one address for each IP family of the network, IPv4 and IPv6 (subnets [10.190.0.0/24 fd00:190::/64]); it has no IPv6 address.`)
		expectAbsent(t, c, p)
	})
	// The holder's addresses, as the address reconciler writes them.
	holder := testobj.MakePod("addr-a", "holder").Annotations(element("", "10.190.0.20", "fd00:190::20")).Obj()
	pn, err := podannotation.PodNetworks{"addr-a/net": {IPAddresses: []string{"10.190.0.20/24", "fd00:190::20/64"}, MACAddress: "02:00:00:00:01:20", Role: podannotation.RolePrimary}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	holder.Annotations[ovnk.AnnotationPodNetworks] = pn
	if err := c.Create(ctx, holder); err != nil {
		t.Fatal(err)
	}
	taken := testobj.MakePod("addr-a", "taken-ip").Annotations(element("", "10.190.0.20", "fd00:190::21")).Obj()
	if err := createRefused(t, c, taken); err == nil {
		t.Fatal("an IP another pod holds was admitted")
	} else {
		expectInvalid(t, err, path+`.ips[0]: Invalid value: "10.190.0.20": IP address 10.190.0.20 is already in use by pod addr-a/holder of this network; request another, or delete that pod first.`)
	}
	for _, tc := range []struct {
		name string
		pod  map[string]string
		want string
	}{
		{"IPv6 held", element("", "10.190.0.21", "fd00:190::20"), path + `.ips[1]: Invalid value: "fd00:190::20": IP address fd00:190::20 is already in use by pod addr-a/holder of this network`},
		{"MAC held", element("02:00:00:00:01:20", "10.190.0.22", "fd00:190::22"), path + `.mac: Invalid value: "02:00:00:00:01:20": MAC address 02:00:00:00:01:20 is already in use by pod addr-a/holder of this network`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testobj.MakePod("addr-a", "p").Annotations(tc.pod).Obj()
			expectInvalid(t, c.Create(ctx, p), tc.want)
			expectAbsent(t, c, p)
		})
	}
	t.Run("the same addresses on another network", func(t *testing.T) {
		if err := c.Create(ctx, testobj.MakePod("addr-other", "same").Annotations(element("02:00:00:00:01:20", "10.190.0.20", "fd00:190::20")).Obj()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("free addresses of both families", func(t *testing.T) {
		if err := c.Create(ctx, testobj.MakePod("addr-a", "free").Annotations(element("02:00:00:00:01:30", "10.190.0.30", "fd00:190::30")).Obj()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a finished holder holds nothing", func(t *testing.T) {
		holder.Status.Phase = "Succeeded"
		if err := env.Client.Status().Update(ctx, holder); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "a pod asking for the finished holder's addresses is admitted", func() error {
			return c.Create(ctx, testobj.MakePod("addr-a", "after").Annotations(element("", "10.190.0.20", "fd00:190::20")).Obj(), client.DryRunAll)
		})
	})
}
