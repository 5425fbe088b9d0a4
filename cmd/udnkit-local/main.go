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
//
// With --zones=n (make run ZONES=n, root) the nodes are real instead:
// envtest/datapath's cluster, per node a network namespace with ovs-vswitchd
// (userspace datapath) and ovn-controller bound to the node's own OVN zone,
// Geneve between them; the Nodes carry what ovnkube-node publishes (the
// chassis each ovn-controller registered, the encap IP, the gateway's
// l3-gateway-config, from which udnkit writes the gateway routers' external
// side); a dataplane manager runs per zone. It applies
// examples/udn-layer2-primary.yaml, makes two pods on different nodes
// network namespaces configured from udnkit's k8s.ovn.org/pod-networks,
// writes OVN-Kubernetes' share (the pods' ports) and ovnkube-node's (breth0's
// flows) with envtest/datapath's fixture, pings
// one pod from the other and prints the command (.udnkit/bin/udnkit-ping)
// and what it printed, with pings to the other family and to the external
// host (203.0.113.1, out through the pod's own node).
//
// A run that did not stop (kill -9) is cleaned up by the next one: the
// state directory is locked while a run holds it, every process a run starts
// inherits a tag of it, and the next run kills what carries the tag and
// sweeps the datapath's namespaces.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/udnkit/udnkit/cmd/udnkit/app"
	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/ovnk"
)

func main() {
	root := flag.String("repo-root", ".", "repository root, where examples/ is")
	state := flag.String("state-dir", "", "where the kubeconfig, the kubectl link, the OVN sockets and the manager log go (default <repo-root>/.udnkit)")
	attach := flag.Bool("attach-output", false, "stream the apiserver's and etcd's logs")
	zones := flag.Int("zones", 0, "OVN interconnect zones (0: one zone where every node is local); n > 0 makes n real nodes (network namespaces with ovs-vswitchd and ovn-controller; needs root), each its own zone named after it as OVN-Kubernetes does, with its own NB/SB and ovn-northd (<state-dir>/zone-<zone>/) and its own dataplane manager (--zone)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *root, *state, *attach, *zones, os.Stdout); err != nil {
		if ctx.Err() != nil {
			// Ctrl-C during start-up: what was started is stopped.
			fmt.Fprintln(os.Stderr, "udnkit-local: interrupted before it was ready")
			os.Exit(130)
		}
		fmt.Fprintf(os.Stderr, "udnkit-local: %v\n", err)
		os.Exit(1)
	}
}

// localNodes are the Nodes make run creates: no kubelet runs, so they are
// plain objects; the nodes reconciler gives them IDs and tunnel IDs.
type localNode struct {
	name     string
	encapIPs string
}

var localNodes = []localNode{
	{"node-a", `["172.18.0.2"]`},
	{"node-b", `["172.18.0.3","172.18.0.4","172.18.0.5"]`},
	{"node-c", `["172.18.0.6"]`},
}

// chassisID is the system-id of a node's OVN chassis, as ovn-controller
// registers it and ovnkube-node publishes it in k8s.ovn.org/node-chassis-id
// (datapath.ChassisID: a UUID, not the node's name, fixed per node).
func (n localNode) chassisID() string { return datapath.ChassisID(n.name) }

// startManager builds the manager with these flags, and the apiserver's
// service range as --service-cidrs, and starts it; stop stops it and
// reports how it ended.
func startManager(ctx context.Context, env *envtest.Environment, flags map[string]string, webhooks bool) (stop func() error, done chan error, mgr ctrl.Manager, err error) {
	opts := app.NewOptions()
	fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
	opts.BindFlags(fs)
	if err := fs.Set(ovnk.FlagServiceCIDRs, serviceCIDRs); err != nil {
		return nil, nil, nil, err
	}
	for name, value := range flags {
		if err := fs.Set(name, value); err != nil {
			return nil, nil, nil, fmt.Errorf("--%s: %w", name, err)
		}
	}
	if webhooks {
		webhookOpts := env.Webhook.WebhookServerOptions()
		opts.WebhookServer = &webhookOpts
	}
	opts.SkipControllerNameValidation = true
	mgrCtx, cancel := context.WithCancel(ctx)
	mgr, err = app.New(mgrCtx, env.Config, opts)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	ch := make(chan error, 1)
	go func() { ch <- mgr.Start(mgrCtx) }()
	return func() error { cancel(); err := <-ch; ch <- nil; return err }, ch, mgr, nil
}

// zoneOVN is one OVN zone's databases and northd; zone "" is make run's
// single zone, where every node is local.
type zoneOVN struct {
	zone string
	ovn  *ovsdbserver.Local
}

// startManagers starts the manager with every component (the single zone)
// or every component but the dataplane and a dataplane manager per named
// zone (--zone); stop stops them all, reporting how each ended on stderr.
// mgrs are the main manager (done reports its end) and the zones' after it.
func startManagers(ctx context.Context, env *envtest.Environment, ovns []zoneOVN) (stop func(), done chan error, mgrs []ctrl.Manager, err error) {
	main := map[string]string{
		"controllers":                        strings.Join(app.NewOptions().Names(), ","),
		"metrics-bind-address":               "0",
		"health-probe-bind-address":          "0",
		"preconfigured-udn-addresses-enable": "true",
		// The quickstart shows EgressIP's defaults, OKEP-5377's subnet
		// policies among them.
		"enable-egress-ip": "true",
		// As the chart installs it (leaderElection.enabled): one elected
		// reconciler, the only writer of network and node IDs.
		"leader-elect":              "true",
		"leader-election-namespace": metav1.NamespaceSystem,
	}
	if len(ovns) == 1 && ovns[0].zone == "" {
		main["ovn-nb-address"], main["ovn-sb-address"] = ovns[0].ovn.NB.Address(), ovns[0].ovn.SB.Address()
	} else {
		names := slices.DeleteFunc(app.NewOptions().Names(), func(n string) bool { return n == "dataplane" })
		main["controllers"] = strings.Join(names, ",")
	}
	stopMain, done, mgr, err := startManager(ctx, env, main, true)
	if err != nil {
		return nil, nil, nil, err
	}
	mgrs = []ctrl.Manager{mgr}
	stops := []func(){func() {
		if err := stopMain(); err != nil {
			fmt.Fprintf(os.Stderr, "udnkit-local: manager: %v\n", err)
		}
	}}
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	for _, z := range ovns {
		if z.zone == "" {
			continue
		}
		stopZone, _, zoneMgr, err := startManager(ctx, env, map[string]string{
			"controllers": "dataplane", "zone": z.zone,
			"ovn-nb-address": z.ovn.NB.Address(), "ovn-sb-address": z.ovn.SB.Address(),
			"metrics-bind-address": "0", "health-probe-bind-address": "0", "enable-egress-ip": "true",
		}, false)
		if err != nil {
			stop()
			return nil, nil, nil, fmt.Errorf("the dataplane manager of zone %s: %w", z.zone, err)
		}
		mgrs = append(mgrs, zoneMgr)
		stops = append(stops, func() {
			if err := stopZone(); err != nil {
				fmt.Fprintf(os.Stderr, "udnkit-local: dataplane manager of zone %s: %v\n", z.zone, err)
			}
		})
	}
	return stop, done, mgrs, nil
}

// waitForManagers waits until every manager's informers have synced, the
// ones its controllers watch among them (app.New starts them with the
// cache): what the manager's readiness check (app.InformersCheck) reports.
func waitForManagers(ctx context.Context, mgrs []ctrl.Manager) error {
	for i, m := range mgrs {
		if !m.GetCache().WaitForCacheSync(ctx) {
			return fmt.Errorf("the caches of manager %d of %d did not sync", i+1, len(mgrs))
		}
		if err := app.WaitForInformers(ctx, m); err != nil {
			return fmt.Errorf("manager %d of %d: %w", i+1, len(mgrs), err)
		}
		select {
		case <-m.Elected():
		case <-ctx.Done():
			return fmt.Errorf("manager %d of %d was not elected: %w", i+1, len(mgrs), ctx.Err())
		}
	}
	return nil
}

func run(ctx context.Context, root, stateDir string, attach bool, zones int, out io.Writer) (err error) {
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
	release, err := claimState(stateDir)
	if err != nil {
		return err
	}
	defer release()
	// Deferred first, printed last: everything started is stopped.
	defer fmt.Fprintln(out, "stopped")
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

	// make run ZONES=n: the real-datapath cluster, started beside the
	// apiserver (each takes seconds).
	type clusterStart struct {
		c   *datapath.Cluster
		err error
	}
	var cluster *datapath.Cluster
	clusterCh := make(chan clusterStart, 1)
	if zones > 0 {
		names, err := zoneNodes(zones)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "starting %d nodes (a network namespace each with ovs-vswitchd and ovn-controller), each its own OVN zone (NB/SB, ovn-northd), Geneve between them ...\n", zones)
		go func() {
			c, err := datapath.Start(ctx, names...)
			clusterCh <- clusterStart{c, err}
		}()
		defer func() {
			if cluster == nil {
				// Start failed or was not awaited: it stops what it started,
				// or is stopped here once it returns.
				if s := <-clusterCh; s.c != nil {
					s.c.Stop()
				}
				return
			}
			fmt.Fprintln(out, "stopping the nodes and their OVN zones ...")
			cluster.Stop()
			for _, n := range cluster.Nodes {
				_ = os.Remove(filepath.Join(stateDir, "zone-"+n.Name))
			}
			_ = os.Remove(filepath.Join(stateDir, "bin", "udnkit-ping"))
		}()
	}

	fmt.Fprintln(out, "starting kube-apiserver and etcd ...")
	env, err := envtest.Start(envtest.Options{AttachOutput: attach, Webhooks: true, ServiceClusterIPRange: serviceCIDRs})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "stopping kube-apiserver and etcd ...")
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "udnkit-local: stopping the control plane: %v\n", err)
		}
		_ = os.Remove(kubeconfig)
	}()

	// One OVN (NB, SB, northd) for the single zone, or the cluster's zones.
	var ovns []zoneOVN
	if zones == 0 {
		defer func() {
			fmt.Fprintln(out, "stopping OVN ...")
			for _, z := range ovns {
				z.ovn.Stop()
			}
		}()
		fmt.Fprintln(out, "starting OVN Northbound/Southbound ovsdb-server and ovn-northd ...")
		ovn, err := ovsdbserver.StartLocal(ctx, stateDir)
		if err != nil {
			return fmt.Errorf("starting OVN (make run provisions OVN first): %w", err)
		}
		ovns = append(ovns, zoneOVN{"", ovn})
		// One zone: every node's chassis is local to it.
		for _, m := range localNodes {
			if err := addChassis(ovn.SB, m, false); err != nil {
				return err
			}
		}
	} else {
		s := <-clusterCh
		if s.err != nil {
			clusterCh <- s
			return fmt.Errorf("starting the nodes: %w", s.err)
		}
		cluster = s.c
		for _, n := range cluster.Nodes {
			ovns = append(ovns, zoneOVN{n.Name, n.Zone})
		}
		if err := linkZones(stateDir, cluster); err != nil {
			return err
		}
	}

	readyCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := env.WaitForAPI(readyCtx); err != nil {
		return err
	}
	if err := installAccess(readyCtx, env.Client, root); err != nil {
		return err
	}
	go keepRolesAggregated(ctx, env.Client, 2*time.Second)

	if zones == 0 {
		fmt.Fprintln(out, "starting the udnkit manager (every component) ...")
	} else {
		fmt.Fprintf(out, "starting the udnkit manager (every component but the dataplane) and %d dataplane managers (--zone) ...\n", zones)
	}
	stopManagers, mgrDone, mgrs, err := startManagers(ctx, env, ovns)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "stopping the manager ...")
		stopManagers()
	}()
	if err := env.WaitForWebhookServer(readyCtx); err != nil {
		return err
	}
	if err := waitForManagers(readyCtx, mgrs); err != nil {
		return err
	}

	if cluster != nil {
		if err := ovnkNodes(readyCtx, env.Client, cluster); err != nil {
			return err
		}
	} else {
		for _, n := range localNodes {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name,
				Annotations: map[string]string{ovnk.AnnotationNodeEncapIPs: n.encapIPs, ovnk.AnnotationNodeChassisID: n.chassisID()}}}
			if err := env.Client.Create(readyCtx, node); err != nil {
				return fmt.Errorf("creating node %s: %w", n.name, err)
			}
		}
	}

	// Ready means what the quickstart reads is there: the ipam component's
	// ovn-kubernetes/default NAD stub (OKEP-5233) is written once its
	// controller starts.
	for {
		err := env.Client.Get(readyCtx, client.ObjectKey{Namespace: ovnk.DefaultNetworkNamespace, Name: ovnk.DefaultNetworkName},
			&nadv1.NetworkAttachmentDefinition{})
		if err == nil {
			break
		}
		select {
		case <-readyCtx.Done():
			return fmt.Errorf("the %s/%s NetworkAttachmentDefinition never appeared: %w", ovnk.DefaultNetworkNamespace, ovnk.DefaultNetworkName, err)
		case <-time.After(100 * time.Millisecond):
		}
	}

	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	binDir := filepath.Join(stateDir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	// The quickstart's kubectl and OVN tools, by name on the printed PATH:
	// the envtest kubectl and the OVN release the dataplane runs.
	tools := map[string]string{"kubectl": filepath.Join(env.AssetsDir, "kubectl")}
	for _, name := range []string{"ovn-nbctl", "ovn-sbctl", "ovn-trace"} {
		if tools[name], err = ovsdbserver.Tool(name); err != nil {
			return err
		}
	}
	for name, target := range tools {
		link := filepath.Join(binDir, name)
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return err
		}
	}
	version, _ := envtest.KubernetesVersion()
	if cluster != nil {
		if err := readyZones(readyCtx, out, env, cluster, root, kubeconfig, binDir, logFile.Name(), version, started); err != nil {
			return err
		}
	} else {
		printReady(out, env, ovns[0].ovn, root, kubeconfig, binDir, logFile.Name(), version, started)
	}

	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "\nsignal received")
		return nil
	case err := <-mgrDone:
		mgrDone <- nil
		return fmt.Errorf("the manager stopped: %w", err)
	}
}

// addChassis registers n's chassis in a zone's Southbound database, as
// ovn-controller (its own zone's) and OVN-Kubernetes' interconnect (the other
// zones', remote) do. A chassis a restarted make run registered is kept;
// another chassis of the node's hostname (an earlier run's, under another
// name) is removed first, since its encaps hold the node's IPs.
func addChassis(sb *ovsdbserver.Server, n localNode, remote bool) error {
	var ips []string
	if err := json.Unmarshal([]byte(n.encapIPs), &ips); err != nil {
		return err
	}
	out, err := ovsdbserver.Command("ovn-sbctl", "--db="+sb.Address(), "--bare", "--columns=name", "find", "Chassis",
		"hostname="+n.name).Output()
	if err != nil {
		return fmt.Errorf("ovn-sbctl find Chassis hostname=%s: %w", n.name, err)
	}
	found := false
	for _, name := range strings.Fields(string(out)) {
		if name == n.chassisID() {
			found = true
			continue
		}
		if out, err := ovsdbserver.Command("ovn-sbctl", "--db="+sb.Address(), "chassis-del", name).CombinedOutput(); err != nil {
			return fmt.Errorf("ovn-sbctl chassis-del %s: %w: %s", name, err, out)
		}
	}
	if found {
		return nil
	}
	return ovsdbserver.AddChassis(sb, n.chassisID(), n.name, remote, ips...)
}

// printReady prints the single-zone quickstart.
func printReady(out io.Writer, env *envtest.Environment, ovn *ovsdbserver.Local, root, kubeconfig, binDir, logName, version string, started time.Time) {

	fmt.Fprintf(out, `
udnkit is ready: kube-apiserver v%s at %s, OVN at %s (started in %.1fs)
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
  ovn-nbctl --db=%s --columns=ip_prefix,nexthop,external_ids find Logical_Router_Static_Route 'external_ids:"k8s.ovn.org/udn-enabled-default-service"!=""'   # the API service's ClusterIP routed to each Primary Layer2 network's management port
  ovn-trace --db=%s --summary tenant.blue_blue_transit_router 'inport == "trtos-tenant.blue_blue_ovn_layer2_switch" && eth.src == 0a:58:0a:64:00:05 && eth.dst == 0a:58:0a:64:00:01 && ip4.src == 10.100.0.5 && ip4.dst == 1.1.1.1 && ip.ttl == 64' | grep 'output to'   # a blue pod's packet to the outside leaves via a node's gateway router

Ctrl-C stops everything.
`, version, env.Config.Host, ovn.NB.Address()+" and "+ovn.SB.Address(), time.Since(started).Seconds(),
		kubeconfig, logName, root, kubeconfig, binDir, ovn.NB.Address(), ovn.NB.Address(), ovn.NB.Address(), ovn.NB.Address(),
		ovn.SB.Address())

}
