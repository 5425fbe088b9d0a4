// Command udnkit-local is `make run`: the whole of udnkit on one machine. It
// starts a local control plane (kube-apiserver + etcd from the envtest cache)
// with the CRDs, webhook configurations and ValidatingAdmissionPolicies the
// chart installs; local OVN Northbound and Southbound ovsdb-servers and
// ovn-northd (unix sockets .udnkit/ovnnb.sock and .udnkit/ovnsb.sock); the
// manager with every component and preconfigured-udn-addresses-enable on; and
// three Nodes (one with three VTEPs). It writes an admin kubeconfig to
// .udnkit/kubeconfig, prints a line containing "udnkit is ready" and the
// commands to try, and runs until SIGINT or SIGTERM, when it stops everything
// it started.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/udnkit/udnkit/cmd/udnkit/app"
	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/ovnk"
)

func main() {
	root := flag.String("repo-root", ".", "repository root, where examples/ is")
	state := flag.String("state-dir", "", "where the kubeconfig, the kubectl link, the OVN sockets and the manager log go (default <repo-root>/.udnkit)")
	attach := flag.Bool("attach-output", false, "stream the apiserver's and etcd's logs")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *root, *state, *attach, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "udnkit-local: %v\n", err)
		os.Exit(1)
	}
}

// localNodes are the Nodes make run creates: no kubelet runs, so they are
// plain objects; the nodes reconciler gives them IDs and tunnel IDs.
var localNodes = []struct {
	name     string
	encapIPs string
}{
	{"node-a", `["172.18.0.2"]`},
	{"node-b", `["172.18.0.3","172.18.0.4","172.18.0.5"]`},
	{"node-c", `["172.18.0.6"]`},
}

func run(ctx context.Context, root, stateDir string, attach bool, out io.Writer) (err error) {
	root, err = filepath.Abs(root)
	if err != nil {
		return err
	}
	if stateDir == "" {
		stateDir = filepath.Join(root, ".udnkit")
	}
	if stateDir, err = filepath.Abs(stateDir); err != nil {
		return err
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return err
	}
	kubeconfig := filepath.Join(stateDir, "kubeconfig")
	// A kubeconfig left by an earlier run points at a dead apiserver.
	_ = os.Remove(kubeconfig)
	started := time.Now()

	// The manager's log goes to a file: the terminal is for the quickstart.
	logFile, err := os.Create(filepath.Join(stateDir, "manager.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile)))

	fmt.Fprintln(out, "starting kube-apiserver and etcd ...")
	env, err := envtest.Start(envtest.Options{AttachOutput: attach, Webhooks: true})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "stopping kube-apiserver and etcd ...")
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "udnkit-local: stopping the control plane: %v\n", err)
		}
		_ = os.Remove(kubeconfig)
		fmt.Fprintln(out, "stopped")
	}()

	fmt.Fprintln(out, "starting OVN Northbound/Southbound ovsdb-server and ovn-northd ...")
	ovn, err := ovsdbserver.StartLocal(ctx, stateDir)
	if err != nil {
		return fmt.Errorf("starting OVN (make run installs Debian's ovn-central first): %w", err)
	}
	defer func() {
		fmt.Fprintln(out, "stopping OVN ...")
		ovn.Stop()
	}()

	readyCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := env.WaitForAPI(readyCtx); err != nil {
		return err
	}

	fmt.Fprintln(out, "starting the udnkit manager (every component) ...")
	opts := app.NewOptions()
	fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
	opts.BindFlags(fs)
	for name, value := range map[string]string{
		"controllers":                        strings.Join(opts.Names(), ","),
		"metrics-bind-address":               "0",
		"health-probe-bind-address":          "0",
		"preconfigured-udn-addresses-enable": "true",
		"ovn-nb-address":                     ovn.NB.Address(),
		"ovn-sb-address":                     ovn.SB.Address(),
	} {
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("--%s: %w", name, err)
		}
	}
	webhookOpts := env.Webhook.WebhookServerOptions()
	opts.WebhookServer = &webhookOpts
	mgrCtx, stopManager := context.WithCancel(ctx)
	mgr, err := app.New(mgrCtx, env.Config, opts)
	if err != nil {
		stopManager()
		return err
	}
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	defer func() {
		fmt.Fprintln(out, "stopping the manager ...")
		stopManager()
		if err := <-mgrDone; err != nil {
			fmt.Fprintf(os.Stderr, "udnkit-local: manager: %v\n", err)
		}
	}()
	if err := env.WaitForWebhookServer(readyCtx); err != nil {
		return err
	}
	if !mgr.GetCache().WaitForCacheSync(readyCtx) {
		return errors.New("the manager's caches did not sync")
	}

	for _, n := range localNodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name,
			Annotations: map[string]string{ovnk.AnnotationNodeEncapIPs: n.encapIPs}}}
		if err := env.Client.Create(readyCtx, node); err != nil {
			return fmt.Errorf("creating node %s: %w", n.name, err)
		}
	}

	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	binDir := filepath.Join(stateDir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	link := filepath.Join(binDir, "kubectl")
	_ = os.Remove(link)
	if err := os.Symlink(filepath.Join(env.AssetsDir, "kubectl"), link); err != nil {
		return err
	}
	version, _ := envtest.KubernetesVersion()

	fmt.Fprintf(out, `
udnkit is ready: kube-apiserver v%s at %s, OVN at %s and %s (started in %.1fs)
kubeconfig: %s
manager log: %s

In another terminal, from %s:
  export KUBECONFIG=%s PATH=%s:$PATH
  kubectl apply -f examples/udn-layer2-primary.yaml
  kubectl apply -f examples/udn-layer3-primary.yaml
  kubectl apply -f examples/cudn-layer2-predefined-addresses.yaml
  kubectl apply -f examples/cudn-localnet.yaml
  kubectl apply -f examples/cudn-layer3-secondary.yaml
  kubectl apply -f examples/node-multi-vtep.yaml
  kubectl wait -n tenant-blue udn/blue --for=condition=NetworkCreated --timeout=60s
  kubectl get udn,cudn -A
  kubectl get net-attach-def -A
  kubectl get nodes -o custom-columns='NAME:.metadata.name,NODE-ID:.metadata.annotations.k8s\.ovn\.org/node-id,TUNNEL-IDS:.metadata.annotations.k8s\.ovn\.org/node-transit-switch-port-tunnel-ids,L2-TOPOLOGY:.metadata.annotations.k8s\.ovn\.org/layer2-topology-version'
  kubectl apply -f examples/udn-layer3-append.yaml                 # append a Layer3 subnet
  kubectl apply -f examples/invalid/udn-layer2-bad-gateway.yaml     # rejected, naming the fields
  kubectl apply -f examples/invalid/udn-layer3-remove-subnet.yaml   # rejected: subnets are append-only
  kubectl apply -f examples/pod-predefined-address.yaml
  kubectl wait -n migrated-apps pod/migrated-app --for=jsonpath='{.metadata.annotations.k8s\.ovn\.org/pod-networks}' --timeout=60s
  kubectl get -n migrated-apps pod/migrated-app -o jsonpath='{.metadata.annotations.k8s\.ovn\.org/pod-networks}{"\n"}'
  kubectl apply -f examples/invalid/pod-reserved-conflict.yaml     # rejected: the gateway address
  ovn-nbctl --db=%s show
  ovn-nbctl --db=%s lr-policy-list tenant.green_green_ovn_cluster_router
  ovn-nbctl --db=%s --columns=name,addresses list Address_Set

Ctrl-C stops everything.
`, version, env.Config.Host, ovn.NB.Address(), ovn.SB.Address(), time.Since(started).Seconds(),
		kubeconfig, logFile.Name(), root, kubeconfig, binDir, ovn.NB.Address(), ovn.NB.Address(), ovn.NB.Address())

	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "\nsignal received")
		return nil
	case err := <-mgrDone:
		mgrDone <- nil
		return fmt.Errorf("the manager stopped: %w", err)
	}
}
