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
	"github.com/udnkit/udnkit/ovnk/kubevirt"
)

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
func (m *liveMigration) reconcile(t *testing.T) {
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
func startVM(t *testing.T, c *datapath.Cluster, net *network, name string, src, dst *pod) *liveMigration {
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
func (m *liveMigration) addTarget(t *testing.T) {
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
func (m *liveMigration) switchOver(t *testing.T) time.Time {
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
func (m *liveMigration) dropSource(t *testing.T) {
	t.Helper()
	if err := m.srcLauncher.Remove(); err != nil {
		t.Fatal(err)
	}
	dropPod(m.src.net.namespace, m.src.name)
	m.reconcile(t)
}
