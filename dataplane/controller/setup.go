package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/udnkit/udnkit/dataplane"
)

// Options configure the dataplane controllers.
type Options struct {
	// NBAddress and SBAddress are the manager's --ovn-nb-address and
	// --ovn-sb-address: "unix:/abs/path.sock" or "tcp:host:port".
	NBAddress, SBAddress string
	// Local says whether a node belongs to this OVN zone; nil means every node
	// does (one zone, as `make run` has).
	Local func(*corev1.Node) bool
}

// Reconcilers are the dataplane controllers Setup registered, sharing one
// OVN client; their exported fields may be tuned before the manager starts.
type Reconcilers struct {
	OVN           *dataplane.Client
	Layer2        *Layer2Reconciler
	Layer3        *Layer3Reconciler
	MultiVTEP     *MultiVTEPReconciler
	LiveMigration *LiveMigrationReconciler
}

// Setup connects to OVN and registers the dataplane controllers with the
// manager: the Layer2 transit-router topology (OKEP-5094), the Layer3 subnet
// pair policies (OKEP-5377), the Layer2 multi-VTEP ports and encaps
// (OKEP-5535) and the kubevirt live-migration routes.
// The client closes when ctx ends.
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) (*Reconcilers, error) {
	ovn, err := dataplane.NewClient(ctx, o.NBAddress, o.SBAddress)
	if err != nil {
		return nil, err
	}
	c := mgr.GetClient()
	rs := &Reconcilers{
		OVN:           ovn,
		Layer2:        &Layer2Reconciler{Client: c, OVN: ovn, Local: o.Local},
		Layer3:        &Layer3Reconciler{Client: c, OVN: ovn},
		MultiVTEP:     &MultiVTEPReconciler{Client: c, OVN: ovn, Local: o.Local},
		LiveMigration: &LiveMigrationReconciler{Client: c, OVN: ovn},
	}
	setups := []func(ctrl.Manager) error{rs.Layer2.SetupWithManager, rs.Layer3.SetupWithManager, rs.MultiVTEP.SetupWithManager,
		rs.LiveMigration.SetupWithManager}
	for _, setup := range setups {
		if err := setup(mgr); err != nil {
			ovn.Close()
			return nil, err
		}
	}
	go func() {
		<-ctx.Done()
		ovn.Close()
	}()
	return rs, nil
}
