// Command udnkit-local is `make run`: it starts a local control plane
// (kube-apiserver + etcd from the envtest cache), installs udnkit's CRDs and
// the IPAMClaim and NetworkAttachmentDefinition CRDs, writes an admin
// kubeconfig to .udnkit/kubeconfig at the repository root, prints a line
// containing "udnkit is ready" and the kubectl commands to try, and runs until
// SIGINT or SIGTERM, when it stops everything it started.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest"
)

func main() {
	root := flag.String("repo-root", ".", "repository root, where examples/ is")
	state := flag.String("state-dir", "", "where the kubeconfig and the kubectl link go (default <repo-root>/.udnkit)")
	attach := flag.Bool("attach-output", false, "stream the apiserver's and etcd's logs")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *root, *state, *attach, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "udnkit-local: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, root, stateDir string, attach bool, out io.Writer) error {
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	if stateDir == "" {
		stateDir = filepath.Join(root, ".udnkit")
	}
	if stateDir, err = filepath.Abs(stateDir); err != nil {
		return err
	}
	kubeconfig := filepath.Join(stateDir, "kubeconfig")
	// A kubeconfig left by an earlier run points at a dead apiserver.
	_ = os.Remove(kubeconfig)

	fmt.Fprintln(out, "starting kube-apiserver and etcd ...")
	started := time.Now()
	env, err := envtest.Start(envtest.Options{AttachOutput: attach})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "stopping kube-apiserver and etcd ...")
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "udnkit-local: stopping: %v\n", err)
		}
		_ = os.Remove(kubeconfig)
		fmt.Fprintln(out, "stopped")
	}()

	readyCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := env.WaitForAPI(readyCtx); err != nil {
		return err
	}
	// The CRDs are established once their kinds can be listed.
	if err := env.Client.List(readyCtx, &v1.UserDefinedNetworkList{}); err != nil {
		return fmt.Errorf("listing UserDefinedNetworks: %w", err)
	}
	if err := env.Client.List(readyCtx, &v1.ClusterUserDefinedNetworkList{}); err != nil {
		return fmt.Errorf("listing ClusterUserDefinedNetworks: %w", err)
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
udnkit is ready: kube-apiserver v%s at %s (started in %.1fs)
kubeconfig: %s

In another terminal, from %s:
  export KUBECONFIG=%s PATH=%s:$PATH
  kubectl apply -f examples/udn-layer2-primary.yaml
  kubectl apply -f examples/udn-layer3-primary.yaml
  kubectl apply -f examples/cudn-layer2-predefined-addresses.yaml
  kubectl apply -f examples/cudn-localnet.yaml
  kubectl get udn,cudn -A
  kubectl apply -f examples/udn-layer3-append.yaml                 # append a Layer3 subnet
  kubectl apply -f examples/invalid/udn-layer2-bad-gateway.yaml     # rejected, naming the fields
  kubectl apply -f examples/invalid/udn-layer3-remove-subnet.yaml   # rejected: subnets are append-only

Ctrl-C stops the control plane.
`, version, env.Config.Host, time.Since(started).Seconds(), kubeconfig, root, kubeconfig, binDir)

	<-ctx.Done()
	fmt.Fprintln(out, "\nsignal received")
	return nil
}
