package datapath_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/udnkit/udnkit/internal/testenv"
)

// A machine (or user) without /dev/net/tun access or permission to create
// network namespaces cannot run the cluster:
// Preflight says what is missing, so the suite fails with that message
// instead of skipping. This test runs a copy of its own binary as the
// unprivileged user nobody.
func TestPreflightRefusesAnUnprivilegedUser(t *testing.T) {
	testenv.Real(t, "root, to run a copy of the test binary as nobody")
	if os.Geteuid() != 0 {
		t.Fatal("this check runs as root and drops to nobody; as another user the cluster itself cannot start")
	}
	// A copy nobody may run (go test builds into a directory only root enters).
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.CreateTemp("", "udnk-preflight-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(bin.Name()) })
	_, err = bin.Write(self)
	if err == nil {
		err = bin.Chmod(0o755)
	}
	if err := errors.Join(err, bin.Close()); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin.Name())
	cmd.Env = append(os.Environ(), preflightChild+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the unprivileged copy of the test binary did not run: %v: %s", err, out)
	}
	// Which one is missing depends on /dev/net/tun's mode; either message
	// names the requirement.
	got := strings.TrimSpace(string(out))
	if !strings.Contains(got, "the userspace datapath needs /dev/net/tun") &&
		!strings.Contains(got, "permission to create network namespaces") {
		t.Errorf("Preflight as nobody says %q, want it to name /dev/net/tun or namespace permission", got)
	}
}
