// Package addresses gives pods their k8s.ovn.org/pod-networks entries on
// udnkit's networks: on Primary Layer2 networks here (OKEP-5233 predefined
// addresses, IPAMClaims, and the KubeVirt live-migration design), on
// Primary Layer3 networks and on the Secondary networks a pod names in
// k8s.v1.cni.cncf.io/networks through package attach (attachments.go). It
// writes the entries, or a Warning event when an allocation is refused,
// keeps IPAMClaim status, and ensures the ovn-kubernetes/default NAD stub.
// Every writer of the annotation keeps the other networks' entries (the
// "default" one OVN-Kubernetes writes included).
package addresses

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/udnkit/udnkit/ovnk"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update
// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks;clusteruserdefinednetworks,verbs=get;list;watch
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=ipamclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=ipamclaims/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=network-attachment-definitions,verbs=get;list;watch;create;update;patch

// SetupWithManager registers the pod address controller and, when the
// feature is on, the default NAD stub controller with mgr.
func SetupWithManager(mgr ctrl.Manager, cfg ovnk.ClusterConfig) error {
	return setupWithManager(mgr, cfg, false)
}

// setupWithManager is SetupWithManager; fifo: see Reconciler.fifo.
func setupWithManager(mgr ctrl.Manager, cfg ovnk.ClusterConfig, fifo bool) error {
	r := newReconciler(mgr.GetClient(), mgr.GetEventRecorder("udnkit-addresses"), cfg)
	r.fifo = fifo
	if err := r.setup(mgr); err != nil {
		return err
	}
	if cfg.PreconfiguredUDNAddresses {
		return setupDefaultNAD(mgr)
	}
	return nil
}
