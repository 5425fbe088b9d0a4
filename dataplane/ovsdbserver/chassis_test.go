package ovsdbserver

import (
	"os/exec"
	"testing"
)

// Only an exit by a signal is retried; a command that fails on its own is not.
func TestKilledBySignal(t *testing.T) {
	if err := exec.Command("sh", "-c", "kill -ABRT $$").Run(); !killedBySignal(err) {
		t.Errorf("a shell that aborts itself: %v, want killed by a signal", err)
	}
	if err := exec.Command("sh", "-c", "exit 1").Run(); killedBySignal(err) {
		t.Errorf("exit status 1: %v, want no signal", err)
	}
	if killedBySignal(nil) {
		t.Error("success is no signal")
	}
}
