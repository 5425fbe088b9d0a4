package datapath

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/udnkit/udnkit/envtest/datapath/netns"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sweep removes what earlier runs left behind: for every run directory
// whose lock no process holds (its cluster crashed or was interrupted), the
// processes started with that directory in their arguments, the run's
// network namespaces and the directory; namespaces of runs whose
// directory is gone; and directories a Start left before it named them.
// Running clusters and starting ones are left alone.
func Sweep() error {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), Prefix+"run-*"))
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, dir := range dirs {
		run := strings.TrimPrefix(filepath.Base(dir), Prefix+"run-")
		held, err := locked(filepath.Join(dir, "lock"))
		if err != nil {
			return err
		}
		if held {
			live[run] = true
			continue
		}
		if err := killUsing(dir); err != nil {
			return err
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	// A directory Start created but had not yet renamed to run-<id> when
	// its process died; a fresh one may be a concurrent Start's.
	staging, err := filepath.Glob(filepath.Join(os.TempDir(), Prefix+"new-*"))
	if err != nil {
		return err
	}
	for _, dir := range staging {
		if fi, err := os.Stat(dir); err == nil && time.Since(fi.ModTime()) > time.Minute {
			_ = os.RemoveAll(dir)
		}
	}
	entries, err := os.ReadDir("/run/netns")
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), Prefix)
		if !ok {
			continue
		}
		run, tail, _ := strings.Cut(rest, "-")
		if live[run] {
			continue
		}
		// A run that started after the directories were read.
		if held, err := locked(filepath.Join(os.TempDir(), Prefix+"run-"+run, "lock")); err != nil || held {
			continue
		}
		if pid, err := strconv.Atoi(tail); run == "preflight" && err == nil && syscall.Kill(pid, 0) == nil {
			// Another process's Preflight, under way.
			continue
		}
		if err := netns.IP("netns", "del", e.Name()); err != nil {
			return fmt.Errorf("sweeping a previous run's namespace: %w", err)
		}
	}
	return nil
}

// locked reports whether some process holds the lock file (a missing file
// is not held).
func locked(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true, nil
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false, nil
}

// killUsing kills (SIGKILL) every process whose arguments name a path
// inside dir (a previous run's daemons: each has its sockets and logs
// there) and waits for them to go.
func killUsing(dir string) error {
	_, err := KillWhere(dir+"/", "")
	return err
}

// KillWhere kills (SIGKILL) every process but this one whose command line
// contains path (unless it is "") or whose environment holds env, a
// "KEY=VALUE" entry (unless it is ""), waits for them to go and returns
// their command lines. A process inherits its parent's environment, so env
// finds what an earlier run started even where no path of its names it
// (an apiserver in its own temporary directory).
func KillWhere(path, env string) ([][]string, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	var cmdlines [][]string
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		match := path != "" && bytes.Contains(cmdline, []byte(path))
		if !match && env != "" {
			environ, err := os.ReadFile(filepath.Join("/proc", p.Name(), "environ"))
			match = err == nil && slices.ContainsFunc(bytes.Split(environ, []byte{0}), func(e []byte) bool { return string(e) == env })
		}
		if !match {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			pids = append(pids, pid)
			cmdlines = append(cmdlines, strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"))
		}
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		alive := 0
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil && !zombie(pid) {
				alive++
			}
		}
		if alive == 0 {
			return cmdlines, nil
		}
	}
	return cmdlines, fmt.Errorf("processes of a previous run (%s%s) did not exit", path, env)
}

// zombie reports whether pid has exited and waits for its parent to reap it.
func zombie(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}
