package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/internal/testenv"
)

// pingOK is what ping prints when every echo request was answered.
var pingOK = regexp.MustCompile(`(\d+) packets transmitted, (\d+) received, 0% packet loss`)

// runOf is the run ID in the network namespaces a make run ZONES=n wrote
// into its udnkit-ping.
func runOf(t *testing.T, state string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(state, "bin", "udnkit-ping"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`ns='` + datapath.Prefix + `([0-9a-f]+)-pod-`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("udnkit-ping names no pod namespace:\n%s", data)
	}
	return string(m[1])
}

// namespacesOf are the network namespaces of a run.
func namespacesOf(t *testing.T, run string) []string {
	t.Helper()
	entries, err := os.ReadDir("/run/netns")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), datapath.Prefix+run+"-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// tagged are the processes whose environment holds udnkit-local's tag of
// state.
func tagged(state string) []string {
	procs, _ := os.ReadDir("/proc")
	var out []string
	for _, p := range procs {
		env, err := os.ReadFile(filepath.Join("/proc", p.Name(), "environ"))
		if err != nil || p.Name() == "self" {
			continue
		}
		for _, e := range bytes.Split(env, []byte{0}) {
			if string(e) == stateEnv+"="+state {
				cmdline, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
				out = append(out, p.Name()+": "+string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
			}
		}
	}
	return out
}

// printedPing checks the ping udnkit-local ran and printed at start-up.
func printedPing(t *testing.T, lines []string) {
	t.Helper()
	all := strings.Join(lines, "\n")
	if !strings.Contains(all, "$ udnkit-ping tenant-blue/pod-a -c3 10.100.") {
		t.Errorf("udnkit-local printed no ping from pod-a:\n%s", all)
	}
	if m := pingOK.FindStringSubmatch(all); m == nil || m[1] != "3" || m[2] != "3" {
		t.Errorf("the ping printed at start-up did not get 3 of 3 replies:\n%s", all)
	}
}

// TestQuickstartZones is the end-to-end test of `make run ZONES=3` on the
// real datapath: it starts udnkit-local --zones=3, runs every command it
// prints (each ping must get every reply; the nodes' chassis IDs must be
// the UUIDs of the chassis in the zones' Southbound, not node names), kills
// it with SIGKILL, starts it again over what the killed run left (its
// namespaces, OVN daemons, apiserver and etcd must be gone and the ping work
// again), and stops it with SIGINT, after which nothing it started is left.
func TestQuickstartZones(t *testing.T) {
	testenv.Real(t, "kube-apiserver, network namespaces, ovs-vswitchd, ovn-controller and a go build")
	if _, err := envtest.AssetsDir(); err != nil {
		t.Fatal(err)
	}
	if err := datapath.Preflight(); err != nil {
		t.Fatalf("make run ZONES=3 cannot run on this machine: %v", err)
	}
	root, state, bin := envtest.RepoRoot(), t.TempDir(), buildLocal(t)
	args := []string{"--repo-root", root, "--state-dir", state, "--zones=3"}

	first := startLocal(t, bin, args...)
	start := time.Now()
	lines, commands := first.ready(t, 2*time.Minute)
	t.Logf("make run ZONES=3 ready in %s", time.Since(start).Round(100*time.Millisecond))
	printedPing(t, lines)
	env := commands[0]
	sh := func(c string) (string, error) {
		out, err := exec.Command("bash", "-c", env+"; cd "+root+"; "+c).CombinedOutput()
		t.Logf("$ %s\n%s", c, out)
		return string(out), err
	}
	var chassis map[string]string // node -> node-chassis-id
	pings := 0
	for _, c := range commands[1:] {
		out, err := sh(c)
		if err != nil {
			t.Errorf("%q failed: %v", c, err)
			continue
		}
		switch {
		case strings.HasPrefix(c, "udnkit-ping"):
			pings++
			if m := pingOK.FindStringSubmatch(out); m == nil || m[1] != m[2] {
				t.Errorf("%q: not every echo request was answered", c)
			}
		case strings.HasPrefix(c, "kubectl get nodes"):
			chassis = map[string]string{}
			for _, m := range regexp.MustCompile(`(?m)^(node-[a-c])\s+\d+\s+(\S+)\s+\["192\.0\.2\.\d+"\]$`).FindAllStringSubmatch(out, -1) {
				chassis[m[1]] = m[2]
			}
			uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
			for _, n := range []string{"node-a", "node-b", "node-c"} {
				if !uuid.MatchString(chassis[n]) {
					t.Errorf("node %s: node-chassis-id %q is not a UUID system-id (or the node has no ID or encap IP)", n, chassis[n])
				}
			}
		case strings.HasPrefix(c, "kubectl get pods"):
			for _, want := range []string{`pod-a\s+node-a\s+\{"tenant-blue/blue":\{"ip_addresses":\["10\.100\.`, `pod-b\s+node-b\s+\{"tenant-blue/blue"`} {
				if !regexp.MustCompile(want).MatchString(out) {
					t.Errorf("kubectl get pods: no match for %s", want)
				}
			}
		case strings.HasPrefix(c, "ovn-sbctl"):
			// node-a's zone: its own chassis and the remote ones, each
			// named by the node's k8s.ovn.org/node-chassis-id; the pods'
			// ports bound to their nodes' chassis.
			for node, id := range chassis {
				if !regexp.MustCompile(`Chassis "` + id + `"\s+hostname: ` + node).MatchString(out) {
					t.Errorf("node-a's Southbound has no chassis %s with hostname %s", id, node)
				}
			}
			for node, port := range map[string]string{"node-a": "tenant.blue.blue_tenant-blue_pod-a", "node-b": "tenant.blue.blue_tenant-blue_pod-b"} {
				if !regexp.MustCompile(`hostname: ` + node + `\n(?:\s+(?:Encap|ip:|options:).*\n)*(?:\s+Port_Binding.*\n)*\s+Port_Binding ` + regexp.QuoteMeta(port) + `\n`).MatchString(out) {
					t.Errorf("%s is not bound to %s's chassis in node-a's zone", port, node)
				}
			}
		}
	}
	if pings < 3 {
		t.Errorf("udnkit-local printed %d ping commands, want pod-b in IPv4 and IPv6 and the external host", pings)
	}
	// The rejecting path: an address no pod holds gets no reply, and a pod
	// that does not exist is named.
	if out, err := sh("udnkit-ping tenant-blue/pod-a -c2 -W1 10.100.0.200"); err == nil || !strings.Contains(out, "2 packets transmitted, 0 received") {
		t.Errorf("a ping to an address no pod holds succeeded (%v)", err)
	}
	if out, err := sh("udnkit-ping tenant-blue/nobody -c1 10.100.0.1"); err == nil || !strings.Contains(out, "no pod 'tenant-blue/nobody'") {
		t.Errorf("udnkit-ping of an unknown pod: %v", err)
	}

	// kill -9 leaves the nodes' namespaces, OVN daemons, the apiserver and
	// etcd behind.
	run1 := runOf(t, state)
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for range first.lines {
	}
	<-first.exited
	if len(namespacesOf(t, run1)) == 0 || len(tagged(state)) == 0 {
		t.Fatalf("the killed run left no namespaces or processes: the restart below proves nothing")
	}

	second := startLocal(t, bin, args...)
	start = time.Now()
	lines, _ = second.ready(t, 2*time.Minute)
	t.Logf("make run ZONES=3 over a killed run's leftovers ready in %s", time.Since(start).Round(100*time.Millisecond))
	printedPing(t, lines)
	if left := namespacesOf(t, run1); len(left) > 0 {
		t.Errorf("the killed run's namespaces are still there: %v", left)
	}
	run2 := runOf(t, state)
	second.stop(t, syscall.SIGINT)
	if left := namespacesOf(t, run2); len(left) > 0 {
		t.Errorf("after Ctrl-C the run's namespaces are still there: %v", left)
	}
	if left := tagged(state); len(left) > 0 {
		t.Errorf("after Ctrl-C processes it started still run:\n%s", strings.Join(left, "\n"))
	}
	if _, err := os.Stat(filepath.Join(os.TempDir(), datapath.Prefix+"run-"+run2)); !os.IsNotExist(err) {
		t.Errorf("after Ctrl-C the run's directory is still there (%v)", err)
	}
	for _, link := range []string{"zone-node-a", "bin/udnkit-ping", "kubeconfig"} {
		if _, err := os.Lstat(filepath.Join(state, link)); !os.IsNotExist(err) {
			t.Errorf("after Ctrl-C %s is still there (%v)", link, err)
		}
	}
}
