// Package nadtrust is the one rule by which udnkit's consumers (the
// dataplane controllers, the network ID allocators and their start-up
// rebuild, the host subnet reconciler) decide whether a
// NetworkAttachmentDefinition carrying udnkit's label is one udnkit wrote:
// a NAD is udnkit's to act on only when
//
//   - its controller owner reference is a UserDefinedNetwork or
//     ClusterUserDefinedNetwork of k8s.ovn.org/v1 (NoController),
//   - its name is the owner's name (a UDN's NAD is also in the UDN's
//     namespace: a namespaced owner reference names an object of the NAD's
//     namespace) (NameMismatch),
//   - that owner exists in the consumer's cache (OwnerNotFound) with the
//     reference's UID (OwnerUIDMismatch),
//   - and its spec.config names the owner's network (ovnk's NADSource
//     NetworkName) and the NAD itself (netAttachDefName)
//     (NetworkNameMismatch, MalformedConfig),
//   - and, when the owner records a network ID and tunnel keys (which only
//     udnkit and OVN-Kubernetes may write on it), the NAD records the same
//     (NetworkIDMismatch): a NAD cannot carry another network's IDs.
//
// A CUDN's NAD is not checked against the CUDN's namespace selector: the NAD
// reconciler keeps a NAD in a namespace the CUDN no longer selects for as
// long as pods use it, and the dataplane keeps serving those pods.
//
// Labels, the config's name and owner references are all a NAD writer's to
// choose; the owner's existence and UID are not, and a tenant cannot create a
// UDN in another tenant's namespace. Upstream OVN-Kubernetes' network manager
// (pkg/networkmanager/nad_controller.go) acts on every NAD of its CNI type
// whatever its owner: of two NADs naming one network with different
// configs the first one it saw wins, and a network ID annotated on a NAD is
// reserved if free. udnkit trusts only what it can verify.
//
// A Guard applies the rule for one consumer and reports each NAD that fails
// it once per NAD version: a log line, a Warning Event
// (UntrustedNetworkAttachmentDefinition) on the NAD naming the failed check,
// and udnkit_untrusted_nads_total{consumer, reason}.
package nadtrust

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
)

// EventReason is the reason of the Warning Event on an ignored NAD.
const EventReason = "UntrustedNetworkAttachmentDefinition"

// The checks a NAD can fail (the reason label of udnkit_untrusted_nads_total).
const (
	ReasonNoController        = "NoController"
	ReasonNameMismatch        = "NameMismatch"
	ReasonOwnerNotFound       = "OwnerNotFound"
	ReasonOwnerUIDMismatch    = "OwnerUIDMismatch"
	ReasonMalformedConfig     = "MalformedConfig"
	ReasonNetworkNameMismatch = "NetworkNameMismatch"
	ReasonNetworkIDMismatch   = "NetworkIDMismatch"
	// ReasonClaimLost: a verified NAD records network IDs an older network
	// holds (Guard.Report by the allocators' rebuild).
	ReasonClaimLost = "ClaimLost"
)

// Untrusted is the error Verify returns for a NAD that fails the rule.
type Untrusted struct {
	// Reason is the failed check (Reason*).
	Reason string
	// Message names the check and the values that failed it.
	Message string
}

func (e *Untrusted) Error() string { return e.Message }

// IsUntrusted says whether err is a failed check (not a failed read).
func IsUntrusted(err error) (*Untrusted, bool) {
	var u *Untrusted
	ok := errors.As(err, &u)
	return u, ok
}

// Owner is the verified owner of a NAD.
type Owner struct {
	// Kind is UserDefinedNetwork or ClusterUserDefinedNetwork.
	Kind string
	// Namespace is a UDN's namespace ("" for a CUDN).
	Namespace, Name string
	UID             types.UID
	// Created is the owner's creationTimestamp.
	Created metav1.Time
	// Network is the owner's OVN network name.
	Network string
}

func untrusted(reason, format string, args ...any) error {
	return &Untrusted{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Verify applies the rule to nad, reading its owner through r (a consumer's
// cache). It returns an *Untrusted error for a NAD that fails a check, and
// other errors only for failed reads.
func Verify(ctx context.Context, r client.Reader, nad *nadv1.NetworkAttachmentDefinition) (Owner, error) {
	return VerifyWith(nad, readerLookup(ctx, r, nad))
}

// readerLookup reads owners through r. A cache hands over its own object,
// not a copy (client.UnsafeDisableDeepCopy): the rule only reads the
// owner's UID, resourceVersion, creationTimestamp and annotations and keeps
// none of them.
func readerLookup(ctx context.Context, r client.Reader, nad *nadv1.NetworkAttachmentDefinition) Lookup {
	return func(kind string, key types.NamespacedName) (client.Object, error) {
		var obj client.Object = &udnv1.ClusterUserDefinedNetwork{}
		if kind == udnv1.KindUserDefinedNetwork {
			obj = &udnv1.UserDefinedNetwork{}
		}
		if err := r.Get(ctx, key, obj, client.UnsafeDisableDeepCopy); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("reading the controller %s %s of NetworkAttachmentDefinition %s/%s: %w", kind, key, nad.Namespace, nad.Name, err)
		}
		return obj, nil
	}
}

// Lookup returns the UDN (kind UserDefinedNetwork) or CUDN at key, nil
// when there is none.
type Lookup func(kind string, key types.NamespacedName) (client.Object, error)

// VerifyWith is Verify with owners read through lookup (a rebuild's lists).
// It never writes to the owner lookup returns, which may be a cache's.
func VerifyWith(nad *nadv1.NetworkAttachmentDefinition, lookup Lookup) (Owner, error) {
	owner, err := controllerOf(nad)
	if err != nil {
		return Owner{}, err
	}
	obj, err := lookup(owner.Kind, types.NamespacedName{Namespace: owner.Namespace, Name: owner.Name})
	if err != nil {
		return Owner{}, err
	}
	return against(nad, owner, obj)
}

// controllerOf is the rule's checks of nad's controller reference: the
// owner it names (Kind, Namespace, Name).
func controllerOf(nad *nadv1.NetworkAttachmentDefinition) (Owner, error) {
	ref := metav1.GetControllerOf(nad)
	if ref == nil {
		return Owner{}, untrusted(ReasonNoController, "metadata.ownerReferences: no controller reference; udnkit acts only on NADs a UserDefinedNetwork or ClusterUserDefinedNetwork controls")
	}
	if ref.APIVersion != udnv1.GroupVersion.String() || (ref.Kind != udnv1.KindUserDefinedNetwork && ref.Kind != udnv1.KindClusterUserDefinedNetwork) {
		return Owner{}, untrusted(ReasonNoController, "metadata.ownerReferences: the controller is %s %s, not a UserDefinedNetwork or ClusterUserDefinedNetwork of %s",
			ref.APIVersion, ref.Kind, udnv1.GroupVersion)
	}
	if ref.Name != nad.Name {
		return Owner{}, untrusted(ReasonNameMismatch, "metadata.name: %q is not the name of its controller %s %q", nad.Name, ref.Kind, ref.Name)
	}
	owner := Owner{Kind: ref.Kind, Name: ref.Name, UID: ref.UID}
	if ref.Kind == udnv1.KindUserDefinedNetwork {
		owner.Namespace = nad.Namespace
	}
	return owner, nil
}

// against is the rule's remaining checks, of nad against obj (nil: none),
// the owner controllerOf named (whose UID is the reference's).
func against(nad *nadv1.NetworkAttachmentDefinition, owner Owner, obj client.Object) (Owner, error) {
	if obj == nil {
		return Owner{}, untrusted(ReasonOwnerNotFound, "metadata.ownerReferences: the controller %s %s does not exist", owner.Kind, refName(owner))
	}
	if obj.GetUID() != owner.UID {
		return Owner{}, untrusted(ReasonOwnerUIDMismatch, "metadata.ownerReferences: the controller %s %s has UID %s, not %s", owner.Kind, refName(owner), obj.GetUID(), owner.UID)
	}
	owner.Created = obj.GetCreationTimestamp()
	owner.Network = netconf.NADSource{Kind: owner.Kind, Meta: metav1.ObjectMeta{Namespace: owner.Namespace, Name: owner.Name}}.NetworkName()
	conf, err := netconf.Parse(nad.Spec.Config)
	if err != nil {
		return Owner{}, untrusted(ReasonMalformedConfig, "spec.config: %v", err)
	}
	if conf.Name != owner.Network {
		return Owner{}, untrusted(ReasonNetworkNameMismatch, "spec.config name %q is not %q, the network of its controller %s %s", conf.Name, owner.Network, owner.Kind, refName(owner))
	}
	if key := nad.Namespace + "/" + nad.Name; conf.NADName != key {
		return Owner{}, untrusted(ReasonNetworkNameMismatch, "spec.config netAttachDefName %q is not the NAD's own %q", conf.NADName, key)
	}
	if err := sameIDs(obj.GetAnnotations(), nad.Annotations); err != nil {
		return Owner{}, untrusted(ReasonNetworkIDMismatch, "metadata.annotations: %v", err)
	}
	return owner, nil
}

// sameIDs checks that the NAD records the network ID and tunnel keys its
// owner records (only udnkit and OVN-Kubernetes may write them on a
// UDN/CUDN: the ovn-annotation-writers policy). An owner that records none
// (a network OVN-Kubernetes created, which annotates only its NADs) leaves
// the NAD's unchecked.
func sameIDs(owner, nad map[string]string) error {
	want, err := ovnk.DecodeNetworkIDs(owner)
	if err != nil {
		return nil // the owner's are rewritten by its reconcile
	}
	got, err := ovnk.DecodeNetworkIDs(nad)
	if err != nil {
		return err
	}
	if want.HasID && (!got.HasID || got.ID != want.ID) {
		return fmt.Errorf("%s=%q is not %d, its controller's", ovnk.AnnotationNetworkID, nad[ovnk.AnnotationNetworkID], want.ID)
	}
	if _, ok := owner[ovnk.AnnotationTunnelKeys]; ok && !slices.Equal(got.TunnelKeys, want.TunnelKeys) {
		return fmt.Errorf("%s=%q is not %q, its controller's", ovnk.AnnotationTunnelKeys, nad[ovnk.AnnotationTunnelKeys], owner[ovnk.AnnotationTunnelKeys])
	}
	return nil
}

func refName(o Owner) string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

var untrustedNADs = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "udnkit_untrusted_nads_total",
	Help: "NetworkAttachmentDefinitions with udnkit's label that a consumer ignored because they fail the ownership rule (reason: the failed check) or lost a network ID claim to an older network (ClaimLost); counted once per NAD version and consumer.",
}, []string{"consumer", "reason"})

func init() { metrics.Registry.MustRegister(untrustedNADs) }

// Guard verifies NADs for one consumer and reports each failure once per NAD
// version. The zero value is not usable: Reader and Consumer are required.
type Guard struct {
	// Reader reads owners: the consumer's cache.
	Reader client.Reader
	// Recorder, when set, raises the Warning Event on a failed NAD.
	Recorder recorder.EventRecorder
	// Consumer names the consumer in the metric, the log and the Event.
	Consumer string
	// Live, when set, reads straight from the apiserver: before a NAD is
	// reported because its owner is missing from Reader (or has another UID
	// there), the owner is looked up through Live once, so a cache that
	// lags (a new network's NAD seen before its UDN) raises no false alarm.
	Live client.Reader
	// Remember, when set, keeps each NAD's last verdict with the NAD's and
	// its owner's UID and resourceVersion, and answers from it while both
	// are unchanged: the rule reads only the NAD and its owner, and a
	// consumer whose controllers each verify every NAD on every sweep then
	// parses each NAD version once. The consumer Forgets NADs that are gone.
	Remember bool

	mu       sync.Mutex
	reported map[types.NamespacedName]string // NAD -> resourceVersion/reason last reported
	verdicts map[types.NamespacedName]verdict

	// lists are Labelled's: listing says a list runs, next is the one the
	// calls made meanwhile wait for.
	lists   sync.Mutex
	listing bool
	next    *listing
}

// verdict is the rule's answer for one NAD version against one owner
// version.
type verdict struct {
	nadUID, ownerUID types.UID
	nadRV, ownerRV   string
	owner            Owner
	err              error
}

// verify is Verify through Reader, answered from the last verdict when
// Remember is set and the NAD and its owner are the versions it was for.
// An owner that is missing, and objects without a resourceVersion (built
// by hand, not read), are verified every time.
func (g *Guard) verify(ctx context.Context, nad *nadv1.NetworkAttachmentDefinition) (Owner, error) {
	if !g.Remember || nad.ResourceVersion == "" {
		return Verify(ctx, g.Reader, nad)
	}
	owner, err := controllerOf(nad)
	if err != nil {
		return Owner{}, err
	}
	obj, err := readerLookup(ctx, g.Reader, nad)(owner.Kind, types.NamespacedName{Namespace: owner.Namespace, Name: owner.Name})
	if err != nil {
		return Owner{}, err
	}
	if obj == nil || obj.GetResourceVersion() == "" {
		return against(nad, owner, obj)
	}
	key := client.ObjectKeyFromObject(nad)
	now := verdict{nadUID: nad.UID, nadRV: nad.ResourceVersion, ownerUID: obj.GetUID(), ownerRV: obj.GetResourceVersion()}
	g.mu.Lock()
	last, ok := g.verdicts[key]
	g.mu.Unlock()
	if ok && last.nadUID == now.nadUID && last.nadRV == now.nadRV && last.ownerUID == now.ownerUID && last.ownerRV == now.ownerRV {
		return last.owner, last.err
	}
	now.owner, now.err = against(nad, owner, obj)
	g.mu.Lock()
	if g.verdicts == nil {
		g.verdicts = map[types.NamespacedName]verdict{}
	}
	g.verdicts[key] = now
	g.mu.Unlock()
	return now.owner, now.err
}

// Trusted verifies nad; a NAD that fails is reported (once per version) and
// trusted is false. err is a failed read only.
func (g *Guard) Trusted(ctx context.Context, nad *nadv1.NetworkAttachmentDefinition) (owner Owner, trusted bool, err error) {
	owner, err = g.verify(ctx, nad)
	if u, ok := IsUntrusted(err); ok {
		if g.lagging(ctx, nad, u.Reason) {
			// Not reported: the owner's watch queues the NAD again once the
			// cache has it.
			return Owner{}, false, nil
		}
		g.Report(ctx, nad, u.Reason, u.Message)
		return Owner{}, false, nil
	}
	if err != nil {
		return Owner{}, false, err
	}
	return owner, true, nil
}

// lagging says whether a NAD whose owner the cache lacks (or knows with
// another UID) passes the rule read through Live: the cache has not caught
// up yet. Asked once per NAD version and reason, before the first report.
func (g *Guard) lagging(ctx context.Context, nad *nadv1.NetworkAttachmentDefinition, reason string) bool {
	if g.Live == nil || (reason != ReasonOwnerNotFound && reason != ReasonOwnerUIDMismatch) {
		return false
	}
	g.mu.Lock()
	done := g.reported[client.ObjectKeyFromObject(nad)] == nad.ResourceVersion+"/"+reason
	g.mu.Unlock()
	if done {
		return false
	}
	_, err := Verify(ctx, g.Live, nad)
	return err == nil
}

// Report logs, counts and raises the Event for nad ignored for reason, once
// per NAD version and reason.
func (g *Guard) Report(ctx context.Context, nad *nadv1.NetworkAttachmentDefinition, reason, message string) {
	key := client.ObjectKeyFromObject(nad)
	seen := nad.ResourceVersion + "/" + reason
	g.mu.Lock()
	if g.reported == nil {
		g.reported = map[types.NamespacedName]string{}
	}
	again := g.reported[key] == seen
	g.reported[key] = seen
	g.mu.Unlock()
	if again {
		return
	}
	untrustedNADs.WithLabelValues(g.Consumer, reason).Inc()
	log.FromContext(ctx).Info("NetworkAttachmentDefinition ignored", "consumer", g.Consumer, "nad", key, "reason", reason, "check", message)
	if g.Recorder != nil {
		g.Recorder.Eventf(nad, nil, corev1.EventTypeWarning, EventReason, "Verify", "%s ignores this NetworkAttachmentDefinition (%s): %s", g.Consumer, reason, message)
	}
}

// Forget drops what the Guard remembers of a NAD that is gone (its reports
// and its verdict).
func (g *Guard) Forget(key types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.reported, key)
	delete(g.verdicts, key)
}

// Count is udnkit_untrusted_nads_total{consumer, reason}, for tests.
func Count(consumer, reason string) float64 {
	var m dto.Metric
	_ = untrustedNADs.WithLabelValues(consumer, reason).Write(&m)
	return m.GetCounter().GetValue()
}

// Verified is a NAD of a Labelled list, checked at most once for all the
// list's callers.
type Verified struct {
	// NAD is the Reader's object (read-only).
	NAD *nadv1.NetworkAttachmentDefinition

	g       *Guard
	once    sync.Once
	owner   Owner
	trusted bool
	err     error
}

// Trusted is the Guard's Trusted for the NAD, asked by the first of the
// list's callers that needs it and remembered for the others; a NAD being
// deleted is not trusted (and not checked).
func (v *Verified) Trusted(ctx context.Context) (Owner, bool, error) {
	v.once.Do(func() {
		if v.NAD.DeletionTimestamp.IsZero() {
			v.owner, v.trusted, v.err = v.g.Trusted(ctx, v.NAD)
		}
	})
	return v.owner, v.trusted, v.err
}

// listing is one Labelled list and the calls that share it.
type listing struct {
	done chan struct{}
	out  []*Verified
	err  error
	// calls is how many calls wait for it.
	calls int
}

// Labelled lists every NAD with udnkit's label in Reader, each with
// Trusted's answer for it, asked once for all the list's callers.
// Calls made at the same time share lists: a call waits for the first list
// that begins after it, which answers every call made while the list
// before it ran. Each answer is then as fresh as a list the call made
// itself, and the controllers of a consumer that sweep after one event
// (each listing every NAD) list and verify once or twice instead of once
// each. The list and its NADs are shared: read-only.
func (g *Guard) Labelled(ctx context.Context) ([]*Verified, error) {
	g.lists.Lock()
	l := g.next
	if l == nil {
		l = &listing{done: make(chan struct{})}
		g.next = l
	}
	l.calls++
	lead := !g.listing
	if lead {
		g.listing, g.next = true, nil
	}
	g.lists.Unlock()
	if lead {
		g.list(context.WithoutCancel(ctx), l)
	}
	select {
	case <-l.done:
		return l.out, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// list runs l, then the list the calls made meanwhile wait for, if any.
func (g *Guard) list(ctx context.Context, l *listing) {
	var list nadv1.NetworkAttachmentDefinitionList
	l.err = g.Reader.List(ctx, &list, client.HasLabels{ovnk.LabelUserDefinedNetwork}, client.UnsafeDisableDeepCopy)
	if l.err == nil {
		l.out = make([]*Verified, len(list.Items))
		for i := range list.Items {
			l.out[i] = &Verified{NAD: &list.Items[i], g: g}
		}
	}
	close(l.done)
	g.lists.Lock()
	next := g.next
	g.next = nil
	g.listing = next != nil
	g.lists.Unlock()
	if next != nil {
		go g.list(ctx, next)
	}
}
