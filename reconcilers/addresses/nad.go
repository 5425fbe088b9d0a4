package addresses

import (
	"context"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/udnkit/udnkit/internal/phase"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
)

// defaultNAD keeps ovn-kubernetes/default in place: created at start,
// recreated when deleted, its config restored when changed.
type defaultNAD struct{ client client.Client }

func setupDefaultNAD(mgr ctrl.Manager) error {
	d := &defaultNAD{client: mgr.GetClient()}
	isStub := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == ovnk.DefaultNetworkNamespace && o.GetName() == ovnk.DefaultNetworkName
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("default-nad").
		For(&nadv1.NetworkAttachmentDefinition{}, builder.WithPredicates(isStub)).
		Complete(d); err != nil {
		return err
	}
	// The first ensure: no event arrives while the NAD does not exist.
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return nil
		}
		_, err := d.Reconcile(ctx, reconcile.Request{})
		return err
	}))
}

// stubScope carries one reconcile of the stub from phase to phase.
type stubScope struct{ phase.Stop }

// Reconcile ensures the namespace, then the stub NAD.
func (d *defaultNAD) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	return phase.Run(ctx, &stubScope{}, []phase.Func[*stubScope]{d.ensureNamespace, d.ensureStub})
}

// ensureNamespace creates the ovn-kubernetes namespace; the stub cannot be
// created without it.
func (d *defaultNAD) ensureNamespace(ctx context.Context, s *stubScope) (reconcile.Result, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ovnk.DefaultNetworkNamespace}}
	if err := d.client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return s.Done(reconcile.Result{}, err)
	}
	return reconcile.Result{}, nil
}

// ensureStub creates the stub NAD, or restores its config.
func (d *defaultNAD) ensureStub(ctx context.Context, s *stubScope) (reconcile.Result, error) {
	var nad nadv1.NetworkAttachmentDefinition
	key := client.ObjectKey{Namespace: ovnk.DefaultNetworkNamespace, Name: ovnk.DefaultNetworkName}
	err := d.client.Get(ctx, key, &nad)
	switch {
	case apierrors.IsNotFound(err):
		nad = nadv1.NetworkAttachmentDefinition{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Spec:       nadv1.NetworkAttachmentDefinitionSpec{Config: netconf.DefaultNADConfig},
		}
		return s.Done(reconcile.Result{}, client.IgnoreAlreadyExists(d.client.Create(ctx, &nad)))
	case err != nil:
		return s.Done(reconcile.Result{}, err)
	case nad.DeletionTimestamp == nil && nad.Spec.Config != netconf.DefaultNADConfig:
		nad.Spec.Config = netconf.DefaultNADConfig
		return s.Done(reconcile.Result{}, d.client.Update(ctx, &nad))
	}
	return reconcile.Result{}, nil
}
