package policy

import (
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/ovnk"
)

// members are isolation members with these ports and no open ports.
func members(ports ...string) []IsolationMember {
	out := make([]IsolationMember, len(ports))
	for i, p := range ports {
		out[i] = IsolationMember{Port: p, Pod: strings.Replace(p, "_", "/", 1)}
	}
	return out
}

// A member with open ports adds upstream's two open-port ACLs to the
// isolation port group, with the IDs, tier, priority, actions, directions
// and matches of setUDNPodOpenPortsOps and getPortsMatches
// (pkg/ovn/udn_isolation.go): ports in the annotation's order, icmp as
// "icmp"; a member without open ports adds none.
func TestUDNIsolationOpenPorts(t *testing.T) {
	port := func(i int) *int { return &i }
	ms := members("tenant-blue_closed")
	ms = append(ms, IsolationMember{Port: "tenant-blue_web", Pod: "tenant-blue/web",
		OpenPorts: []ovnk.OpenPort{{Protocol: "tcp", Port: port(80)}, {Protocol: "icmp"}, {Protocol: "udp", Port: port(53)}, {Protocol: "sctp", Port: port(9)}}})
	d, err := UDNIsolation([]Node{refDefaultNode}, ms)
	if err != nil {
		t.Fatal(err)
	}
	pg := d.PortGroups[0]
	if len(pg.ACLs) != 7 {
		t.Fatalf("%d ACLs, want the 5 isolation ACLs and web's 2", len(pg.ACLs))
	}
	want := []struct {
		id, dir, match string
		action         nbdb.ACLAction
		direction      nbdb.ACLDirection
	}{
		{"default-network-controller:UDNIsolation:OpenPort-tenant-blue/web:Ingress", "Ingress",
			`outport == "tenant-blue_web" && (arp || nd || (tcp.dst == 80 || icmp || udp.dst == 53 || sctp.dst == 9))`,
			nbdb.ACLActionAllowRelated, nbdb.ACLDirectionToLport},
		{"default-network-controller:UDNIsolation:OpenPort-tenant-blue/web:Egress", "Egress",
			`inport == "tenant-blue_web" && (arp || nd)`, nbdb.ACLActionAllow, nbdb.ACLDirectionFromLport},
	}
	for i, w := range want {
		a := pg.ACLs[5+i]
		if a.ExternalIDs[ovnk.ExternalIDObjectID] != w.id || a.ExternalIDs[ovnk.ExternalIDPolicyDirection] != w.dir ||
			a.ExternalIDs[ovnk.ExternalIDObjectName] != "OpenPort-tenant-blue/web" || a.ExternalIDs[ovnk.ExternalIDOwnerType] != "UDNIsolation" {
			t.Errorf("ACL %d external_ids %v, want id %s", i, a.ExternalIDs, w.id)
		}
		if a.Match != w.match || a.Action != w.action || a.Direction != w.direction || a.Priority != 1001 || a.Tier != 0 ||
			a.Name != nil || len(a.Options) != 0 || a.Meter == nil || *a.Meter != ACLLoggingMeterName {
			t.Errorf("ACL %d: %+v\nwant match %s action %s direction %s priority 1001 tier 0, no name or options, the acl-logging meter",
				i, a, w.match, w.action, w.direction)
		}
	}
	if got := pg.Ports; len(got) != 2 || got[0] != "tenant-blue_closed" || got[1] != "tenant-blue_web" {
		t.Errorf("ports %v: every member is in the group, open ports or not", got)
	}
}

// The builder rejects open ports the decoder would have rejected, and
// open ports without the pod whose ACLs they name.
func TestUDNIsolationRejectsOpenPorts(t *testing.T) {
	for _, tc := range []struct {
		m    IsolationMember
		want string
	}{
		{IsolationMember{Port: "ns_p", Pod: "ns/p", OpenPorts: []ovnk.OpenPort{{Protocol: "tcp"}}}, "pod ns/p: open port 0: port is required for tcp protocol"},
		{IsolationMember{Port: "ns_p", Pod: "ns/p", OpenPorts: []ovnk.OpenPort{{Protocol: "icmp"}, {Protocol: "gre"}}}, "open port 1: invalid protocol gre"},
		{IsolationMember{Port: "ns_p", OpenPorts: []ovnk.OpenPort{{Protocol: "icmp"}}}, "without the pod's name"},
	} {
		if _, err := UDNIsolation([]Node{refDefaultNode}, []IsolationMember{tc.m}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.m, err, tc.want)
		}
	}
}
