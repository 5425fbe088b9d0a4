package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// stateEnv tags every process a make run starts (they inherit it): the next
// run finds what a killed run left by it.
const stateEnv = "UDNKIT_LOCAL_STATE"

// claimState locks the state directory for this run and removes what an
// earlier run in it left behind when it did not stop (kill -9, a crash):
// every process tagged with the directory (stateEnv), OVN daemons serving
// databases in it, and the temporary directories of its apiserver and
// etcd. It then tags this process, so that what it starts is found the same
// way. (The nodes of make run ZONES=n are datapath.Start's to sweep.)
func claimState(stateDir string) (release func(), err error) {
	lock, err := os.Create(filepath.Join(stateDir, "lock"))
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("another udnkit-local runs with state directory %s (its lock %s is held)", stateDir, lock.Name())
	}
	tag := stateEnv + "=" + stateDir
	cmdlines, err := datapath.KillWhere("", tag)
	// ovsdb-server and ovn-northd name their databases and sockets
	// (ovnnb.sock, zone-<node>/ovnsb.sock) on their command lines.
	for _, path := range []string{filepath.Join(stateDir, "ovn"), filepath.Join(stateDir, "zone-")} {
		if err == nil {
			_, err = datapath.KillWhere(path, "")
		}
	}
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	// controller-runtime's envtest keeps the apiserver's certificates and
	// etcd's data in os.TempDir()/k8s_test_framework_*.
	tmp := filepath.Join(os.TempDir(), "k8s_test_framework_")
	for _, args := range cmdlines {
		for _, a := range args {
			_, v, _ := strings.Cut(a, "=")
			if !strings.HasPrefix(v, tmp) {
				continue
			}
			rel, _ := filepath.Rel(os.TempDir(), v)
			_ = os.RemoveAll(filepath.Join(os.TempDir(), strings.Split(rel, string(filepath.Separator))[0]))
		}
	}
	if err := os.Setenv(stateEnv, stateDir); err != nil {
		_ = lock.Close()
		return nil, err
	}
	return func() { _ = lock.Close() }, nil
}

// zoneNodes are the nodes of `make run ZONES=n`: node-a, node-b, ...
func zoneNodes(n int) ([]string, error) {
	if n > 26 {
		return nil, fmt.Errorf("--zones=%d: at most 26 zones (node-a to node-z)", n)
	}
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("node-%c", 'a'+i))
	}
	return names, nil
}

// linkZones points <state-dir>/zone-<node> at each node's zone directory
// (its ovnnb.sock and ovnsb.sock), replacing what an earlier run left there.
func linkZones(stateDir string, c *datapath.Cluster) error {
	for _, n := range c.Nodes {
		link := filepath.Join(stateDir, "zone-"+n.Name)
		if err := os.RemoveAll(link); err != nil {
			return err
		}
		if err := os.Symlink(filepath.Dir(n.Zone.NB.File()), link); err != nil {
			return err
		}
	}
	return nil
}

// ovnkNodes creates the Nodes as ovnkube-node publishes them on the
// cluster's nodes (datapath.OVNKNode): the chassis each node's
// ovn-controller registered, its encap IP, its gateway
// (l3-gateway-config) and its InternalIP.
func ovnkNodes(ctx context.Context, c client.Client, cluster *datapath.Cluster) error {
	for _, n := range cluster.Nodes {
		node, err := datapath.OVNKNode(n)
		if err != nil {
			return err
		}
		if err := publishNode(ctx, c, node); err != nil {
			return err
		}
	}
	return nil
}

// publishNode creates node and then sets its status (which a create
// ignores) by a merge patch: the managers annotate a new Node at once (its
// host subnets), so an update carrying the create's resourceVersion could
// conflict, and the patch has no precondition to fail.
func publishNode(ctx context.Context, c client.Client, node *corev1.Node) error {
	status := node.Status
	if err := c.Create(ctx, node); err != nil {
		return fmt.Errorf("creating node %s: %w", node.Name, err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Status = status
	if err := c.Status().Patch(ctx, node, patch); err != nil {
		return fmt.Errorf("node %s's addresses: %w", node.Name, err)
	}
	return nil
}

// demoPod is one of the quickstart's pods: its node and its network
// namespace, configured from k8s.ovn.org/pod-networks.
type demoPod struct {
	name string
	node *datapath.Node
	dp   *datapath.Pod
}

// demo is what make run ZONES=n sets up for the quickstart: a Primary
// Layer2 UDN (examples/udn-layer2-primary.yaml's) and a pod on each of the
// first two nodes.
type demo struct {
	namespace string
	network   *datapath.Network
	pods      []*demoPod
	// steps are when each step of startPods ended, in order.
	steps []step
}

// step is a named point of startPods' progress.
type step struct {
	name string
	at   time.Time
}

func (d *demo) step(name string) { d.steps = append(d.steps, step{name, time.Now()}) }

// demoNamespace and demoUDN are the UDN examples/udn-layer2-primary.yaml
// creates.
const (
	demoNamespace = "tenant-blue"
	demoUDN       = "blue"
	demoManifest  = "examples/udn-layer2-primary.yaml"
)

// applyFile creates every object of a manifest (already existing ones are
// left as they are).
func applyFile(ctx context.Context, c client.Client, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := c.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%s: %s %s: %w", file, u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// poll runs f every 10 ms until it returns nil or ctx ends.
func poll(ctx context.Context, what string, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// startPods makes, as OVN-Kubernetes and its CNI would, pod-a on the first
// node and pod-b on the second network namespaces on the real datapath on
// the Primary Layer2 UDN namespace/udn (applied by the caller): it creates
// the Pods and then, as each node's CNI does and both at once, waits for
// the pod's k8s.ovn.org/pod-networks, configures its namespace from the
// annotation only, bound to its port by iface-id, and waits for
// ovn-installed (ovn-controller has bound udnkit's port of the pod and
// installed its flows). It returns once pod-a reaches pod-b, with an echo
// request every interval.
func startPods(ctx context.Context, c client.Client, cluster *datapath.Cluster, namespace, udn string, interval time.Duration) (*demo, error) {
	d := &demo{namespace: namespace}
	for i, name := range []string{"pod-a", "pod-b"} {
		node := cluster.Nodes[i%len(cluster.Nodes)]
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
		if err := c.Create(ctx, pod); err != nil {
			return nil, fmt.Errorf("creating pod %s/%s: %w", namespace, name, err)
		}
		d.pods = append(d.pods, &demoPod{name: name, node: node})
	}
	errs := make([]error, len(d.pods))
	networks := make([]*datapath.Network, len(d.pods))
	var wg sync.WaitGroup
	for i, p := range d.pods {
		wg.Go(func() { networks[i], errs[i] = p.install(ctx, c, cluster, namespace, udn) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.network = networks[0]
	d.step("pods-installed")
	// The first packets of a new path are lost while ovn-controller
	// installs its flows.
	a, b := d.pods[0], d.pods[1]
	if err := a.dp.ReachEvery(b.dp.IP(false), 30*time.Second, interval); err != nil {
		return nil, fmt.Errorf("%w\n%s%s", err, a.node.Logs(10), b.node.Logs(10))
	}
	d.step("first-reply")
	return d, nil
}

// install is the pod's CNI ADD: once the pod's k8s.ovn.org/pod-networks
// holds the network's entry, it reads the network's NAD (its name, subnets,
// network ID and MTU) and configures the pod's namespace on its node.
func (p *demoPod) install(ctx context.Context, c client.Client, cluster *datapath.Cluster, namespace, udn string) (*datapath.Network, error) {
	key := namespace + "/" + udn
	var pod corev1.Pod
	if err := poll(ctx, "pod "+p.name+"'s "+ovnk.AnnotationPodNetworks, func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: p.name}, &pod); err != nil {
			return err
		}
		n, err := podannotation.DecodePodNetwork(pod.Annotations, key)
		if err == nil && n == nil {
			err = errors.New("no entry for " + key + " yet")
		}
		return err
	}); err != nil {
		return nil, err
	}
	// The pod's addresses may come before the NAD its CNI is called with
	// (multus reads the NAD; udnkit allocates from the network's spec).
	var nad nadv1.NetworkAttachmentDefinition
	var ids ovnk.NetworkIDs
	if err := poll(ctx, "the NAD "+key+" with its network ID", func() error {
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: udn}, &nad)
		if err == nil {
			ids, err = ovnk.DecodeNetworkIDs(nad.Annotations)
		}
		if err == nil && !ids.HasID {
			err = errors.New("no " + ovnk.AnnotationNetworkID + " yet")
		}
		return err
	}); err != nil {
		return nil, err
	}
	conf, err := netconf.Parse(nad.Spec.Config)
	if err != nil {
		return nil, fmt.Errorf("the NAD %s: %w", key, err)
	}
	subnets, err := ovnk.ParsePrefixes(conf.Subnets)
	if err != nil {
		return nil, fmt.Errorf("the NAD %s's subnets: %w", key, err)
	}
	p.dp, err = cluster.AddPod(ctx, p.node, datapath.PodSpec{Namespace: namespace, Name: p.name, Annotations: pod.Annotations, NAD: key,
		Port: ovnk.PodPortName(key, namespace, p.name), UID: string(pod.UID), MTU: int(conf.MTU)})
	if err != nil {
		return nil, err
	}
	return &datapath.Network{Name: conf.Name, NAD: key, Topology: "layer2", Subnets: subnets, ID: ids.ID}, nil
}

// pingScript is .udnkit/bin/udnkit-ping: `udnkit-ping NAMESPACE/POD
// PING-ARGS...` runs ping (iputils, from the root filesystem make ovn
// provisions) in the pod's network namespace.
func (d *demo) pingScript() string {
	r := filepath.Join(ovsdbserver.Dir(), "rootfs")
	var b strings.Builder
	fmt.Fprintf(&b, `#!/bin/sh
# udnkit-ping NAMESPACE/POD PING-ARGS...: ping from a pod of make run ZONES=n
# (a network namespace on its node's br-int). Written by udnkit-local for
# this run; needs root, as ip netns exec does.
R='%s'
case "$1" in
`, r)
	var names []string
	for _, p := range d.pods {
		fmt.Fprintf(&b, "%s/%s) ns='%s' ;;\n", d.namespace, p.name, p.dp.Netns)
		names = append(names, d.namespace+"/"+p.name)
	}
	fmt.Fprintf(&b, `*) echo "udnkit-ping: no pod '$1' (the pods: %s)" >&2; exit 2 ;;
esac
shift
exec ip netns exec "$ns" "$R/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "$R/usr/lib/x86_64-linux-gnu" --argv0 ping "$R/bin/ping" "$@"
`, strings.Join(names, " "))
	return b.String()
}

// pingCommands are the quickstart's pings: pod-a to pod-b in each family,
// then pod-a to the external host.
func (d *demo) pingCommands() []string {
	a, b := d.pods[0], d.pods[1]
	var cmds []string
	for _, v6 := range []bool{false, true} {
		if ip := b.dp.IP(v6); ip.IsValid() {
			cmds = append(cmds, fmt.Sprintf("udnkit-ping %s/%s -c3 %s", d.namespace, a.name, ip))
		}
	}
	return append(cmds, fmt.Sprintf("udnkit-ping %s/%s -c3 %s", d.namespace, a.name, datapath.ExternalIP))
}

// startEgress installs on breth0 the flows ovnkube-node's shared gateway
// keeps there for the network's gateway routers, whose external side udnkit
// writes from the nodes' l3-gateway-config (datapath.SteerGateways: it
// waits for their localnet ports), and returns once pod-a reaches the
// external host through its own node's gateway router.
func (d *demo) startEgress(ctx context.Context, cluster *datapath.Cluster) error {
	if err := cluster.SteerGateways(ctx, ovnk.DefaultClusterConfig(), d.network); err != nil {
		return fmt.Errorf("egress: %w", err)
	}
	a := d.pods[0]
	if err := a.dp.Reach(datapath.ExternalIP, 30*time.Second); err != nil {
		return fmt.Errorf("egress: %w\n%s", err, a.node.Logs(10))
	}
	return nil
}

// run runs a quickstart command with binDir first on PATH.
func runShell(binDir, command string) (string, error) {
	cmd := exec.Command("sh", "-c", command)
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// describe is the line naming a pod, its node and its addresses.
func (p *demoPod) describe(namespace string) string {
	var ips []string
	for _, a := range p.dp.Addresses.IPs {
		ips = append(ips, a.Addr().String())
	}
	return fmt.Sprintf("%s/%s on %s (%s)", namespace, p.name, p.node.Name, strings.Join(ips, ", "))
}

// readyZones sets up the quickstart's UDN and pods on the cluster, checks
// the first printed ping and prints the quickstart of make run ZONES=n.
func readyZones(ctx context.Context, out io.Writer, env *envtest.Environment, cluster *datapath.Cluster, root, kubeconfig, binDir, logName, version string, started time.Time) error {
	fmt.Fprintf(out, "applying %s and starting pod-a on %s and pod-b on %s ...\n", demoManifest, cluster.Nodes[0].Name, cluster.Nodes[1%len(cluster.Nodes)].Name)
	if err := applyFile(ctx, env.Client, filepath.Join(root, demoManifest)); err != nil {
		return err
	}
	d, err := startPods(ctx, env.Client, cluster, demoNamespace, demoUDN, 200*time.Millisecond)
	if err != nil {
		return err
	}
	if err := d.startEgress(ctx, cluster); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(binDir, "udnkit-ping"), []byte(d.pingScript()), 0o755); err != nil {
		return err
	}
	pings := d.pingCommands()
	first, err := runShell(binDir, pings[0])
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", pings[0], err, first)
	}
	elapsed := time.Since(started).Seconds()
	zoneA := filepath.Join(filepath.Dir(kubeconfig), "zone-"+cluster.Nodes[0].Name)
	var pods []string
	for _, p := range d.pods {
		pods = append(pods, "  "+p.describe(d.namespace))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `
udnkit is ready: kube-apiserver v%s at %s; %d nodes, each its own OVN zone (%s/zone-<node>/ovnnb.sock, ovnsb.sock) with ovs-vswitchd and ovn-controller, Geneve between them (started in %.1fs)
kubeconfig: %s
manager log: %s
%s/%s (%s) is applied; its pods are network namespaces configured only from k8s.ovn.org/pod-networks:
%s

$ %s
%s
In another terminal, from %s, as root (the pods are network namespaces):
  export KUBECONFIG=%s PATH=%s:$PATH
  kubectl get udn -n %s
  kubectl get pods -n %s -o custom-columns='NAME:.metadata.name,NODE:.spec.nodeName,POD-NETWORKS:.metadata.annotations.k8s\.ovn\.org/pod-networks'
  kubectl get nodes -o custom-columns='NAME:.metadata.name,NODE-ID:.metadata.annotations.k8s\.ovn\.org/node-id,CHASSIS:.metadata.annotations.k8s\.ovn\.org/node-chassis-id,ENCAP-IPS:.metadata.annotations.k8s\.ovn\.org/node-encap-ips'
`, version, env.Config.Host, len(cluster.Nodes), filepath.Dir(kubeconfig), elapsed, kubeconfig, logName,
		demoNamespace, demoUDN, demoManifest, strings.Join(pods, "\n"), pings[0], strings.TrimRight(first, "\n")+"\n",
		root, kubeconfig, binDir, demoNamespace, demoNamespace)
	for i, p := range pings {
		comment := ""
		switch {
		case i == 0:
			comment = fmt.Sprintf("   # %s on %s to %s on %s, over Geneve", d.pods[0].name, d.pods[0].node.Name, d.pods[1].name, d.pods[1].node.Name)
		case i == len(pings)-1:
			comment = fmt.Sprintf("   # to the external host, out through %s's gateway router (SNAT to %s)", d.pods[0].node.Name, d.pods[0].node.UnderlayIP)
		}
		fmt.Fprintf(&b, "  %s%s\n", p, comment)
	}
	fmt.Fprintf(&b, `  ovn-sbctl --db=unix:%s/ovnsb.sock show
  ovn-nbctl --db=unix:%s/ovnnb.sock show

Ctrl-C stops everything.
`, zoneA, zoneA)
	_, err = io.WriteString(out, b.String())
	return err
}
