package netns

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Proc is one daemon started by Spawn.
type Proc struct {
	name string
	cmd  *exec.Cmd
	done chan error
}

// Spawn starts a daemon (in network namespace netns unless it is "") with
// its stdout and stderr in dir/<name>.out. The daemon dies with this process
// (parent-death signal), so a killed test leaves none behind.
func Spawn(dir, netns, name string, env []string, args ...string) (*Proc, error) {
	if netns != "" {
		args = append([]string{"ip", "netns", "exec", netns}, args...)
	}
	out, err := os.Create(filepath.Join(dir, name+".out"))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := start(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{name: name, cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// starter is the one OS thread every daemon is forked from. A parent-death
// signal fires when the forking thread ends, not the process; Go ends a
// thread whenever a goroutine exits locked to it (Enter does), so a daemon
// forked from a pooled thread could be killed by an unrelated namespace
// switch later. This thread stays locked and never ends before the process.
var starter = func() chan func() {
	ch := make(chan func())
	go func() {
		runtime.LockOSThread()
		for f := range ch {
			f()
		}
	}()
	return ch
}()

// start starts cmd from the starter thread.
func start(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	starter <- func() { done <- cmd.Start() }
	return <-done
}

// Exited reports the daemon's exit, if it has exited.
func (p *Proc) Exited() error {
	select {
	case err := <-p.done:
		p.done <- err
		return fmt.Errorf("%s exited: %v", p.name, err)
	default:
		return nil
	}
}

// Stop asks the daemon to exit (SIGTERM) and kills it after a second.
func (p *Proc) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(time.Second):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Run runs a command to completion (in netns unless it is ""), returning its
// trimmed output; the error holds the command line and its output.
func Run(netns string, env []string, args ...string) (string, error) {
	if netns != "" {
		args = append([]string{"ip", "netns", "exec", netns}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// IP runs ip(8).
func IP(args ...string) error {
	_, err := Run("", nil, append([]string{"ip"}, args...)...)
	return err
}
