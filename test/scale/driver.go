package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/test/scale/internal/metrics"
	"github.com/udnkit/udnkit/test/scale/internal/profile"
	"github.com/udnkit/udnkit/test/scale/internal/report"
)

// reconcilers are the manager components the measured child runs.
const reconcilers = "nad,nodes,ipam"

type driverFlags struct {
	nodes, networks, pods, workers int
	fractions                      [][2]int
	dataplane, dataplaneLive       bool
	timeout                        time.Duration
	out, stateDir                  string
	cpuProfile                     bool
	// targets are the figures' targets (thresholds.yaml); a miss fails the run.
	targets report.Thresholds
}

// plan is what the report says every run shares.
func (d driverFlags) plan() report.Plan {
	return report.Plan{Nodes: d.nodes, Networks: d.networks, Pods: d.pods, Workers: d.workers}
}

// profileChildren: every child writes a CPU profile beside its log (-cpuprofile).
var profileChildren bool

func runDriver(d driverFlags) error {
	if d.timeout == 0 {
		d.timeout = 20 * time.Minute
	}
	profileChildren = d.cpuProfile
	self, err := os.Executable()
	if err != nil {
		return err
	}
	state, err := filepath.Abs(d.stateDir)
	if err != nil {
		return err
	}
	var results []report.Result
	for _, f := range d.fractions {
		networks := max(1, d.networks*f[0]/f[1])
		pods := max(1, d.pods*f[0]/f[1])
		s := report.NewSize(fmt.Sprintf("%d/%d", f[0], f[1]), d.nodes, networks, pods)
		fmt.Printf("== run %s: %d nodes, %d networks, %d pods\n", s.Label, s.Nodes, s.Networks, s.Pods)
		r, err := runSize(d, self, filepath.Join(state, strings.ReplaceAll(s.Label, "/", "-")), s)
		if err != nil {
			return fmt.Errorf("run %s: %w", s.Label, err)
		}
		results = append(results, r)
		if err := report.Write(d.out, d.plan(), d.targets, results); err != nil {
			return err
		}
	}
	fmt.Printf("report: %s\n", d.out)
	return d.targets.MissError(results)
}

func runSize(d driverFlags, self, dir string, s report.Size) (report.Result, error) {
	r := report.Result{Size: s}
	if err := os.RemoveAll(dir); err != nil {
		return r, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*d.timeout)
	defer cancel()
	// The driver and the children all connect as the kubeconfig's user, the
	// one the policies trust to write the OVN annotations (as in make run,
	// where the manager and the admin share one identity).
	env, err := envtest.Start(envtest.Options{Webhooks: true,
		AnnotationWriters: &envtest.AnnotationWriters{Users: []string{envtest.KubeconfigUser}}})
	if err != nil {
		return r, err
	}
	defer env.Stop()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return r, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return r, err
	}
	cfg.QPS, cfg.Burst = -1, -1
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		return r, err
	}
	c = client.WithFieldValidation(c, metav1.FieldValidationStrict)
	// The driver watches what it waits for through its own informers: one
	// LIST and one WATCH per kind, before the baseline of the request counts.
	watch, err := cache.New(cfg, cache.Options{Scheme: env.Scheme})
	if err != nil {
		return r, err
	}
	for _, obj := range []client.Object{&nadv1.NetworkAttachmentDefinition{}, &corev1.Node{}, &corev1.Pod{}} {
		if _, err := watch.GetInformer(ctx, obj); err != nil {
			return r, err
		}
	}
	go func() { _ = watch.Start(ctx) }()
	if !watch.WaitForCacheSync(ctx) {
		return r, errors.New("the driver's cache did not sync")
	}
	metricsHTTP, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return r, err
	}
	before, err := metrics.APIServerRequests(ctx, metricsHTTP, env.Config.Host)
	if err != nil {
		return r, err
	}

	// The webhooks run in their own child for the whole run (every replica
	// serves them, so they stay up while the reconcilers restart); the
	// reconcilers' child is the one measured and restarted.
	webhookMetrics, err := freeAddr()
	if err != nil {
		return r, err
	}
	webhooks, err := startChild(self, filepath.Join(dir, "webhooks.log"), "-role=manager", "-controllers=admission",
		"-child-kubeconfig="+kubeconfig, "-metrics="+webhookMetrics,
		"-webhook-host="+env.Webhook.Host, "-webhook-port="+strconv.Itoa(env.Webhook.Port), "-webhook-cert-dir="+env.Webhook.CertDir)
	if err != nil {
		return r, err
	}
	defer webhooks.stop()
	if err := env.WaitForWebhookServer(ctx); err != nil {
		return r, err
	}
	managerMetrics, err := freeAddr()
	if err != nil {
		return r, err
	}
	managerArgs := []string{"-role=manager", "-controllers=" + reconcilers, "-child-kubeconfig=" + kubeconfig, "-metrics=" + managerMetrics}
	mgr, err := startChild(self, filepath.Join(dir, "manager.log"), managerArgs...)
	if err != nil {
		return r, err
	}
	defer mgr.stop()
	if err := metrics.WaitManagerSynced(ctx, managerMetrics); err != nil {
		return r, err
	}

	// -dataplane-live: a zone's dataplane that follows the creation, as a
	// cluster's does (reacting to every NAD, node and pod change on the
	// way), not only catching up with the result.
	var live *dataplaneRun
	if d.dataplaneLive {
		if live, err = startDataplane(ctx, self, dir, "dataplane-live", kubeconfig); err != nil {
			return r, err
		}
		defer live.stop()
	}

	// Everything at once, as fast as the apiserver takes it: Nodes first
	// (as a cluster has them before its networks), then each network's
	// namespace and network, then the pods.
	start := time.Now()
	_, _, driverCPU := metrics.ProcUsage(os.Getpid())
	stopProfile := func() {}
	if d.cpuProfile {
		stopProfile = profile.APIServer(ctx, metricsHTTP, env.Config.Host, filepath.Join(dir, "apiserver"))
		stopDriver := profile.Driver(filepath.Join(dir, "driver.pprof"))
		stopAPIServer := stopProfile
		stopProfile = func() { stopDriver(); stopAPIServer() }
	}
	var failed, retried atomic.Int64
	run := func(jobs int, job func(int) error) {
		var wg sync.WaitGroup
		next := atomic.Int64{}
		for range d.workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1) - 1); i < jobs; i = int(next.Add(1) - 1) {
					if err := retry(ctx, &retried, func() error { return job(i) }); err != nil {
						if failed.Add(1) <= 5 {
							fmt.Fprintf(os.Stderr, "create: %v\n", err)
						}
					}
				}
			}()
		}
		wg.Wait()
	}
	run(s.Nodes, func(i int) error { return c.Create(ctx, scaleNode(i)) })
	run(s.Networks, func(i int) error {
		ns, network := scaleNetwork(i)
		if err := c.Create(ctx, ns); err != nil && !isExists(err) {
			return err
		}
		if err := c.Create(ctx, network); err != nil && !isExists(err) {
			return err
		}
		return nil
	})
	run(s.Pods, func(i int) error { return c.Create(ctx, scalePod(i, s)) })
	r.CreateAll = time.Since(start)
	r.CreateErrors, r.CreateRetries = failed.Load(), retried.Load()
	fmt.Printf("   created everything in %s (%d failed creates, %d retries)\n", r.CreateAll.Round(time.Millisecond), r.CreateErrors, r.CreateRetries)

	err = waitConverged(ctx, d.timeout, watch, s, start, &r)
	stopProfile()
	if err != nil {
		return r, err
	}
	// Every NAD exists now: the live dataplane's rows are waited for while
	// the restart below runs, so its time is when its rows were complete,
	// not when the driver got round to looking.
	type liveResult struct {
		ovn *report.OVN
		err error
	}
	liveDone := make(chan liveResult, 1)
	if live != nil {
		go func() {
			o, err := live.wait(ctx, d, watch, s)
			liveDone <- liveResult{o, err}
		}()
	}
	_, _, cpu := metrics.ProcUsage(os.Getpid())
	r.DriverCPUSeconds = cpu - driverCPU
	r.RSSMiB, r.PeakMiB, r.CPUSeconds = mgr.usage()
	if r.Reconciles, err = metrics.ManagerReconciles(ctx, managerMetrics); err != nil {
		return r, err
	}
	r.WebhookRSSMiB, _, r.WebhookCPUSeconds = webhooks.usage()
	after, err := metrics.APIServerRequests(ctx, metricsHTTP, env.Config.Host)
	if err != nil {
		return r, err
	}
	r.Requests = metrics.Delta(before, after)

	// Restart: stop the manager, create one more Primary Layer2 network and
	// a pod on it while it is down, start it again; converged is when both
	// have their IDs and address and the manager's work queues are empty.
	//
	// At the network-ID ceiling (full size: 4095 networks hold IDs 1..4095)
	// there is no ID for one more network, so it would never converge. There
	// the step replaces a network instead: one Secondary Layer2 UDN (no pod
	// uses a Secondary network, so its finalizer goes at once) is deleted
	// while the manager is still up, and the step waits until it is gone,
	// its ID free. Deleting it while the manager is down instead would make
	// the result depend on the restarted manager's queue order: if it tried
	// the new network before finalizing the old one, the new one would wait
	// out the 30 s retry for exhausted IDs. This way the restart does the
	// same work at every size (resync everything, one new network and pod)
	// and the times stay comparable.
	if s.Networks >= ovnk.MaxNetworkID {
		if err := freeNetworkID(ctx, c, d.timeout, s); err != nil {
			return r, err
		}
		// The deletion's requests are not the restart's.
		if after, err = metrics.APIServerRequests(ctx, metricsHTTP, env.Config.Host); err != nil {
			return r, err
		}
	}
	// Stop only a manager with nothing left to do: the counts above can be
	// complete while it still writes (statuses, node annotations), and that
	// work would otherwise land in the restart's figures.
	if err := metrics.WaitDrained(ctx, d.timeout, managerMetrics); err != nil {
		return r, err
	}
	mgr.stop()
	ns, network := scaleNetwork(s.Networks * 8) // index ≡ 0 mod 8: UDN Layer2 Primary
	extra := report.Size{Networks: s.Networks*8 + 1}
	pod := scalePod(s.Networks*8, extra)
	for _, obj := range []client.Object{ns, network, pod} {
		if err := c.Create(ctx, obj); err != nil {
			return r, fmt.Errorf("creating %s while the manager is down: %w", obj.GetName(), err)
		}
	}
	before = after
	restarted := time.Now()
	mgr, err = startChild(self, filepath.Join(dir, "manager-restart.log"), managerArgs...)
	if err != nil {
		return r, err
	}
	defer mgr.stop()
	if err := waitRestarted(ctx, d.timeout, watch, managerMetrics, ns.Name, network.GetName(), pod); err != nil {
		return r, err
	}
	r.Restart = time.Since(restarted)
	_, r.RestartPeakMiB, r.RestartCPUSeconds = mgr.usage()
	after, err = metrics.APIServerRequests(ctx, metricsHTTP, env.Config.Host)
	if err != nil {
		return r, err
	}
	r.RestartRequests = metrics.Delta(before, after)
	fmt.Printf("   restart to converged %s\n", r.Restart.Round(time.Millisecond))

	if live != nil {
		res := <-liveDone
		if res.err != nil {
			return r, res.err
		}
		r.OVNLive = res.ovn
		live.stop()
	}
	if d.dataplane {
		ovn, err := measureDataplane(ctx, d, self, dir, kubeconfig, watch, s)
		if err != nil {
			return r, err
		}
		r.OVN = ovn
	}
	return r, nil
}

func isExists(err error) bool {
	return err != nil && strings.Contains(err.Error(), "already exists")
}

// retry retries a create that a webhook or the apiserver refused for a
// moment (a namespace's network not cached yet, a timeout), five times,
// counting the retries in retried (the first few are printed).
func retry(ctx context.Context, retried *atomic.Int64, f func() error) error {
	for attempt := 0; ; attempt++ {
		err := f()
		if err == nil || isExists(err) {
			return nil
		}
		if attempt == 4 {
			return err
		}
		if retried.Add(1) <= 5 {
			fmt.Fprintf(os.Stderr, "create (retried): %v\n", err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(100<<attempt) * time.Millisecond):
		}
	}
}

func nodeName(i int) string { return fmt.Sprintf("node-%04d", i) }

// scaleNode is a Node as OVN-Kubernetes leaves it once it runs the Layer2
// transit-router topology: its chassis, an encap IP and the topology version.
func scaleNode(i int) *corev1.Node {
	return testobj.MakeNode(nodeName(i)).Annotations(map[string]string{
		ovnk.AnnotationNodeChassisID:         fmt.Sprintf("5e1f0c1a-0000-4000-8000-%012d", i),
		ovnk.AnnotationNodeEncapIPs:          fmt.Sprintf(`["172.20.%d.%d"]`, i/250, i%250+1),
		ovnk.AnnotationLayer2TopologyVersion: ovnk.Layer2TopologyVersionTransitRouter,
	}).Obj()
}

func namespaceName(i int) string { return fmt.Sprintf("scale-%05d", i) }

// scaleNetwork is network i's namespace and its UDN or CUDN (which selects
// that namespace only).
func scaleNetwork(i int) (*corev1.Namespace, client.Object) {
	k := report.KindOf(i)
	ns := testobj.MakeNamespace(namespaceName(i))
	role := v1.NetworkRoleSecondary
	if k.Primary {
		ns.Primary()
		role = v1.NetworkRolePrimary
	}
	spec := testobj.Layer2(role, "10.100.0.0/16")
	if k.Layer3 {
		spec = testobj.Layer3(role, "172.16.0.0/12")
	}
	name := fmt.Sprintf("net-%05d", i)
	if !k.Cluster {
		return ns.Obj(), testobj.MakeUDN(ns.Name, name).Spec(spec).Obj()
	}
	return ns.Obj(), testobj.MakeCUDN(name).SelectLabels(map[string]string{corev1.LabelMetadataName: ns.Name}).Spec(spec).Obj()
}

// scalePod is pod p, in network p mod networks's namespace, bound to a node
// (no scheduler or kubelet runs: it stays Pending).
func scalePod(p int, s report.Size) *corev1.Pod {
	return testobj.MakePod(namespaceName(p%s.Networks), fmt.Sprintf("pod-%05d", p)).Node(nodeName(p % max(1, s.Nodes))).Obj()
}

// waitConverged watches the driver's informer cache (no API requests) until
// every NAD, network ID, Layer3 host subnet and Primary Layer2 pod address
// is there, recording when each kind completed. It polls every 200 ms and
// decodes only the objects that changed since the last poll (see
// convergence): decoding every node's k8s.ovn.org/node-subnets and every
// pod's annotation on each poll cost O(networks × nodes + pods) per poll, so
// the driver's own CPU, which competes with the apiserver and the manager
// for the same cores, grew quadratically with the run.
func waitConverged(ctx context.Context, timeout time.Duration, watch cache.Cache, s report.Size, start time.Time, r *report.Result) error {
	deadline := time.Now().Add(timeout)
	var nadsAt, idsAt, subnetsAt, addrsAt time.Duration
	c := newConvergence(s)
	for {
		counts, err := c.count(ctx, watch)
		if err != nil {
			return err
		}
		now := time.Since(start)
		if nadsAt == 0 && counts.nads >= s.Networks {
			nadsAt = now
		}
		if idsAt == 0 && counts.withIDs >= s.Networks {
			idsAt = now
		}
		if subnetsAt == 0 && counts.l3Names == s.L3 && counts.subnets >= s.L3*s.Nodes {
			subnetsAt = now
		}
		if addrsAt == 0 && counts.addressed >= s.L2Pods {
			addrsAt = now
		}
		if nadsAt > 0 && idsAt > 0 && subnetsAt > 0 && addrsAt > 0 {
			r.NADs, r.IDs, r.HostSubnets, r.Addresses = nadsAt, idsAt, subnetsAt, addrsAt
			fmt.Printf("   NADs %s, IDs %s, host subnets %s, addresses %s\n", nadsAt.Round(time.Millisecond),
				idsAt.Round(time.Millisecond), subnetsAt.Round(time.Millisecond), addrsAt.Round(time.Millisecond))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not converged after %s: NADs %d/%d, IDs %d/%d, host subnets %d/%d, addresses %d/%d",
				timeout, counts.nads, s.Networks, counts.withIDs, s.Networks, counts.subnets, s.L3*s.Nodes, counts.addressed, s.L2Pods)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// convergence counts what waitConverged waits for, remembering what it
// decoded of each object by resourceVersion, so that a poll decodes only the
// objects that changed since the last one.
type convergence struct {
	s    report.Size
	nads map[string]versioned[nadState] // by namespace/name
	// l3Names are the OVN network names of the run's Layer3 networks, from
	// their NADs; complete once there are s.l3.
	l3Names map[string]bool
	nodes   map[string]versioned[int]  // node → host subnets of l3Names (once complete)
	pods    map[string]versioned[bool] // pod → has a primary network address
}

// versioned is what was decoded of an object at resourceVersion rv.
type versioned[T any] struct {
	rv string
	v  T
}

// decoded is what decode makes of the object key at resourceVersion rv:
// decoded again only when the object changed.
func decoded[T any](m map[string]versioned[T], key, rv string, decode func() T) T {
	if st, ok := m[key]; ok && st.rv == rv {
		return st.v
	}
	v := decode()
	m[key] = versioned[T]{rv: rv, v: v}
	return v
}

type nadState struct {
	hasID  bool
	l3Name string // the network name when the NAD is of a Layer3 network of the run
}

type convergenceCounts struct {
	nads, withIDs, l3Names, subnets, addressed int
}

func newConvergence(s report.Size) *convergence {
	return &convergence{s: s, nads: map[string]versioned[nadState]{}, l3Names: map[string]bool{},
		nodes: map[string]versioned[int]{}, pods: map[string]versioned[bool]{}}
}

func (c *convergence) count(ctx context.Context, watch client.Reader) (convergenceCounts, error) {
	var out convergenceCounts
	// The lists are only read: no copies of the cached objects.
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := watch.List(ctx, &nads, client.HasLabels{ovnk.LabelUserDefinedNetwork}, client.UnsafeDisableDeepCopy); err != nil {
		return out, err
	}
	for i := range nads.Items {
		nad := &nads.Items[i]
		st := decoded(c.nads, nad.Namespace+"/"+nad.Name, nad.ResourceVersion, func() nadState {
			var st nadState
			if ids, err := ovnk.DecodeNetworkIDs(nad.Annotations); err == nil && ids.HasID {
				st.hasID = true
			}
			idx, err := strconv.Atoi(strings.TrimPrefix(nad.Namespace, "scale-"))
			if err == nil && idx < c.s.Networks && report.KindOf(idx).Layer3 {
				st.l3Name = nad.Annotations[ovnk.AnnotationNetworkName]
			}
			return st
		})
		if st.hasID {
			out.withIDs++
		}
		if st.l3Name != "" {
			c.l3Names[st.l3Name] = true
		}
	}
	out.nads, out.l3Names = len(nads.Items), len(c.l3Names)
	if out.l3Names == c.s.L3 {
		// The names are complete: what a node holds of them is known by
		// its resourceVersion.
		var nodes corev1.NodeList
		if err := watch.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
			return out, err
		}
		for i := range nodes.Items {
			n := &nodes.Items[i]
			out.subnets += decoded(c.nodes, n.Name, n.ResourceVersion, func() int {
				m, err := ovnk.DecodeNodeSubnets(n)
				if err != nil {
					return 0
				}
				held := 0
				for name := range c.l3Names {
					if len(m[name]) > 0 {
						held++
					}
				}
				return held
			})
		}
	}
	var pods corev1.PodList
	if err := watch.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		return out, err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		addressed := decoded(c.pods, p.Namespace+"/"+p.Name, p.ResourceVersion, func() bool {
			pns, err := podannotation.DecodePodNetworks(p.Annotations)
			if err != nil {
				return false
			}
			for _, pn := range pns {
				if pn.Role == podannotation.RolePrimary {
					return true
				}
			}
			return false
		})
		if addressed {
			out.addressed++
		}
	}
	return out, nil
}

// freeNetworkID deletes the last Secondary Layer2 UDN of s and waits until
// it is gone, which is when the manager has released its network ID.
func freeNetworkID(ctx context.Context, c client.Client, timeout time.Duration, s report.Size) error {
	victim := -1
	for i := s.Networks - 1; i >= 0; i-- {
		if k := report.KindOf(i); !k.Cluster && !k.Layer3 && !k.Primary {
			victim = i
			break
		}
	}
	if victim < 0 {
		return errors.New("no Secondary Layer2 UDN to replace at the network-ID ceiling")
	}
	_, network := scaleNetwork(victim)
	if err := c.Delete(ctx, network); err != nil {
		return fmt.Errorf("deleting %s to free a network ID: %w", network.GetName(), err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(network), network)
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("freeing a network ID: %s is not finalized in %s: %w", network.GetName(), timeout, err)
	}
	return nil
}

// waitRestarted waits for the network and pod created while the manager was
// down to get their IDs and address, and for the manager's work queues to
// be empty.
func waitRestarted(ctx context.Context, timeout time.Duration, watch cache.Cache, metricsAddr, namespace, network string, pod *corev1.Pod) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var nad nadv1.NetworkAttachmentDefinition
		if err := watch.Get(ctx, client.ObjectKey{Namespace: namespace, Name: network}, &nad); err != nil {
			return false, nil
		}
		var p corev1.Pod
		if ids, err := ovnk.DecodeNetworkIDs(nad.Annotations); err != nil || !ids.HasID ||
			watch.Get(ctx, client.ObjectKeyFromObject(pod), &p) != nil || p.Annotations[ovnk.AnnotationPodNetworks] == "" {
			return false, nil
		}
		return metrics.Drained(ctx, metricsAddr), nil
	})
	if err != nil {
		return fmt.Errorf("the restarted manager did not converge in %s: %w", timeout, err)
	}
	return nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// child is a running child process.
type child struct {
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

func startChild(self, logPath string, args ...string) (*child, error) {
	if profileChildren {
		base := strings.TrimSuffix(logPath, ".log")
		args = append(args, "-child-cpuprofile="+base+".pprof", "-child-peakheapprofile="+base+".heap")
	}
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(c.done)
	}()
	return c, nil
}

// stop sends SIGTERM and waits (SIGKILL after 30 s).
func (c *child) stop() {
	c.once.Do(func() {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	})
}

// usage is the child's RSS and peak RSS in MiB (VmRSS, VmHWM) and its CPU
// seconds (user + system).
func (c *child) usage() (rss, peak, cpu float64) {
	return metrics.ProcUsage(c.cmd.Process.Pid)
}
