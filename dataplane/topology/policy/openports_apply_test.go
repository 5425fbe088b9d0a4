package policy

import (
	"context"
	"slices"
	"testing"

	"github.com/udnkit/udnkit/dataplane/internal/nbtest"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/ovnk"
)

// Against the in-memory Northbound database (the real ovsdb-server's turn
// is dataplane/controllers' TestOpenDefaultPorts): a member's open-port
// ACLs are written, rewritten when its ports change, and deleted when it
// opens none (their place in the port group's acls is the real
// ovsdb-server test's to show).
func TestApplyOpenPorts(t *testing.T) {
	e := nbtest.Engine(t, nbtest.Serve(t), nil)
	ctx := context.Background()
	port := func(i int) *int { return &i }
	apply := func(open ...ovnk.OpenPort) {
		t.Helper()
		d, err := UDNIsolation([]Node{refDefaultNode}, []IsolationMember{{Port: "ns_web", Pod: "ns/web", OpenPorts: open}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Apply(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	// The cache holds a port group's ports, not its ACLs (schema's
	// PortGroup); the ACL rows are the ACL table's: the isolation's five
	// and the open ones.
	openMatches := func() []string {
		t.Helper()
		var acls []nbdb.ACL
		if err := e.NB.List(ctx, &acls); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range acls {
			if a.ExternalIDs[ovnk.ExternalIDObjectName] == "OpenPort-ns/web" {
				out = append(out, a.Match)
			}
		}
		if len(acls)-len(out) != 5 {
			t.Errorf("%d ACL rows besides the open ones, want the isolation's 5", len(acls)-len(out))
		}
		slices.Sort(out)
		return out
	}
	egress := `inport == "ns_web" && (arp || nd)`
	apply(ovnk.OpenPort{Protocol: "tcp", Port: port(8080)})
	if got := openMatches(); !slices.Equal(got, []string{egress, `outport == "ns_web" && (arp || nd || (tcp.dst == 8080))`}) {
		t.Errorf("open-port ACLs %q", got)
	}
	apply(ovnk.OpenPort{Protocol: "icmp"}, ovnk.OpenPort{Protocol: "sctp", Port: port(7)})
	if got := openMatches(); !slices.Equal(got, []string{egress, `outport == "ns_web" && (arp || nd || (icmp || sctp.dst == 7))`}) {
		t.Errorf("changed open-port ACLs %q", got)
	}
	apply()
	if got := openMatches(); len(got) != 0 {
		t.Errorf("closed, open-port ACLs remain: %q", got)
	}
}
