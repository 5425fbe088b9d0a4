package udnkitchart_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/cmd/udnkit/app"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/envtest/manager"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testmgr"
	"github.com/udnkit/udnkit/internal/testobj"
)

// A default install comes up where OVN is not reachable: the manager, run
// with the Deployment's default arguments (leader election, every component,
// the default OVN unix sockets, which nothing serves here), stays up; its
// webhooks admit a UDN and reject an overlapping one; the NAD reconciler
// writes the admitted network's NetworkAttachmentDefinition; the dataplane
// reports that it waits for OVN (udnkit_ovn_connected{db="nb"} 0 and a
// failing /readyz/dataplane) while the kubelet's readiness path stays ok.
// Then, with no OVN address at all, the dataplane is idle and says so.
func TestDefaultInstallComesUpWithoutOVN(t *testing.T) {
	testenv.Real(t, "kube-apiserver")
	objs, err := render(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	args := managerArgs(t, objs)
	nbSocket := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--ovn-nb-address=unix:"); ok {
			nbSocket = v
		}
	}
	if nbSocket == "" {
		t.Fatalf("the default arguments have no unix: --ovn-nb-address: %v", args)
	}
	if c, err := net.Dial("unix", nbSocket); err == nil {
		_ = c.Close()
		t.Skipf("an OVN Northbound database serves %s on this machine; this test needs it unreachable", nbSocket)
	}
	env, err := envtest.Start(envtest.Options{Webhooks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	ctx := context.Background()
	// The leader-election Lease lives in the release namespace.
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}); err != nil {
		t.Fatal(err)
	}
	probe := readinessPath(t, objs)

	health, stop := startManager(t, env, args)
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + health + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	testenv.Eventually(t, "the dataplane reports the unreachable Northbound database", func() error {
		return answers(get, "/readyz/"+app.DataplaneCheck, http.StatusInternalServerError, "OVN NB database unix:"+nbSocket+": not connected")
	})
	testenv.Eventually(t, `udnkit_ovn_connected{db="nb"} is 0`, func() error {
		if v, ok := gauge(t, "udnkit_ovn_connected", "nb"); !ok || v != 0 {
			return fmt.Errorf("udnkit_ovn_connected{db=\"nb\"} = %v (exported: %v)", v, ok)
		}
		return nil
	})
	// Ready once the informers have synced, OVN or not.
	testenv.Eventually(t, "the kubelet's readiness path "+probe+" answers 200", func() error {
		if code, body := get(probe); code != http.StatusOK {
			return fmt.Errorf("%d: %s", code, body)
		}
		return nil
	})

	c := env.Client
	ns := testobj.MakeNamespace("tenant-blue").Primary().Obj()
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	udn := func(name string, subnet udnv1.CIDR) *udnv1.UserDefinedNetwork {
		return testobj.MakeUDN(ns.Name, name).Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, subnet)).Obj()
	}
	err = c.Create(ctx, udn("overlapping", "10.244.8.0/24"))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "overlaps the cluster default network subnet 10.244.0.0/16") {
		t.Errorf("a UDN overlapping the default --cluster-subnets: err = %v", err)
	}
	if err := c.Create(ctx, udn("blue", "10.100.0.0/16")); err != nil {
		t.Fatalf("a valid UDN is refused: %v", err)
	}
	testenv.Eventually(t, "the NAD reconciler writes the NetworkAttachmentDefinition", func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "blue"}, &nadv1.NetworkAttachmentDefinition{})
	})
	if code, body := get("/readyz/" + app.DataplaneCheck); code != http.StatusInternalServerError {
		t.Errorf("the dataplane check answers %d while OVN is unreachable: %s", code, body)
	}
	stop()

	// No OVN address at all: the dataplane is idle and says so; the webhooks
	// still work. (Only components that register no controllers: controller
	// names are unique per process.)
	health, stop = startManager(t, env, append(args, "--controllers=admission,dataplane", "--ovn-nb-address=", "--ovn-sb-address="))
	testenv.Eventually(t, "the idle dataplane says why", func() error {
		return answers(get, "/readyz/"+app.DataplaneCheck, http.StatusInternalServerError, "idle: no --ovn-nb-address and --ovn-sb-address configured")
	})
	// Ready once this manager's informers have synced, as in the first run.
	testenv.Eventually(t, "the kubelet's readiness path "+probe+" answers 200 with an idle dataplane", func() error {
		if code, body := get(probe); code != http.StatusOK {
			return fmt.Errorf("%d: %s", code, body)
		}
		return nil
	})
	if err := c.Create(ctx, udn("overlapping", "10.244.8.0/24")); !apierrors.IsInvalid(err) {
		t.Errorf("with an idle dataplane an overlapping UDN is not refused: %v", err)
	}
	stop()
}

// startManager runs the manager with args (the chart's) on loopback ports and
// the webhook address the environment's webhook configurations call. It
// returns the health probe address and stop, which fails the test if the
// manager had exited on its own.
func startManager(t *testing.T, env *envtest.Environment, args []string) (health string, stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	health = l.Addr().String()
	_ = l.Close()
	ctx := context.Background()
	mgr, err := manager.New(ctx, env.Config,
		append(args[:len(args):len(args)], "--metrics-bind-address=0", "--health-probe-bind-address="+health), manager.ServeWebhooks(env))
	if err != nil {
		t.Fatalf("the manager does not build: %v", err)
	}
	run := testmgr.Run(ctx, mgr)
	if err := manager.WaitForWebhooks(ctx, env); err != nil {
		_ = run.Stop()
		t.Fatal(err)
	}
	return health, func() {
		if exited, err := run.Exited(); exited {
			t.Errorf("the manager exited on its own: %v", err)
		}
		if err := run.Stop(); err != nil {
			t.Errorf("the manager stopped with %v", err)
		}
	}
}

// gauge reads one gauge of the manager's metrics registry by its db label.
func gauge(t *testing.T, name, db string) (float64, bool) {
	t.Helper()
	m, ok := testenv.Metric(t, name, map[string]string{"db": db})
	return m.GetGauge().GetValue(), ok
}

// answers says whether get(path) answers code with a body containing want.
func answers(get func(string) (int, string), path string, code int, want string) error {
	if got, body := get(path); got != code || !strings.Contains(body, want) {
		return fmt.Errorf("%s answers %d %q, want %d with %q", path, got, body, code, want)
	}
	return nil
}
