package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/ovnk"
)

// localRun is a started udnkit-local: its output lines and its exit.
type localRun struct {
	cmd    *exec.Cmd
	lines  chan string
	exited chan error
}

// buildLocal builds udnkit-local into a temporary directory.
func buildLocal(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "udnkit-local")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startLocal starts bin with args.
func startLocal(t *testing.T, bin string, args ...string) *localRun {
	t.Helper()
	r := &localRun{cmd: exec.Command(bin, args...), lines: make(chan string, 256), exited: make(chan error, 1)}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stderr = os.Stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
		}
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
		r.exited <- r.cmd.Wait()
	}()
	return r
}

// ready reads up to the "Ctrl-C" line and returns every line read and the
// commands of the "In another terminal" block.
func (r *localRun) ready(t *testing.T, timeout time.Duration) (lines, commands []string) {
	t.Helper()
	ready, inBlock := false, false
	deadline := time.After(timeout)
	for done := false; !done; {
		select {
		case line, ok := <-r.lines:
			if !ok {
				t.Fatal("udnkit-local exited before it was ready")
			}
			t.Log(line)
			lines = append(lines, line)
			switch {
			case strings.Contains(line, "udnkit is ready"):
				ready = true
			case strings.HasPrefix(line, "In another terminal"):
				inBlock = true
			case strings.HasPrefix(line, "Ctrl-C"):
				done = true
			case inBlock && strings.TrimSpace(line) != "":
				commands = append(commands, strings.TrimSpace(line))
			}
		case <-deadline:
			t.Fatalf("no ready line within %s", timeout)
		}
	}
	if !ready {
		t.Fatal("no line contains 'udnkit is ready'")
	}
	if len(commands) < 3 || !strings.HasPrefix(commands[0], "export KUBECONFIG=") {
		t.Fatalf("unexpected command block: %q", commands)
	}
	return lines, commands
}

// stop signals udnkit-local and waits for it to exit cleanly.
func (r *localRun) stop(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	for range r.lines {
	}
	select {
	case err := <-r.exited:
		if err != nil {
			t.Errorf("udnkit-local exited with %v after %v", err, sig)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("udnkit-local did not stop within 30s of %v", sig)
	}
}

// TestQuickstart is the end-to-end test of `make run`: it starts the built
// udnkit-local, waits for "udnkit is ready", runs every command it prints
// (the README's quickstart) and checks what each promises, then stops it with
// SIGTERM and checks that the control plane is gone.
func TestQuickstart(t *testing.T) {
	testenv.Real(t, "kube-apiserver, ovsdb-server and a go build")
	if _, err := envtest.AssetsDir(); err != nil {
		t.Fatal(err)
	}
	root := envtest.RepoRoot()
	state := t.TempDir()
	run := startLocal(t, buildLocal(t), "--repo-root", root, "--state-dir", state)
	_, commands := run.ready(t, 2*time.Minute)
	if _, err := os.Stat(filepath.Join(state, "kubeconfig")); err != nil {
		t.Fatalf("kubeconfig not written: %v", err)
	}
	if len(commands) < 5 {
		t.Fatalf("unexpected command block: %q", commands)
	}

	env := commands[0]
	greenSet := ovnk.NamesFor("tenant-green_green").SubnetsAddressSet("ip4")
	// The apiserver's own default/kubernetes Service (make run's service
	// range, serviceCIDRs) via blue's management IP (10.100.0.0/16).
	apiRoute := regexp.MustCompile(`ip_prefix\s*: "10\.96\.0\.1"\s+nexthop\s*: "10\.100\.0\.2"\s+external_ids\s*: \{[^}]*"k8s\.ovn\.org/udn-enabled-default-service"="default/kubernetes"`)
	for _, c := range commands[1:] {
		out, err := exec.Command("bash", "-c", env+"; cd "+root+"; "+c).CombinedOutput()
		// The dataplane programs OVN asynchronously: give the topology a
		// few seconds to appear before judging `ovn-nbctl show`.
		settled := func() bool {
			if strings.Contains(c, "lr-policy-list") {
				return strings.Contains(string(out), "$"+greenSet)
			}
			if strings.Contains(c, "udn-enabled-default-service") {
				return apiRoute.Match(out)
			}
			if strings.Contains(c, "Address_Set") {
				return strings.Contains(string(out), "10.201.0.0/16")
			}
			if strings.HasPrefix(c, "ovn-trace") {
				return strings.Contains(string(out), `output to "trtor-GR_tenant.blue_blue_node-`)
			}
			return strings.Contains(string(out), "trtor-GR_tenant.blue_blue_node-b")
		}
		for i := 0; (strings.HasPrefix(c, "ovn-nbctl") || strings.HasPrefix(c, "ovn-trace")) && i < 60 && !settled(); i++ {
			time.Sleep(500 * time.Millisecond)
			out, err = exec.Command("bash", "-c", env+"; cd "+root+"; "+c).CombinedOutput()
		}
		t.Logf("$ %s\n%s", c, out)
		switch {
		case strings.Contains(c, "# rejected"):
			if err == nil || !strings.Contains(string(out), "is invalid") {
				t.Errorf("%q should be rejected as invalid, got err=%v", c, err)
			}
			if strings.Contains(c, "bad-gateway") && !strings.Contains(string(out), "spec.layer2.defaultGatewayIPs") {
				t.Errorf("the rejection should name spec.layer2.defaultGatewayIPs")
			}
			if strings.Contains(c, "pod-reserved-conflict") && !strings.Contains(string(out), "default gateway") {
				t.Errorf("the pod rejection should name the gateway conflict")
			}
		case err != nil:
			t.Errorf("%q failed: %v", c, err)
		case strings.Contains(c, "pod/migrated-app -o jsonpath"):
			for _, want := range []string{`"migrated-apps/network-l2"`, `"ip_addresses":["192.168.100.205/24"]`, `"mac_address":"00:1a:2b:3c:4d:5e"`, `"gateway_ips":["192.168.100.2"]`, `"role":"primary"`} {
				if !strings.Contains(string(out), want) {
					t.Errorf("the pod's k8s.ovn.org/pod-networks lacks %s", want)
				}
			}
		case strings.HasPrefix(c, "kubectl get net-attach-def"):
			for _, want := range []string{"tenant-blue", "blue", "tenant-green", "green", "migrated-apps", "network-l2", "physnet-ext", "backend-l3", "ovn-kubernetes"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("NADs lack %q", want)
				}
			}
		case strings.HasPrefix(c, "kubectl get nodes"):
			if !regexp.MustCompile(`node-b\s+(\d+)\s+\[(\d+),(\d+),(\d+)\]`).MatchString(string(out)) {
				t.Errorf("node-b (three encap IPs) should show its node ID and three tunnel IDs")
			}
			if !regexp.MustCompile(`node-d\s+(\d+)\s+\[(\d+),(\d+)\]`).MatchString(string(out)) {
				t.Errorf("node-d (examples/node-multi-vtep.yaml, two encap IPs) should show its node ID and two tunnel IDs")
			}
		case strings.Contains(c, "lr-policy-list"):
			// OKEP-5377 after the append: one policy over the set of green's
			// two subnets, no pair policy left, and the reply policy (beside
			// the Layer3 topology's 1004 policies of the zone's nodes).
			got := strings.Join(strings.Fields(string(out)), " ")
			for _, want := range []string{"102 ip4.src == $" + greenSet + " && ip4.dst == $" + greenSet + " allow", "102 pkt.mark == 42 allow"} {
				if !strings.Contains(got, want) {
					t.Errorf("the Layer3 cluster router's policies lack %q:\n%s", want, out)
				}
			}
			// (EgressIP's Pod-To-Join policy, ip4.src == 10.200.0.0/16 &&
			// ip4.dst == <join subnet>, is not a pair policy.)
			if regexp.MustCompile(`ip4\.src == 10\.20[01]\.0\.0/16 && ip4\.dst == 10\.20[01]\.0\.0/16`).MatchString(got) {
				t.Errorf("the Layer3 cluster router keeps a pair policy after the append:\n%s", out)
			}
		case strings.Contains(c, "udn-enabled-default-service"):
			if !apiRoute.Match(out) {
				t.Errorf("blue's transit router does not route the API service's ClusterIP to its management port")
			}
		case strings.Contains(c, "Address_Set"):
			if !regexp.MustCompile(`name\s*: "?` + greenSet + `"?\s+addresses\s*: \["10.200.0.0/16", "10.201.0.0/16"\]`).MatchString(string(out)) {
				t.Errorf("green's subnets address set %s should hold both subnets", greenSet)
			}
		case strings.HasPrefix(c, "ovn-trace"):
			// OKEP-5094: from the layer2 switch the transit router sends the
			// packet to a node's gateway router (ECMP over the zone's nodes:
			// make run is one zone, node-d from examples/node-multi-vtep.yaml included), through the trtor- patch port.
			if !regexp.MustCompile(`output to "trtor-GR_tenant\.blue_blue_node-[a-d]", type "patch"`).MatchString(string(out)) {
				t.Errorf("ovn-trace: the packet does not leave the transit router towards a gateway router:\n%s", out)
			}
		case strings.HasPrefix(c, "ovn-nbctl"):
			for _, want := range []string{"tenant.blue_blue_transit_router", "tenant.blue_blue_ovn_layer2_switch",
				"trtor-GR_tenant.blue_blue_node-a", "trtor-GR_tenant.blue_blue_node-b", "trtor-GR_tenant.blue_blue_node-c",
				"cluster_udn_network.l2_transit_router", `"192.168.100.2/24"`} {
				if !strings.Contains(string(out), want) {
					t.Errorf("ovn-nbctl show lacks %s", want)
				}
			}
		case strings.HasPrefix(c, "kubectl get udn,cudn"):
			for _, want := range []string{"tenant-blue", "blue", "green", "network-l2", "physnet-ext", "Layer2", "Layer3", "Localnet", "True"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("kubectl get udn,cudn output lacks %q", want)
				}
			}
		}
	}
	// The Layer3 append landed and the rejected removal changed nothing.
	out, err := exec.Command("bash", "-c", env+"; kubectl get udn green -n tenant-green -o jsonpath='{.spec.layer3.subnets[*].cidr}'").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "10.200.0.0/16 10.201.0.0/16" {
		t.Errorf("green's subnets: %q (%v), want both, in order", out, err)
	}
	host := apiserverHost(t, filepath.Join(state, "kubeconfig"))

	run.stop(t, syscall.SIGTERM)
	if _, err := os.Stat(filepath.Join(state, "kubeconfig")); !os.IsNotExist(err) {
		t.Errorf("kubeconfig of a stopped control plane was left behind")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "bash", "-c", "exec 3<>/dev/tcp/"+host+" 2>/dev/null").CombinedOutput(); err == nil {
		t.Errorf("the apiserver still listens on %s after stop: %s", host, out)
	}
}

func apiserverHost(t *testing.T, kubeconfig string) string {
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if s := strings.TrimSpace(line); strings.HasPrefix(s, "server: https://") {
			return strings.Replace(strings.TrimSuffix(strings.TrimPrefix(s, "server: https://"), "/"), ":", "/", 1)
		}
	}
	t.Fatal("no server in kubeconfig")
	return ""
}

// make run ZONES=n makes n nodes, one per zone, named node-a, node-b, ...
func TestZoneNodes(t *testing.T) {
	nodes, err := zoneNodes(5)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(nodes, ","); got != "node-a,node-b,node-c,node-d,node-e" {
		t.Errorf("zone nodes = %s", got)
	}
	if _, err := zoneNodes(27); err == nil || !strings.Contains(err.Error(), "at most 26 zones") {
		t.Errorf("27 zones: err = %v", err)
	}
}
