package webhooks

import (
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
)

// MutatePodPath is where PodDefaulter is served (the generated
// MutatingWebhookConfiguration points there).
const MutatePodPath = "/mutate--v1-pod"

// SetupWithManager registers every udnkit webhook on mgr's webhook server:
// the UDN and CUDN validators, the pod validator and the pod defaulter. They
// read the cluster through mgr.GetAPIReader() (uncached), so a network
// created a moment ago is seen by the next request. The manager's scheme must
// know k8s.ovn.org/v1, core/v1 and IPAMClaims.
func SetupWithManager(mgr ctrl.Manager, cfg ovnk.ClusterConfig) error {
	reader := mgr.GetAPIReader()
	if err := ctrl.NewWebhookManagedBy(mgr, &udnv1.UserDefinedNetwork{}).
		WithValidator(&UserDefinedNetworkValidator{Client: reader, Config: cfg}).Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &udnv1.ClusterUserDefinedNetwork{}).
		WithValidator(&ClusterUserDefinedNetworkValidator{Client: reader, Config: cfg}).Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &corev1.Pod{}).
		WithValidator(&PodValidator{Client: reader, Config: cfg}).Complete(); err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(MutatePodPath, &webhook.Admission{
		Handler: &PodDefaulter{Client: reader, Config: cfg, Decoder: admission.NewDecoder(mgr.GetScheme())},
	})
	return nil
}
