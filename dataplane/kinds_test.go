package dataplane

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/udnkit/udnkit/dataplane/internal/nbtest"
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
	hasPiece(t, e, true)
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
	hasPiece(t, e, false)
}

// hasPiece checks PieceHasNetwork for kindsOwner against want and against
// PieceNetworks, whose one-network answer it is.
func hasPiece(t *testing.T, e *env, want bool) {
	t.Helper()
	o := kindsOwner
	listed := slices.Contains(e.c.PieceNetworks(o.Topology, o.Piece), o.Network)
	if got := e.c.PieceHasNetwork(o.Topology, o.Piece, o.Network); got != want || listed != want {
		t.Errorf("PieceHasNetwork = %v, PieceNetworks lists it: %v; want %v", got, listed, want)
	}
	if e.c.PieceHasNetwork(o.Topology, o.Piece, "another") || e.c.PieceHasNetwork(o.Topology, "another-piece", o.Network) {
		t.Error("PieceHasNetwork says yes for another network or piece")
	}
}

// A port group holds the piece's ports (inserted with it, even when the
// Apply is split into many transactions) and its ACLs, as ovn-nbctl shows
// them; a member another client took out is put back; the group goes with
// the piece.
func TestRealPortGroup(t *testing.T) {
	e := newEnv(t)
	e.c.eng.MaxTransactionOps = 8
	d := func() *rows.Desired {
		s := rows.Switch{Row: nbdb.LogicalSwitch{Name: "kinds_s"}}
		g := rows.PortGroup{Row: nbdb.PortGroup{Name: "kinds_pg"},
			ACLs: []nbdb.ACL{{Action: nbdb.ACLActionAllow, Direction: nbdb.ACLDirectionToLport, Priority: 1010, Match: "outport == @kinds_pg"}}}
		for i := range 20 {
			name := fmt.Sprintf("kinds_p%02d", i)
			s.Ports = append(s.Ports, nbdb.LogicalSwitchPort{Name: name, Addresses: []string{"unknown"}})
			g.Ports = append(g.Ports, name)
		}
		return &rows.Desired{Owner: kindsOwner, Switches: []rows.Switch{s}, PortGroups: []rows.PortGroup{g}}
	}
	res, err := e.c.Apply(e.ctx, d())
	if err != nil {
		t.Fatal(err)
	}
	if res.Transactions < 2 {
		t.Fatalf("%d transactions, want a split Apply", res.Transactions)
	}
	wantMembers := func(what string) {
		t.Helper()
		got := e.nbctl("--data=bare", "--no-headings", "--columns=ports", "list", "Port_Group", "kinds_pg")
		if n := len(strings.Fields(got)); n != 20 {
			t.Errorf("%s: port group kinds_pg holds %d ports, want 20: %q", what, n, got)
		}
	}
	wantMembers("created")
	wantLines(t, "acl-list", e.nbctl("acl-list", "kinds_pg"), "to-lport 1010 (outport == @kinds_pg) allow")
	if n := e.apply(d()); n != 0 {
		t.Errorf("the second Apply sent %d operations, want 0", n)
	}
	e.nbctl("clear", "Port_Group", "kinds_pg", "ports")
	e.apply(d())
	wantMembers("another client's edit healed")
	e.apply(&rows.Desired{Owner: kindsOwner})
	if got := e.nbctl("--data=bare", "--no-headings", "--columns=name", "list", "Port_Group") + e.nbctl("--data=bare", "--no-headings", "--columns=_uuid", "list", "ACL"); got != "" {
		t.Errorf("port groups and ACLs after the piece's removal: %q", got)
	}
}

// A port group naming a port another writer owns, against a real
// ovsdb-server: the Apply succeeds without it while it does not exist;
// ovn-nbctl creating it makes the client add it with no new Apply; deleting
// it takes it out of the group, and the next Apply succeeds.
func TestRealPortGroupMemberOfAnotherWriter(t *testing.T) {
	e := newEnv(t)
	d := func() *rows.Desired {
		return &rows.Desired{Owner: kindsOwner,
			Switches: []rows.Switch{{Row: nbdb.LogicalSwitch{Name: "kinds_s"},
				Ports: []nbdb.LogicalSwitchPort{{Name: "kinds_p", Addresses: []string{"unknown"}}}}},
			PortGroups: []rows.PortGroup{{Row: nbdb.PortGroup{Name: "kinds_pg"}, Ports: []string{"kinds_p", "pod_p"}}}}
	}
	e.apply(d())
	members := func(what string, want ...string) {
		t.Helper()
		var got []string
		for range 150 {
			got = nil
			for _, u := range strings.Fields(e.nbctl("--data=bare", "--no-headings", "--columns=ports", "list", "Port_Group", "kinds_pg")) {
				got = append(got, e.nbctl("get", "Logical_Switch_Port", u, "name"))
			}
			slices.Sort(got)
			if slices.Equal(got, want) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("%s: port group kinds_pg holds %q, want %q", what, got, want)
	}
	members("the pod port missing", "kinds_p")
	e.nbctl("ls-add", "pod_s", "--", "lsp-add", "pod_s", "pod_p")
	members("the pod port created by another client", "kinds_p", "pod_p")
	if n := e.apply(d()); n != 0 {
		t.Errorf("an Apply once the port was added sent %d operations, want 0", n)
	}
	e.nbctl("lsp-del", "pod_p")
	members("the pod port deleted by another client", "kinds_p")
	e.apply(d())
	e.nbctl("lsp-add", "pod_s", "pod_p")
	members("the pod port created again", "kinds_p", "pod_p")
}

// A zone meter the piece's ACLs name is what ovn-nbctl meter-list shows,
// inserted once, and stays when the piece goes.
func TestRealZoneMeter(t *testing.T) {
	e := newEnv(t)
	d := &rows.Desired{Owner: kindsOwner, Switches: []rows.Switch{{Row: nbdb.LogicalSwitch{Name: "kinds_s"},
		ACLs: []nbdb.ACL{{Action: nbdb.ACLActionDrop, Direction: nbdb.ACLDirectionFromLport, Priority: 1000, Match: "ip4",
			Log: true, Meter: ptr("acl-logging")}}}},
		Meters: []rows.ZoneMeter{{Row: nbdb.Meter{Name: "acl-logging", Unit: nbdb.MeterUnitPktps, Fair: ptr(true)},
			Band: nbdb.MeterBand{Action: nbdb.MeterBandActionDrop, Rate: 20}}}}
	e.apply(d)
	want := []string{"acl-logging: (fair) bands:", "drop: 20 pktps"}
	wantLines(t, "meter-list", e.nbctl("meter-list"), want...)
	if n := e.apply(d); n != 0 {
		t.Errorf("the second Apply sent %d operations, want 0", n)
	}
	e.apply(&rows.Desired{Owner: kindsOwner})
	wantLines(t, "meter-list after the piece's removal", e.nbctl("meter-list"), want...)
}

// Static MAC bindings on the piece's router port are what ovn-nbctl
// lists, a binding of another client's port stays, and the piece's go
// with it.
func TestRealStaticMACBindings(t *testing.T) {
	e := newEnv(t)
	e.nbctl("lr-add", "other_gr", "--", "lrp-add", "other_gr", "other_rtoe", "0a:58:64:40:00:09", "172.18.0.9/16",
		"--", "static-mac-binding-add", "other_rtoe", "169.254.0.4", "0a:58:a9:fe:00:04")
	d := &rows.Desired{Owner: kindsOwner,
		Routers: []rows.Router{{Row: nbdb.LogicalRouter{Name: "kinds_gr"},
			Ports: []nbdb.LogicalRouterPort{{Name: "kinds_rtoe", MAC: "0a:58:64:40:00:01", Networks: []string{"172.18.0.2/16"}}}}},
		StaticMACBindings: []nbdb.StaticMACBinding{
			{LogicalPort: "kinds_rtoe", IP: "169.254.0.4", MAC: "0a:58:a9:fe:00:04", OverrideDynamicMAC: true}}}
	e.apply(d)
	list := func() string {
		return e.nbctl("--format=csv", "--data=bare", "--no-headings", "--columns=logical_port,ip,mac,override_dynamic_mac", "list", "Static_MAC_Binding")
	}
	other := "other_rtoe,169.254.0.4,0a:58:a9:fe:00:04,false"
	wantLines(t, "static MAC bindings", list(), other, "kinds_rtoe,169.254.0.4,0a:58:a9:fe:00:04,true")
	if n := e.apply(d); n != 0 {
		t.Errorf("the second Apply sent %d operations, want 0", n)
	}
	e.apply(&rows.Desired{Owner: kindsOwner})
	wantLines(t, "static MAC bindings after the piece's removal", list(), other)
}

// Load balancers in a group that the piece's router and switch reference
// are what ovn-nbctl lists, also when the Apply is split; the group stays
// when the piece goes (it has no external_ids to own it by), empty.
func TestRealLoadBalancers(t *testing.T) {
	e := newEnv(t)
	e.c.eng.MaxTransactionOps = 4
	tcp := nbdb.LoadBalancerProtocolTCP
	d := &rows.Desired{Owner: kindsOwner,
		Routers:            []rows.Router{{Row: nbdb.LogicalRouter{Name: "kinds_r"}, LoadBalancerGroups: []string{"kinds_lbg"}}},
		Switches:           []rows.Switch{{Row: nbdb.LogicalSwitch{Name: "kinds_s"}, LoadBalancerGroups: []string{"kinds_lbg"}}},
		LoadBalancerGroups: []rows.LoadBalancerGroup{{Row: nbdb.LoadBalancerGroup{Name: "kinds_lbg"}}}}
	for i := range 6 {
		name := fmt.Sprintf("kinds_lb%d", i)
		d.LoadBalancers = append(d.LoadBalancers, nbdb.LoadBalancer{Name: name, Protocol: &tcp,
			Vips: map[string]string{fmt.Sprintf("10.96.0.%d:80", i+1): "10.0.0.5:8080"}})
		d.LoadBalancerGroups[0].LoadBalancers = append(d.LoadBalancerGroups[0].LoadBalancers, name)
	}
	res, err := e.c.Apply(e.ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if res.Transactions < 2 {
		t.Fatalf("%d transactions, want a split Apply", res.Transactions)
	}
	group := func() string {
		return e.nbctl("--data=bare", "--no-headings", "--columns=load_balancer", "list", "Load_Balancer_Group", "kinds_lbg")
	}
	if n := len(strings.Fields(group())); n != 6 {
		t.Errorf("kinds_lbg holds %d load balancers, want 6", n)
	}
	lbg := e.nbctl("--data=bare", "--no-headings", "--columns=_uuid", "list", "Load_Balancer_Group", "kinds_lbg")
	wantRows(t, "load_balancer_group", e.rows("Logical_Router", "load_balancer_group"), map[string]string{"kinds_r": lbg})
	wantRows(t, "load_balancer_group", e.rows("Logical_Switch", "load_balancer_group"), map[string]string{"kinds_s": lbg})
	if got := e.nbctl("lb-list"); !strings.Contains(got, "kinds_lb5") || !strings.Contains(got, "10.96.0.6:80") {
		t.Errorf("lb-list:\n%s", got)
	}
	if n := e.apply(d); n != 0 {
		t.Errorf("the second Apply sent %d operations, want 0", n)
	}
	e.apply(&rows.Desired{Owner: kindsOwner})
	if got := e.nbctl("--data=bare", "--no-headings", "--columns=name", "list", "Load_Balancer"); got != "" || group() != "" {
		t.Errorf("after the piece's removal: load balancers %q, kinds_lbg holds %q", got, group())
	}
}

// A port's DHCP options are the piece's DHCP_Options rows, as ovn-nbctl
// shows them, also when the Apply is split; they go with the piece.
func TestRealPortDHCP(t *testing.T) {
	e := newEnv(t)
	e.c.eng.MaxTransactionOps = 4
	s := rows.Switch{Row: nbdb.LogicalSwitch{Name: "kinds_s"}, PortDHCP: map[string]rows.DHCPRef{}}
	d := &rows.Desired{Owner: kindsOwner}
	for i := range 4 {
		o := nbdb.DHCPOptions{Cidr: fmt.Sprintf("10.0.%d.0/24", i), ExternalIDs: map[string]string{ovnk.ExternalIDVM: fmt.Sprintf("ns/vm%d", i)},
			Options: map[string]string{"lease_time": "3500"}}
		d.DHCPOptions = append(d.DHCPOptions, o)
		name := fmt.Sprintf("kinds_vm%d", i)
		s.Ports = append(s.Ports, nbdb.LogicalSwitchPort{Name: name, Addresses: []string{"dynamic"}})
		s.PortDHCP[name] = rows.DHCPRef{V4: rows.DHCPKey(o)}
	}
	d.Switches = []rows.Switch{s}
	res, err := e.c.Apply(e.ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if res.Transactions < 2 {
		t.Fatalf("%d transactions, want a split Apply", res.Transactions)
	}
	for i := range 4 {
		got := e.nbctl("lsp-get-dhcpv4-options", fmt.Sprintf("kinds_vm%d", i))
		if want := fmt.Sprintf("(10.0.%d.0/24)", i); !strings.HasSuffix(got, want) {
			t.Errorf("kinds_vm%d: dhcpv4 options %q, want those of %s", i, got, want)
		}
	}
	if n := e.apply(d); n != 0 {
		t.Errorf("the second Apply sent %d operations, want 0", n)
	}
	e.apply(&rows.Desired{Owner: kindsOwner})
	if got := e.nbctl("dhcp-options-list"); got != "" {
		t.Errorf("DHCP options after the piece's removal: %q", got)
	}
}

// On ovsdb-server, random desired states of two networks holding every
// kind of row (ports naming DHCP options too), applied in any order and
// cut into transactions of any size, leave what one Apply of each final
// state leaves.
func TestRealRandomStatesConverge(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed-", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 34))
			networks := []string{"blue", "green"}
			var order []*rows.Desired
			final := map[string]*rows.Desired{}
			for _, n := range networks {
				for range 2 + rng.IntN(4) {
					order = append(order, nbtest.RandomWithPortDHCP(rng, nbtest.Owner(n)))
				}
				final[n] = nbtest.RandomWithPortDHCP(rng, nbtest.Owner(n))
			}
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			walked, fresh := newEnv(t), newEnv(t)
			walked.c.eng.MaxTransactionOps = []int{0, 4, 9, 20}[rng.IntN(4)]
			for _, d := range order {
				walked.apply(d)
			}
			for _, n := range networks {
				walked.apply(final[n])
				fresh.apply(final[n])
			}
			got, want := nbtest.Snapshot(t, walked.db.NB.Address()), nbtest.Snapshot(t, fresh.db.NB.Address())
			if got.String() != want.String() {
				t.Fatalf("after %d Applies (transactions of at most %d operations) the database differs from one Apply per network:\ngot:\n%s\nwant:\n%s",
					len(order)+2, walked.c.eng.MaxTransactionOps, got, want)
			}
			for _, n := range networks {
				if ops := walked.apply(final[n]); ops != 0 {
					t.Errorf("%s: applying the final state again sent %d operations", n, ops)
				}
			}
		})
	}
}
