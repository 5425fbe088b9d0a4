package dataplane

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
)

func TestDescribe(t *testing.T) {
	net, nodes := exampleV4()
	d, err := topology.Layer2Topology(net, nodes)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	d.Describe(&out)
	text := out.String()
	for _, want := range []string{
		"# network test12_namespace-scoped, topology layer2",
		"switch " + sw,
		"router " + tr,
		"requested-tnl-key=16715780",
		"    port trtor-" + gr1 + " mac=",
		"peer=rtotr-" + gr1,
		"router " + gr1,
		"    copp ovnkube-default (the zone's, existing or created when missing) meters{arp=arp-rate-limiter,",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("plan lacks %q:\n%s", want, text)
		}
	}
	local := 0
	for _, n := range nodes {
		if n.Local {
			local++
		}
	}
	// Gateway routers are programmed for this zone's nodes only; the others
	// are reached through remote transit-router ports.
	if n := strings.Count(text, "\nrouter GR_"); n != local {
		t.Errorf("%d gateway routers described, want %d (the local nodes)", n, local)
	}
	if n := strings.Count(text, "port trtor-"); n != len(nodes) {
		t.Errorf("%d transit-router ports described, want one per node (%d)", n, len(nodes))
	}
	d, err = topology.Layer3SubnetPolicies("ns_green", []netip.Prefix{pfx("10.200.0.0/16"), pfx("10.201.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	d.Describe(&out)
	if want := "router ns_green_ovn_cluster_router (existing, or created when missing)"; !strings.Contains(out.String(), want) {
		t.Errorf("Layer3 plan lacks %q:\n%s", want, out.String())
	}
}

// udnctl plan shows every kind of row a piece may hold.
func TestDescribeEveryKind(t *testing.T) {
	tcp := nbdb.LoadBalancerProtocolTCP
	v4 := nbdb.DHCPOptions{Cidr: "10.0.0.0/24", ExternalIDs: map[string]string{ovnk.ExternalIDVM: "ns/vm"}}
	d := &rows.Desired{Owner: rows.Owner{Network: "n", Topology: "layer2", Piece: "p"},
		Routers: []rows.Router{{Row: nbdb.LogicalRouter{Name: "GR_n"}, LoadBalancerGroups: []string{"n_lbg"},
			Ports: []nbdb.LogicalRouterPort{{Name: "rtoe-GR_n"}}}},
		Switches: []rows.Switch{{Row: nbdb.LogicalSwitch{Name: "n_s"}, Ports: []nbdb.LogicalSwitchPort{{Name: "n_vm"}},
			ACLs:     []nbdb.ACL{{Direction: nbdb.ACLDirectionToLport, Priority: 1001, Match: "ip4", Action: nbdb.ACLActionAllowRelated}},
			QoS:      []nbdb.QoS{{Direction: nbdb.QoSDirectionFromLport, Priority: 100, Match: "ip4", Action: map[string]int{"dscp": 1}}},
			PortDHCP: map[string]rows.DHCPRef{"n_vm": {V4: rows.DHCPKey(v4)}}}},
		DHCPOptions: []nbdb.DHCPOptions{v4},
		PortGroups: []rows.PortGroup{{Row: nbdb.PortGroup{Name: "n_pg"}, Shared: true, Ports: []string{"n_vm"},
			ACLs: []nbdb.ACL{{Direction: nbdb.ACLDirectionFromLport, Priority: 1000, Match: "inport == @n_pg", Action: nbdb.ACLActionDrop}}}},
		LoadBalancers:      []nbdb.LoadBalancer{{Name: "n_lb", Protocol: &tcp, Vips: map[string]string{"10.96.0.1:80": "10.0.0.5:8080"}}},
		LoadBalancerGroups: []rows.LoadBalancerGroup{{Row: nbdb.LoadBalancerGroup{Name: "n_lbg"}, LoadBalancers: []string{"n_lb"}}},
		StaticMACBindings:  []nbdb.StaticMACBinding{{LogicalPort: "rtoe-GR_n", IP: "169.254.0.4", MAC: "0a:58:a9:fe:00:04", OverrideDynamicMAC: true}},
		Meters: []rows.ZoneMeter{{Row: nbdb.Meter{Name: "acl-logging", Unit: nbdb.MeterUnitPktps},
			Band: nbdb.MeterBand{Action: nbdb.MeterBandActionDrop, Rate: 20}}},
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	d.Describe(&out)
	for _, want := range []string{
		"router GR_n\n    load_balancer_group [\"n_lbg\"]\n",
		"    port n_vm dhcpv4_options=\"ns/vm|10.0.0.0/24\" dhcpv6_options=\"\"\n",
		"    acl to-lport 1001 \"ip4\" allow-related\n",
		"    qos from-lport 100 \"ip4\" action=map[dscp:1] bandwidth=map[]\n",
		"port_group n_pg (existing, or created when missing) ports=[\"n_vm\"]\n    acl from-lport 1000 \"inport == @n_pg\" drop\n",
		"load_balancer n_lb tcp vips{10.96.0.1:80=10.0.0.5:8080}\n",
		"load_balancer_group n_lbg (the zone's, existing or created when missing) load_balancers=[\"n_lb\"]\n",
		"static_mac_binding rtoe-GR_n 169.254.0.4 mac=0a:58:a9:fe:00:04 override_dynamic_mac=true\n",
		"meter acl-logging (the zone's, existing or created when missing) unit=pktps fair=false\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, out.String())
		}
	}
}
