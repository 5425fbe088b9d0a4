package datapath_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/udnkit/udnkit/envtest/datapath"
)

// A run that ended without stopping (a crash, a Ctrl-C) leaves a
// directory nobody locks, daemons naming it and namespaces: Sweep removes
// them all and leaves the running cluster alone.
func TestSweepRemovesAnAbandonedRun(t *testing.T) {
	c := needCluster(t)
	dir := filepath.Join(os.TempDir(), datapath.Prefix+"run-dead01")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A daemon of the abandoned run: its arguments name the run directory.
	daemon := exec.Command("sh", "-c", "sleep 600", filepath.Join(dir, "daemon"))
	daemon.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- daemon.Wait() }()
	t.Cleanup(func() { _ = daemon.Process.Kill() })
	ns := datapath.Prefix + "dead01-node-a"
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })

	if err := datapath.Sweep(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Error("the abandoned run's daemon is still running")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the abandoned run's directory is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join("/run/netns", ns)); !os.IsNotExist(err) {
		t.Errorf("the abandoned run's namespace %s is still there (%v)", ns, err)
	}
	if _, err := os.Stat(c.Dir); err != nil {
		t.Errorf("the running cluster's directory was swept: %v", err)
	}
	for _, n := range c.Nodes {
		if _, err := n.Vsctl("br-exists", "br-int"); err != nil {
			t.Errorf("the running cluster's node %s was swept: %v", n.Name, err)
		}
	}
}
