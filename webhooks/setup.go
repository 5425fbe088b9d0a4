package webhooks

import (
	"context"
	"crypto/tls"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/webhooks/nad"
	"github.com/udnkit/udnkit/webhooks/network"
	"github.com/udnkit/udnkit/webhooks/pod"
)

// SetupWithManager writes the cluster's ranges for udnkit's
// ValidatingAdmissionPolicies (the ConfigMap ovnk.AdmissionParamsConfigMap in
// paramsNamespace, see WriteAdmissionParams) and registers every udnkit
// webhook on mgr's webhook server: the UDN validator (a new UDN against
// limits and what its namespace holds), the CUDN validator (a new CUDN
// against the cluster's network IDs, a Primary CUDN's namespaces), the pod
// validator, the pod defaulter and the NAD validator. A UDN's own spec, and
// a CUDN's, are the policies', evaluated in the apiserver. The webhooks
// decide from mgr's informer cache, indexed by network.IndexFields and pod.IndexFields, and from
// counters its events keep, so a request costs no apiserver round trip and
// reads only the networks that matter; a refusal is confirmed with
// mgr.GetAPIReader(). The cache (and the policies' params) may miss a
// network created moments ago: two Primary networks for one namespace
// admitted in that window are settled by the reconcilers (the older keeps
// it); the limits count what this process admitted until its cache shows
// it, so only several replicas admitting at once can pass a limit, by what
// the other replicas admitted within their caches' lag (milliseconds). The
// manager's scheme must know k8s.ovn.org/v1, core/v1 and IPAMClaims.
func SetupWithManager(mgr ctrl.Manager, cfg ovnk.ClusterConfig, paramsNamespace string, limits network.Limits) error {
	ctx := context.Background()
	if err := limits.Validate(); err != nil {
		return err
	}
	if err := WriteAdmissionParams(ctx, mgr.GetClient(), paramsNamespace, cfg); err != nil {
		return err
	}
	if err := network.IndexFields(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := pod.IndexFields(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	// Start the informers with the manager rather than on the first request;
	// pods' only where requested addresses are checked against them.
	informers := []client.Object{&corev1.Namespace{}, &udnv1.UserDefinedNetwork{}, &udnv1.ClusterUserDefinedNetwork{}}
	if cfg.PreconfiguredUDNAddresses {
		informers = append(informers, &corev1.Pod{})
	}
	for _, obj := range informers {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return err
		}
	}
	counts, err := network.NewNetworkCounts(ctx, mgr.GetCache())
	if err != nil {
		return err
	}
	cached, live := mgr.GetCache(), mgr.GetAPIReader()
	if err := ctrl.NewWebhookManagedBy(mgr, &udnv1.UserDefinedNetwork{}).
		WithValidator(&network.UserDefinedNetworkValidator{Client: cached, APIReader: live, Limits: limits, Counts: counts}).Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &udnv1.ClusterUserDefinedNetwork{}).
		WithValidator(&network.ClusterUserDefinedNetworkValidator{Client: cached, APIReader: live, Limits: limits, Counts: counts}).Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &corev1.Pod{}).
		WithValidator(&pod.Validator{Client: cached, APIReader: live, Config: cfg}).Complete(); err != nil {
		return err
	}
	if err := nad.SetupWithManager(mgr, cached, live); err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(pod.MutatePath, &webhook.Admission{
		Handler: &pod.Defaulter{Client: cached, APIReader: live, Config: cfg, Decoder: admission.NewDecoder(mgr.GetScheme())},
	})
	return nil
}

// ServeHTTP1 is the webhook server's TLS option (webhook.Options.TLSOpts)
// that offers HTTP/1.1 alone. Over HTTP/2 the server starts a goroutine per
// request and writes every response frame through the connection's serve
// loop: on a busy node each of those hand-offs waits for a CPU, and the
// apiserver waits for all of them on every call. Over HTTP/1.1 the
// connection's goroutine reads, handles and writes, and the apiserver keeps
// its connections alive between calls. It also leaves the server out of
// HTTP/2's stream-reset floods (CVE-2023-44487), as kubebuilder's layout does.
func ServeHTTP1(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }

// FieldOwner is the field manager of the objects the admission component
// writes.
const FieldOwner = "udnkit-admission"

// WriteAdmissionParams creates or updates (server-side apply, one request)
// the ConfigMap ovnk.AdmissionParamsConfigMap in namespace with
// cfg.AdmissionParams(): the ranges udnkit's ValidatingAdmissionPolicies
// check networks against. Every replica writes the same data. The
// apiserver's policies see it a moment later; until it first exists they
// refuse every network (parameterNotFoundAction Deny).
func WriteAdmissionParams(ctx context.Context, c client.Client, namespace string, cfg ovnk.ClusterConfig) error {
	obj := cfg.AdmissionParamsObject(namespace)
	ac := corev1ac.ConfigMap(obj.Name, obj.Namespace).WithData(obj.Data)
	if err := c.Apply(ctx, ac, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("writing the admission policies' params %s/%s: %w", namespace, obj.Name, err)
	}
	return nil
}
