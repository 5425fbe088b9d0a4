package dataplane

import (
	"testing"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// kindsOwner owns the rows of the tests of this file.
var kindsOwner = rows.Owner{Network: "kinds", Topology: "layer2", Piece: "test"}

func ptr[T any](v T) *T { return &v }

// A switch's ACLs and QoS rules are what ovn-nbctl lists on the switch; a
// second Apply sends nothing; an ACL another client edited is restored; they
// go with the piece.
func TestRealSwitchACLsAndQoS(t *testing.T) {
	e := newEnv(t)
	d := func() *rows.Desired {
		return &rows.Desired{Owner: kindsOwner, Switches: []rows.Switch{{
			Row: nbdb.LogicalSwitch{Name: "kinds_s"},
			ACLs: []nbdb.ACL{
				{Action: nbdb.ACLActionAllowRelated, Direction: nbdb.ACLDirectionToLport, Priority: 1001, Match: "ip4.src == 10.0.0.1",
					Tier: 2, Options: map[string]string{"apply-after-lb": "true"},
					ExternalIDs: map[string]string{ovnk.ExternalIDObjectID: "udnkit:test:allow"}},
				{Action: nbdb.ACLActionDrop, Direction: nbdb.ACLDirectionFromLport, Priority: 1000, Match: "ip4",
					Name: ptr("kinds_drop"), Log: true, Severity: ptr(nbdb.ACLSeverityInfo)},
			},
			QoS: []nbdb.QoS{{Direction: nbdb.QoSDirectionFromLport, Priority: 100, Match: "ip4.src == 10.0.0.0/24",
				Action: map[string]int{"dscp": 10}}},
		}}}
	}
	if n := e.apply(d()); n == 0 {
		t.Fatal("the first Apply sent nothing")
	}
	wantACLs := []string{
		"from-lport 1000 (ip4) drop log(name=kinds_drop,severity=info)",
		"to-lport 1001 (ip4.src == 10.0.0.1) allow-related [after-lb]",
	}
	wantLines(t, "acl-list", e.nbctl("acl-list", "kinds_s"), wantACLs...)
	wantLines(t, "qos-list", e.nbctl("qos-list", "kinds_s"), "from-lport 100 (ip4.src == 10.0.0.0/24) dscp=10")
	if n := e.apply(d()); n != 0 {
		t.Errorf("the second Apply sent %d operations, want 0", n)
	}
	e.nbctl("set", "ACL", e.nbctl("--data=bare", "--no-headings", "--columns=_uuid", "find", "ACL", "priority=1001"), "action=drop")
	e.apply(d())
	wantLines(t, "acl-list after another client's edit", e.nbctl("acl-list", "kinds_s"), wantACLs...)
	e.apply(&rows.Desired{Owner: kindsOwner})
	wantLines(t, "ACLs and QoS rules after the piece's removal", e.nbctl("--data=bare", "--no-headings", "--columns=_uuid", "list", "ACL")+
		e.nbctl("--data=bare", "--no-headings", "--columns=_uuid", "list", "QoS"))
}
