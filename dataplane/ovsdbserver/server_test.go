package ovsdbserver

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/internal/testenv"
)

// StartLocal serves both databases on the documented socket names with
// ovn-northd translating between them, and keeps the data across a restart.
func TestStartLocalServesNBAndSBWithNorthd(t *testing.T) {
	testenv.Real(t, "ovsdb-server and ovn-northd")
	dir, err := os.MkdirTemp("", "ovnl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ctx := context.Background()
	l, err := StartLocal(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	nbctl := func(args ...string) string {
		t.Helper()
		out, err := Command("ovn-nbctl", append([]string{"--db=unix:" + dir + "/ovnnb.sock"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ovn-nbctl %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	nbctl("ls-add", "sw0")
	nbctl("--timeout=30", "--wait=sb", "sync")
	out, err := Command("ovn-sbctl", "--db=unix:"+dir+"/ovnsb.sock", "--columns=external_ids", "list", "Datapath_Binding").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "name=sw0") {
		t.Fatalf("ovn-northd did not create the datapath of sw0: %v: %s", err, out)
	}
	l.Stop()

	l, err = StartLocal(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	if got := nbctl("ls-list"); !strings.Contains(got, "sw0") {
		t.Errorf("the database did not survive a restart: %s", got)
	}
	if _, err := Start(ctx, "relative/dir", Northbound); err == nil || !strings.Contains(err.Error(), "must be an absolute path") {
		t.Errorf("relative directory: err = %v", err)
	}
}

// A 3-member cluster elects a leader, takes writes through any endpoint list
// and elects another leader that still has the data when the first is killed.
func TestClusterSurvivesLeaderLoss(t *testing.T) {
	testenv.Real(t, "ovsdb-server")
	dir, err := os.MkdirTemp("", "ovnr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ctx := context.Background()
	c, err := StartCluster(ctx, dir, Northbound, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if n := strings.Count(c.Address(), ",tcp:127.0.0.1:"); n != 2 || !strings.HasPrefix(c.Address(), "tcp:127.0.0.1:") {
		t.Errorf("cluster address %q: want three tcp endpoints", c.Address())
	}
	nbctl := func(args ...string) string {
		t.Helper()
		out, err := Command("ovn-nbctl", append([]string{"--timeout=30", "--db=" + c.Address()}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ovn-nbctl %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	nbctl("ls-add", "sw0")
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Members[leader].Stop()
	next, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next == leader {
		t.Fatalf("member %d is still reported leader after it was killed", leader)
	}
	if got := nbctl("ls-list"); !strings.Contains(got, "sw0") {
		t.Errorf("the new leader lost a committed write: %q", got)
	}
	if err := c.Members[leader].Restart(ctx); err != nil {
		t.Fatalf("the killed member does not restart: %v", err)
	}
	if _, err := StartCluster(ctx, "relative", Northbound, 3); err == nil {
		t.Error("a relative cluster directory was accepted")
	}
}
