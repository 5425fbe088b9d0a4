package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/cmd/udnkit/app"
	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// TestNoInformerStartsAfterReady: once make run's manager has synced its
// caches, a Primary Layer2 UDN and a pod on it (admission, NAD and IDs, the
// pod's addresses, the dataplane's switch and port) read only informers that
// were already running. An informer first asked for later makes its first
// reader (the first network after a start) wait for its initial sync, a
// second against a real apiserver.
func TestNoInformerStartsAfterReady(t *testing.T) {
	testenv.Real(t, "kube-apiserver and ovsdb-server")
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, err := envtest.Start(envtest.Options{Webhooks: true, ServiceClusterIPRange: serviceCIDRs})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	ovn, err := ovsdbserver.StartLocal(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ovn.Stop()
	for _, n := range localNodes {
		if err := addChassis(ovn.SB, n, false); err != nil {
			t.Fatal(err)
		}
	}
	stop, _, mgrs, err := startManagers(ctx, env, []zoneOVN{{"", ovn}})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := env.WaitForWebhookServer(ctx); err != nil {
		t.Fatal(err)
	}
	if err := waitForManagers(ctx, mgrs); err != nil {
		t.Fatal(err)
	}
	for _, n := range localNodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name,
			Annotations: map[string]string{ovnk.AnnotationNodeEncapIPs: n.encapIPs, ovnk.AnnotationNodeChassisID: n.chassisID()}}}
		if err := env.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
	}

	ns := "late-informers"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{ovnk.LabelPrimaryUserDefinedNetwork: ""}}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, testobj.MakeUDN(ns, "net").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj()); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pod-a"},
		Spec: corev1.PodSpec{NodeName: localNodes[0].name, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	nad := ns + "/net"
	if err := testenv.Poll("pod-a's "+ovnk.AnnotationPodNetworks, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		n, err := podannotation.DecodePodNetwork(pod.Annotations, nad)
		if err == nil && n == nil {
			err = errors.New("no entry for " + nad)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	port := ovnk.PodPortName(nad, ns, pod.Name)
	if err := testenv.Poll("the dataplane's port "+port, func() error {
		out, err := ovsdbserver.Command("ovn-nbctl", "--db="+ovn.NB.Address(), "--bare", "--columns=name", "find", "Logical_Switch_Port", "name="+port).Output()
		if err == nil && strings.TrimSpace(string(out)) == "" {
			err = errors.New("not there yet")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// The other controllers' reconciles of the network settle.
	time.Sleep(time.Second)
	for i, m := range mgrs {
		if late := app.LateInformers(m); len(late) > 0 {
			t.Errorf("manager %d started informers after it was ready (their first readers waited for their sync): %s", i, strings.Join(late, "; "))
		}
	}
}
