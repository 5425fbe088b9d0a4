package pods

import (
	"context"
	"testing"

	"github.com/udnkit/udnkit/dataplane/internal/nbtest"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// Against the in-memory Northbound database (the real ovsdb-server's turn
// is dataplane/controllers' TestPodPorts*): the Localnet switch and a pod
// port on it are applied, then the port is disabled (a live migration's
// source), the VLAN changes, and the pod goes; each Apply leaves the rows
// as desired, the columns enabled and tag_request included.
func TestApplyLocalnetAndPortChanges(t *testing.T) {
	addr := nbtest.Serve(t)
	e := nbtest.Engine(t, addr, nil)
	ctx := context.Background()
	n := Network{Name: "tenant-red_phys", Topology: ovnk.TopologyLocalnet}
	apply := func(d *rows.Desired, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Apply(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	sw := func(vlan int) (*rows.Desired, error) {
		return LocalnetSwitch(LocalnetNetwork{Name: n.Name, Role: "secondary", PhysicalNetwork: "physnet-a", VLAN: vlan})
	}
	p := pod("pod1", "node1", true, 0, "192.168.100.5/24")
	p.NAD = "tenant-red/phys"
	apply(sw(100))
	apply(Ports(n, []Pod{p}))
	port := func(name string) *nbdb.LogicalSwitchPort {
		var out []nbdb.LogicalSwitchPort
		if err := e.NB.WhereCache(func(l *nbdb.LogicalSwitchPort) bool { return l.Name == name }).List(ctx, &out); err != nil {
			t.Fatal(err)
		}
		if len(out) == 0 {
			return nil
		}
		return &out[0]
	}
	if lp := port(p.PortName()); lp == nil || lp.Enabled != nil || len(lp.Addresses) != 1 {
		t.Fatalf("pod port %+v, want one with addresses and no enabled", lp)
	}

	off := false
	p.Enabled = &off
	apply(Ports(n, []Pod{p}))
	apply(sw(200))
	if lp := port(p.PortName()); lp == nil || lp.Enabled == nil || *lp.Enabled || len(lp.Addresses) != 0 || len(lp.PortSecurity) != 1 {
		t.Errorf("disabled pod port %+v, want enabled=false, no addresses, port security kept", lp)
	}
	names := ovnk.NamesFor(n.Name)
	if lp := port(names.LocalnetPort()); lp == nil || lp.TagRequest == nil || *lp.TagRequest != 200 {
		t.Errorf("localnet port %+v, want tag_request 200", lp)
	}

	apply(Ports(n, nil))
	if port(p.PortName()) != nil {
		t.Errorf("the gone pod's port is still there")
	}
	if port(names.LocalnetPort()) == nil {
		t.Errorf("removing the pod ports removed the localnet port")
	}
}
