// Package addresses gives pods of Primary Layer2 networks their addresses
// (OKEP-5233 predefined addresses, IPAMClaims, and the KubeVirt
// live-migration design): it writes k8s.ovn.org/pod-networks, or a Warning
// event when the requested addresses conflict, keeps IPAMClaim status, and
// ensures the ovn-kubernetes/default NAD stub.
package addresses

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/udnkit/udnkit/ovnk"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update
// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks;clusteruserdefinednetworks,verbs=get;list;watch
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=ipamclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=ipamclaims/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=network-attachment-definitions,verbs=get;list;watch;create;update;patch

// SetupWithManager registers the pod address controller and, when the
// feature is on, the default NAD stub controller.
func SetupWithManager(mgr ctrl.Manager, cfg ovnk.ClusterConfig) error {
	_, err := Setup(mgr, cfg)
	return err
}

// Setup is SetupWithManager that also returns the pod reconciler.
func Setup(mgr ctrl.Manager, cfg ovnk.ClusterConfig) (*Reconciler, error) {
	r := NewReconciler(mgr.GetClient(), mgr.GetEventRecorder("udnkit-addresses"), cfg)
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if cfg.PreconfiguredUDNAddresses {
		if err := setupDefaultNAD(mgr); err != nil {
			return nil, err
		}
	}
	return r, nil
}
