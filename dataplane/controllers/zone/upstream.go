package zone

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
)

// DefaultUpstreamRecheck is how often a network left to OVN-Kubernetes is
// looked at again; NAD and Node events look sooner.
const DefaultUpstreamRecheck = 5 * time.Minute

// upstreamRows is how a zone's dataplane stands aside when OVN-Kubernetes
// programs the same network: OVN-Kubernetes' network segmentation writes
// every UDN's rows itself, so a router or switch of the network without
// udnkit's mark is OVN-Kubernetes'. The dataplane then writes nothing for the
// network (Apply refuses before its transaction), reports it once per
// reconcile (log, udnkit_dataplane_skipped_objects_total, a Warning Event on
// the NAD) and sets the owner's DataplaneProgrammed condition False, instead
// of failing the reconcile and retrying. Once it programs the network again
// it removes the condition it wrote.
type UpstreamRows struct {
	Client client.Client
	// zone names this dataplane's zone in messages ("" is the single zone).
	Zone string
	// recheck is when a network left to OVN-Kubernetes is looked at again.
	Recheck time.Duration
}

// fieldOwner is the server-side-apply manager of the condition, one per
// zone: each zone's dataplane removes only what it wrote.
func (u UpstreamRows) fieldOwner() string {
	if u.Zone == "" {
		return "udnkit-dataplane"
	}
	return "udnkit-dataplane-" + u.Zone
}

func (u UpstreamRows) prefix() string {
	if u.Zone == "" {
		return "zone (single): "
	}
	return "zone " + u.Zone + ": "
}

// handle takes Apply's err: when it says OVN-Kubernetes programs the
// network it reports that and returns upstream true (and the error of the
// condition's write); any other err is returned as it is.
func (u UpstreamRows) Handle(ctx context.Context, rec SkipRecorder, src *nadv1.NetworkAttachmentDefinition, owner *nadtrust.Owner,
	err error) (_ reconcile.Result, upstream bool, _ error) {
	var foreign *rows.ForeignRowError
	if !errors.As(err, &foreign) || !foreign.SameNetwork() {
		return reconcile.Result{}, false, err
	}
	msg := u.prefix() + foreign.Error() + ": OVN-Kubernetes programs this network; run udnkit with the admission-only profile beside OVN-Kubernetes' network segmentation"
	rec(ctx, src, "NetworkAttachmentDefinition", udnv1.ReasonOwnedByOVNKubernetes, errors.New(msg))
	if err := u.apply(ctx, owner, &metav1.Condition{Type: udnv1.ConditionDataplaneProgrammed, Status: metav1.ConditionFalse,
		Reason: udnv1.ReasonOwnedByOVNKubernetes, Message: msg}); err != nil {
		return reconcile.Result{}, true, err
	}
	return reconcile.Result{RequeueAfter: u.Recheck}, true, nil
}

// programmed removes the condition this zone wrote, if the owner carries it.
func (u UpstreamRows) Programmed(ctx context.Context, owner *nadtrust.Owner) error {
	st, err := u.status(ctx, owner)
	if err != nil || st == nil {
		return err
	}
	if c := meta.FindStatusCondition(st.Conditions, udnv1.ConditionDataplaneProgrammed); c != nil && strings.HasPrefix(c.Message, u.prefix()) {
		return u.apply(ctx, owner, nil)
	}
	return nil
}

// status reads the owner's status from the cache; nil when the owner is gone
// or replaced.
func (u UpstreamRows) status(ctx context.Context, owner *nadtrust.Owner) (*udnv1.NetworkStatus, error) {
	key := client.ObjectKey{Namespace: owner.Namespace, Name: owner.Name}
	var obj client.Object
	var st *udnv1.NetworkStatus
	switch owner.Kind {
	case "UserDefinedNetwork":
		udn := &udnv1.UserDefinedNetwork{}
		obj, st = udn, &udn.Status
	case "ClusterUserDefinedNetwork":
		cudn := &udnv1.ClusterUserDefinedNetwork{}
		obj, st = cudn, &cudn.Status
	default:
		return nil, fmt.Errorf("owner kind %q is not a network", owner.Kind)
	}
	if err := u.Client.Get(ctx, key, obj); err != nil || obj.GetUID() != owner.UID {
		return nil, client.IgnoreNotFound(err)
	}
	return st, nil
}

// apply writes cond as this zone's only condition on the owner (nil: none,
// which removes the one it wrote).
func (u UpstreamRows) apply(ctx context.Context, owner *nadtrust.Owner, cond *metav1.Condition) error {
	list := []any{}
	if cond != nil {
		since := metav1.Now()
		if st, err := u.status(ctx, owner); err == nil && st != nil {
			if old := meta.FindStatusCondition(st.Conditions, cond.Type); old != nil && old.Status == cond.Status {
				since = old.LastTransitionTime
			}
		}
		list = append(list, map[string]any{"type": cond.Type, "status": string(cond.Status), "reason": cond.Reason,
			"message": cond.Message, "lastTransitionTime": since.UTC().Format(time.RFC3339)})
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": list}}}
	obj.SetGroupVersionKind(udnv1.GroupVersion.WithKind(owner.Kind))
	obj.SetNamespace(owner.Namespace)
	obj.SetName(owner.Name)
	err := u.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(u.fieldOwner()), client.ForceOwnership)
	return client.IgnoreNotFound(err)
}

// skipRecorder is skip with its recorder bound.
type SkipRecorder func(ctx context.Context, obj client.Object, kind, reason string, err error)
