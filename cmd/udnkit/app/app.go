// Package app assembles udnkit's manager: one controller-runtime manager that
// serves the admission webhooks and runs the reconcilers and the dataplane
// controller selected with --controllers, under leader election. cmd/udnkit
// runs it against a cluster; cmd/udnkit-local runs it in-process against the
// local control plane of `make run`.
package app

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/udnkit/udnkit/apis/scheme"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/webhooks"
)

// Component is one selectable part of the manager.
type Component struct {
	// Name is what --controllers selects it by.
	Name string
	// Help describes it in --help.
	Help string
	// BindFlags registers the component's own flags.
	BindFlags func(fs *flag.FlagSet)
	// Setup registers the component's webhooks or controllers with mgr; ctx
	// lives as long as the manager (for connections such as OVN's).
	Setup func(ctx context.Context, mgr ctrl.Manager) error
}

// Options configure the manager.
type Options struct {
	Controllers             string
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	MetricsBindAddress      string
	// MetricsSecure serves /metrics over HTTPS, only to callers whose bearer
	// token a TokenReview authenticates and a SubjectAccessReview allows
	// (get on the non-resource URL /metrics).
	MetricsSecure bool
	// MetricsCertDir holds the metrics server's tls.crt and tls.key; empty
	// or missing files: a self-signed certificate made at start.
	MetricsCertDir          string
	HealthProbeBindAddress  string
	WebhookHost             string
	WebhookPort             int
	WebhookCertDir          string
	GracefulShutdownTimeout time.Duration
	// KubeAPIQPS and KubeAPIBurst bound the manager's requests to the
	// apiserver (client-go's defaults, 5 and 10, or controller-runtime's 20
	// and 30, throttle a cluster with thousands of networks and pods).
	KubeAPIQPS   float64
	KubeAPIBurst int
	// Cluster are the cluster's facts, parsed once from flags and handed to
	// every component.
	Cluster ovnk.ClusterConfig
	// SkipControllerNameValidation lets one process build several managers
	// with the same controllers (tests that restart or compare managers).
	SkipControllerNameValidation bool
	// WebhookServer, when set, replaces the webhook host, port and cert dir
	// (make run serves on the local control plane's address and certificate).
	WebhookServer *webhook.Options

	components []Component
}

// NewOptions returns the defaults and the components udnkit has.
func NewOptions() *Options {
	o := &Options{
		LeaderElectionID:        "udnkit-manager.k8s.ovn.org",
		MetricsBindAddress:      ":8443",
		MetricsSecure:           true,
		HealthProbeBindAddress:  ":8081",
		WebhookPort:             9443,
		WebhookCertDir:          "/tmp/k8s-webhook-server/serving-certs",
		GracefulShutdownTimeout: 15 * time.Second,
		KubeAPIQPS:              100,
		KubeAPIBurst:            200,
		Cluster:                 ovnk.DefaultClusterConfig(),
	}
	o.components = components(&o.Cluster, &o.LeaderElect)
	o.Controllers = strings.Join(o.Names(), ",")
	return o
}

// Names lists the selectable components.
func (o *Options) Names() []string {
	var names []string
	for _, c := range o.components {
		names = append(names, c.Name)
	}
	return names
}

// BindFlags registers the manager's flags and every component's.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	var help []string
	for _, c := range o.components {
		help = append(help, c.Name+" ("+c.Help+")")
	}
	fs.StringVar(&o.Controllers, "controllers", o.Controllers, "comma-separated components to run: "+strings.Join(help, ", "))
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "elect one active reconciler among replicas (webhooks are served by every replica)")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "namespace of the leader-election Lease")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "name of the leader-election Lease")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "address of the Prometheus metrics endpoint; 0 disables it")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure, "serve metrics over HTTPS to authenticated (TokenReview) and authorized (SubjectAccessReview) callers only; false: plain HTTP to anyone")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir, "directory with tls.crt and tls.key of the metrics server (empty: self-signed)")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "address of /healthz and /readyz")
	fs.StringVar(&o.WebhookHost, "webhook-host", o.WebhookHost, "address the webhook server listens on (empty: all)")
	fs.IntVar(&o.WebhookPort, "webhook-port", o.WebhookPort, "port of the webhook server")
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "requests per second to the apiserver (sustained)")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "requests to the apiserver in a burst")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", o.WebhookCertDir, "directory with tls.crt and tls.key of the webhook server")
	o.Cluster.BindFlags(fs)
	for _, c := range o.components {
		if c.BindFlags != nil {
			c.BindFlags(fs)
		}
	}
}

// Selected returns the components --controllers names, or an error naming an
// unknown one.
func (o *Options) Selected() ([]Component, error) {
	known := o.Names()
	var out []Component
	seen := map[string]bool{}
	for _, name := range strings.Split(o.Controllers, ",") {
		name = strings.TrimSpace(name)
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		i := slices.IndexFunc(o.components, func(c Component) bool { return c.Name == name })
		if i < 0 {
			sort.Strings(known)
			return nil, fmt.Errorf("--controllers: unknown component %q (known: %s)", name, strings.Join(known, ", "))
		}
		out = append(out, o.components[i])
	}
	return out, nil
}

// New builds the manager with the selected components registered; ctx bounds
// the components' own connections and should live as long as the manager.
func New(ctx context.Context, cfg *rest.Config, o *Options) (ctrl.Manager, error) {
	selected, err := o.Selected()
	if err != nil {
		return nil, err
	}
	if err := o.Cluster.Validate(); err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	if o.KubeAPIQPS > 0 {
		cfg.QPS = float32(o.KubeAPIQPS)
	}
	if o.KubeAPIBurst > 0 {
		cfg.Burst = o.KubeAPIBurst
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme.New(),
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        o.LeaderElectionID,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		// Let a new leader take over at once when this one stops cleanly.
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       o.metricsOptions(),
		HealthProbeBindAddress:        o.HealthProbeBindAddress,
		GracefulShutdownTimeout:       &o.GracefulShutdownTimeout,
		WebhookServer:                 webhook.NewServer(o.webhookOptions()),
		Controller:                    config.Controller{SkipNameValidation: &o.SkipControllerNameValidation},
		Cache:                         cacheOptions(),
		NewCache:                      newWatchedCache,
	})
	if err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	ready := healthz.Ping
	for _, c := range selected {
		if c.Name == "admission" {
			ready = mgr.GetWebhookServer().StartedChecker()
		}
		if err := c.Setup(ctx, mgr); err != nil {
			return nil, fmt.Errorf("setting up %s: %w", c.Name, err)
		}
	}
	if err := mgr.AddReadyzCheck("ready", ready); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck(InformersCheck, informersSynced(mgr.GetCache())); err != nil {
		return nil, err
	}
	return mgr, nil
}

// Run builds the manager and runs it until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, o *Options) error {
	mgr, err := New(ctx, cfg, o)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// The metrics filter reviews callers' tokens and permissions with the apiserver.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

func (o *Options) metricsOptions() metricsserver.Options {
	opts := metricsserver.Options{BindAddress: o.MetricsBindAddress}
	if o.MetricsSecure {
		opts.SecureServing = true
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
		opts.CertDir = o.MetricsCertDir
	}
	return opts
}

func (o *Options) webhookOptions() webhook.Options {
	opts := webhook.Options{Host: o.WebhookHost, Port: o.WebhookPort, CertDir: o.WebhookCertDir}
	if o.WebhookServer != nil {
		opts = *o.WebhookServer
	}
	opts.TLSOpts = append(slices.Clone(opts.TLSOpts), webhooks.ServeHTTP1)
	return opts
}

// cacheOptions trims what the manager's informers hold. No component reads
// managedFields; with thousands of networks, pods and nodes they are a large
// share of the informers' memory. Of a pod, udnkit reads only its metadata,
// spec.nodeName, spec.hostNetwork and status.phase; of a node its metadata
// and status.addresses: a real pod's containers and volumes, or a node's
// images and conditions, are kilobytes each, times 20,000 pods or 500
// nodes. Every write udnkit makes to a pod or node is a merge patch
// computed between two copies of the trimmed object (annotations only), so
// what is trimmed is never sent back.
func cacheOptions() cache.Options {
	// One DefaultTransform that tells the kinds apart: ByObject would make
	// building the manager need the apiserver's discovery.
	strip := cache.TransformStripManagedFields()
	return cache.Options{DefaultTransform: func(obj any) (any, error) {
		switch obj.(type) {
		case *corev1.Pod:
			return trimPod(obj)
		case *corev1.Node:
			return trimNode(obj)
		}
		return strip(obj)
	}}
}

// trimPod keeps what udnkit reads of a pod (see cacheOptions).
func trimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return cache.TransformStripManagedFields()(obj)
	}
	pod.ManagedFields = nil
	pod.Spec = corev1.PodSpec{NodeName: pod.Spec.NodeName, HostNetwork: pod.Spec.HostNetwork}
	pod.Status = corev1.PodStatus{Phase: pod.Status.Phase}
	return pod, nil
}

// trimNode keeps what udnkit reads of a node (see cacheOptions).
func trimNode(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return cache.TransformStripManagedFields()(obj)
	}
	node.ManagedFields = nil
	node.Spec = corev1.NodeSpec{}
	node.Status = corev1.NodeStatus{Addresses: node.Status.Addresses}
	return node, nil
}
