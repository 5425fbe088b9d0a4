package datapath_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/udnkit/udnkit/dataplane/controllers/migration"
	"github.com/udnkit/udnkit/dataplane/controllers/pods"
	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/envtest/datapath/netns"
	"github.com/udnkit/udnkit/ovnk/kubevirt"
)

// kubevirtNetwork programs a Primary Layer2 network (network ID id, one
// IPv4 subnet) in every zone and starts the pod on node-c that watches a VM
// of it migrate from node-a to node-b.
func kubevirtNetwork(t testing.TB, c *datapath.Cluster, namespace string, id int, subnet string) (*network, *pod) {
	t.Helper()
	net := newNetwork(t, namespace, "kv", id, subnet)
	program(t, c, net)
	steer(t, c, net)
	client := &pod{net: net, name: "client", node: c.Node("node-c"), index: 5, tunnelID: 10}
	podPorts(t, c, client)
	startOwnPods(t, c, client)
	return net, client
}

// vmPods are VM vm's source virt-launcher pod on node-a and its target's
// on node-b: both hold the VM's addresses (index 10), one tunnel ID each.
func vmPods(c *datapath.Cluster, net *network, vm string) (src, dst *pod) {
	return &pod{net: net, name: "virt-launcher-" + vm + "-src", node: c.Node("node-a"), index: 10, tunnelID: 20},
		&pod{net: net, name: "virt-launcher-" + vm + "-dst", node: c.Node("node-b"), index: 10, tunnelID: 21}
}

// startServingVM starts the VM (startVM) with a TCP echo server on tcpPort
// and waits until client reaches it.
func startServingVM(t testing.TB, c *datapath.Cluster, net *network, name string, client *pod) *liveMigration {
	t.Helper()
	src, dst := vmPods(c, net, name)
	m := startVM(t, c, net, name, src, dst)
	stopServer, err := m.vm.ServeTCP(tcpPort)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopServer)
	settle(t, c)
	reach(t, c, client, m.vm.Addresses.IPs[0].Addr())
	return m
}

// liveMigration is a KubeVirt VM on a Primary Layer2 network and the
// steps of its live migration from its source virt-launcher pod to its
// target's, as KubeVirt takes them; both pods hold the VM's addresses.
type liveMigration struct {
	c    *datapath.Cluster
	net  *network
	name string
	// src and dst are the source and target virt-launcher pods.
	src, dst *pod
	// start is when the source pod was created (the target a second later).
	start                    time.Time
	srcLauncher, dstLauncher *datapath.Launcher
	vm                       *datapath.VM
}

// reconcile runs udnkit's pod-port and live-migration reconcilers of the
// network in every zone, one zone after another.
func (m *liveMigration) reconcile(t testing.TB) {
	t.Helper()
	for _, zone := range m.c.Nodes {
		state := apiState(t, m.c, m.net)
		reconcileAll(t, zone, podPortReconciler(t, zone, state), m.net)
		reconcileAll(t, zone, &migration.Reconciler{Client: state, OVN: ovnClient(t, zone), NodePerZone: true}, m.net)
	}
}

// startVM puts the VM's source pod, running it, into the API state every
// zone's pod-port and live-migration reconcilers read, writes its port
// and starts the VM in it. Afterwards the VM and both its pods are gone,
// as after the VM's deletion, so the test can run again.
func startVM(t testing.TB, c *datapath.Cluster, net *network, name string, src, dst *pod) *liveMigration {
	t.Helper()
	m := &liveMigration{c: c, net: net, name: name, src: src, dst: dst, start: time.Now()}
	setPods(vmPodObject(t, src, name, src.node.Name, m.start, true))
	m.reconcile(t)
	var err error
	m.srcLauncher, err = c.AddLauncher(context.Background(), src.node, net.namespace, src.name, src.port(), src.uid(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dropPod(src.net.namespace, src.name)
		dropPod(dst.net.namespace, dst.name)
		for _, zone := range c.Nodes {
			_, _ = zone.Nbctl("--if-exists", "lsp-del", src.port(), "--", "--if-exists", "lsp-del", dst.port())
		}
		_ = m.srcLauncher.Remove()
	})
	if err := m.srcLauncher.WaitInstalled(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, src.node.Logs(20))
	}
	m.vm, err = c.StartVM(m.srcLauncher, datapath.PodSpec{Namespace: net.namespace, Name: name, Annotations: src.annotation(t), NAD: net.key()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.vm.Remove() })
	return m
}

// addTarget brings the target pod up on its node with the VM's
// addresses; its port is disabled until the domain is ready.
func (m *liveMigration) addTarget(t testing.TB) {
	t.Helper()
	setPods(vmPodObject(t, m.dst, m.name, m.src.node.Name, m.start.Add(time.Second), false))
	m.reconcile(t)
	var err error
	m.dstLauncher, err = m.c.AddLauncher(context.Background(), m.dst.node, m.net.namespace, m.dst.name, m.dst.port(), m.dst.uid(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.dstLauncher.Remove() })
	if err := m.dstLauncher.WaitInstalled(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, m.dst.node.Logs(20))
	}
}

// switchOver moves the domain to the target (its tap moves), KubeVirt
// marks the target pod, and every zone at once enables the target's port
// and disables the source's (one transaction each, as OVN-Kubernetes'
// disableLiveMigrationSourceLSPOps) and runs udnkit's live-migration
// reconciler. It returns when the switch-over began.
func (m *liveMigration) switchOver(t testing.TB) time.Time {
	t.Helper()
	ctx := context.Background()
	switchStart := time.Now()
	if err := m.vm.MigrateTo(m.dstLauncher); err != nil {
		t.Fatal(err)
	}
	running := vmPodObject(t, m.dst, m.name, m.src.node.Name, m.start.Add(time.Second), true)
	running.Annotations[kubevirt.AnnotationMigrationTargetReady] = switchStart.UTC().Format(time.RFC3339)
	setPods(running)
	ports := make([]*pods.Reconciler, len(m.c.Nodes))
	for i, zone := range m.c.Nodes {
		ports[i] = podPortReconciler(t, zone, apiState(t, m.c, m.net))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(m.c.Nodes))
	for i, zone := range m.c.Nodes {
		r := &migration.Reconciler{Client: ports[i].Client, OVN: ovnClient(t, zone), NodePerZone: true}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := ports[i].Reconcile(ctx, nadRequest(m.net)); err != nil {
				errs[i] = fmt.Errorf("udnkit's pod-port reconciler in %s's zone: %w", zone.Name, err)
				return
			}
			if _, err := r.Reconcile(ctx, nadRequest(m.net)); err != nil {
				errs[i] = fmt.Errorf("udnkit's live-migration reconciler in %s's zone: %w", zone.Name, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return switchStart
}

// dropSource removes the source pod: its namespace, its object (and with
// it its port in every zone).
func (m *liveMigration) dropSource(t testing.TB) {
	t.Helper()
	if err := m.srcLauncher.Remove(); err != nil {
		t.Fatal(err)
	}
	dropPod(m.src.net.namespace, m.src.name)
	m.reconcile(t)
}

// migrationProbeInterval is how often the watching pod pings the VM
// during a migration (50 echo requests a second).
const migrationProbeInterval = 20 * time.Millisecond

// migrationTraffic is what a pod pinging a VM and holding a TCP connection
// to it saw across a live migration's steps.
type migrationTraffic struct {
	icmp netns.ProbeResult
	tcp  netns.StreamResult
	// switchStart is when the switch-over began, switched how long
	// writing it took.
	switchStart time.Time
	switched    time.Duration
}

// underTraffic takes the migration's steps (addTarget, switchOver,
// dropSource, half a second apart) while client pings the VM every 20 ms
// and holds a TCP connection to its echo server. With move false the VM
// stays put and each step is the reconciles of every zone alone
// (m.reconcile): what the same probe sees without a migration.
func (m *liveMigration) underTraffic(t testing.TB, client *pod, move bool) migrationTraffic {
	t.Helper()
	vmIP := m.vm.Addresses.IPs[0].Addr()
	probe, err := client.datapath.StartProbe(vmIP, migrationProbeInterval)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := client.datapath.OpenStream(vmIP, tcpPort, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	step := func(migrating func(testing.TB)) {
		if move {
			migrating(t)
		} else {
			m.reconcile(t)
		}
	}
	var r migrationTraffic
	time.Sleep(500 * time.Millisecond)
	step(m.addTarget)
	time.Sleep(500 * time.Millisecond)
	r.switchStart = time.Now()
	step(func(t testing.TB) { r.switchStart = m.switchOver(t) })
	r.switched = time.Since(r.switchStart)
	time.Sleep(500 * time.Millisecond)
	step(m.dropSource)
	time.Sleep(time.Second)
	r.tcp = stream.Stop()
	if r.icmp, err = probe.Stop(300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	return r
}
