package reconcilers

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
	"github.com/udnkit/udnkit/ovnk/netconf"
	"github.com/udnkit/udnkit/ovnk/nsselect"
)

// Conflicts the webhooks cannot rule out. They decide from an informer
// cache, so two Primary networks for one namespace created within the
// cache's lag are both admitted; a CUDN's selector may come to match a
// namespace that has a Primary network; and a Layer3 subnet appended
// (OKEP-5377) may overlap a range that came into use after admission. The
// reconcilers settle them here:
//
//   - Primary networks: per namespace, the oldest Primary network
//     (creationTimestamp, then kind, then namespace and name: a CUDN wins a
//     tie with a UDN) keeps it. Another gets no NAD there (one it had is
//     removed once no pod uses it) and NetworkCreated=False with reason
//     PrimaryNetworkConflict and a Warning event, until the older one is
//     gone. A network being deleted still holds its namespaces: its NAD
//     lives until its finalizer goes.
//   - Appended Layer3 subnets: a subnet in the spec but not yet in the
//     network's NADs must not overlap the network's join subnets, the
//     cluster's internal or transit ranges, or a subnet of another network's
//     NAD in one of its namespaces (a pod there would get both). Otherwise the NADs keep their
//     old subnets and NetworkCreated=False with reason SubnetConflict and a
//     Warning event, until the conflict is gone.

// conflict is why a network's NetworkCreated condition is False though its
// NADs are as they should be; applyStatus reports it.
type conflict struct {
	reason, message string
}

// override turns the status a reconcile reached into the conflict's; other
// problems the reconcile found stay in the message. A nil conflict changes
// nothing.
func (c *conflict) override(status metav1.ConditionStatus, reason, message string) (metav1.ConditionStatus, string, string) {
	if c == nil {
		return status, reason, message
	}
	if status == metav1.ConditionFalse && message != "" {
		return metav1.ConditionFalse, c.reason, c.message + " Also: " + message
	}
	return metav1.ConditionFalse, c.reason, c.message
}

// watchConflicts adds the watches that requeue a network when a rival
// Primary network appears, changes or goes, and when a NAD in a namespace of
// a network with a subnet conflict changes. kind is the controller's kind.
func (r *networkReconciler) watchConflicts(b *builder.Builder, kind string) *builder.Builder {
	created := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	return b.
		Watches(&udnv1.UserDefinedNetwork{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return r.rivalsOf(ctx, kind, o, []string{o.GetNamespace()})
		}), created).
		Watches(&udnv1.ClusterUserDefinedNetwork{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			cu := o.(*udnv1.ClusterUserDefinedNetwork)
			if !cu.Spec.Network.IsPrimary() {
				return nil
			}
			return r.rivalsOf(ctx, kind, o, r.selectedNamespaces(ctx, cu))
		}), created).
		Watches(&nadv1.NetworkAttachmentDefinition{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return r.subnetConflicted(ctx, kind, o.GetNamespace())
		}))
}

// rivalsOf lists the Primary networks of the controller's kind, other than
// changed, that select one of namespaces.
func (r *networkReconciler) rivalsOf(ctx context.Context, kind string, changed client.Object, namespaces []string) []ctrl.Request {
	var out []ctrl.Request
	self := func(o client.Object) bool { return o.GetUID() == changed.GetUID() }
	if kind == kindUDN {
		for _, ns := range namespaces {
			var udns udnv1.UserDefinedNetworkList
			if err := r.client.List(ctx, &udns, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
				continue
			}
			for _, u := range udns.Items {
				if u.Spec.Network().IsPrimary() && !self(&u) {
					out = append(out, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: u.Namespace, Name: u.Name}})
				}
			}
		}
		return out
	}
	seen := map[string]bool{}
	for _, ns := range namespaces {
		var nsObj corev1.Namespace
		if err := r.client.Get(ctx, client.ObjectKey{Name: ns}, &nsObj, client.UnsafeDisableDeepCopy); err != nil {
			continue
		}
		cudns, err := r.primaryCUDNs(ctx, changed.GetUID(), &nsObj)
		if err != nil {
			continue
		}
		for _, c := range cudns {
			if !seen[c.name] {
				seen[c.name] = true
				out = append(out, ctrl.Request{NamespacedName: types.NamespacedName{Name: c.name}})
			}
		}
	}
	return out
}

// indexCUDNNamespaces indexes CUDNs by the namespaces their selector names
// (nsselect.IndexKeys), and indexCUDNSubnetConflict the CUDNs whose
// condition reports a subnet conflict: every network's reconcile, and every
// namespace and NAD event, used to list every CUDN.
const (
	indexCUDNNamespaces     = "reconcilers.cudn.selectedNamespaces"
	indexCUDNSubnetConflict = "reconcilers.cudn.subnetConflict"
)

func setupConflictIndexes(indexer client.FieldIndexer) error {
	if err := indexer.IndexField(context.Background(), &udnv1.ClusterUserDefinedNetwork{}, indexCUDNNamespaces, nsselect.IndexKeys); err != nil {
		return err
	}
	return indexer.IndexField(context.Background(), &udnv1.ClusterUserDefinedNetwork{}, indexCUDNSubnetConflict, cudnSubnetConflictKeys)
}

// cudnSubnetConflictKeys is the indexCUDNSubnetConflict key of a CUDN.
func cudnSubnetConflictKeys(o client.Object) []string {
	if cu, ok := o.(*udnv1.ClusterUserDefinedNetwork); ok && subnetConflictReported(cu.Status.Conditions) {
		return []string{"true"}
	}
	return nil
}

func subnetConflictReported(conds []metav1.Condition) bool {
	c := meta.FindStatusCondition(conds, udnv1.ConditionNetworkCreated)
	return c != nil && c.Reason == udnv1.ReasonSubnetConflict
}

// primaryCUDNs lists the Primary CUDNs other than except whose selector
// matches ns, as the age rule sees them.
func (r *networkReconciler) primaryCUDNs(ctx context.Context, except types.UID, ns client.Object) ([]rival, error) {
	cudns, err := nsselect.Selecting(ctx, r.client, indexCUDNNamespaces, ns, func(cu *udnv1.ClusterUserDefinedNetwork) bool {
		return cu.Spec.Network.IsPrimary() && cu.UID != except
	})
	if err != nil {
		return nil, err
	}
	out := make([]rival, 0, len(cudns))
	for _, cu := range cudns {
		out = append(out, rival{kind: kindCUDN, name: cu.Name, created: cu.CreationTimestamp})
	}
	return out, nil
}

// selectedNamespaces lists the namespaces cu's selector matches (none when
// it is invalid), from the cache.
func (r *networkReconciler) selectedNamespaces(ctx context.Context, cu *udnv1.ClusterUserDefinedNetwork) []string {
	sel, err := metav1.LabelSelectorAsSelector(&cu.Spec.NamespaceSelector)
	if err != nil {
		return nil
	}
	list, err := nsselect.Namespaces(ctx, r.client, sel)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, ns := range list {
		out = append(out, ns.Name)
	}
	return out
}

// subnetConflicted lists the networks of the controller's kind whose
// condition reports a subnet conflict and that may have a NAD in namespace.
func (r *networkReconciler) subnetConflicted(ctx context.Context, kind, namespace string) []ctrl.Request {
	var out []ctrl.Request
	if kind == kindUDN {
		var udns udnv1.UserDefinedNetworkList
		if err := r.client.List(ctx, &udns, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err == nil {
			for _, u := range udns.Items {
				if subnetConflictReported(u.Status.Conditions) {
					out = append(out, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: u.Namespace, Name: u.Name}})
				}
			}
		}
		return out
	}
	var cudns udnv1.ClusterUserDefinedNetworkList
	if err := r.client.List(ctx, &cudns, client.MatchingFields{indexCUDNSubnetConflict: "true"}, client.UnsafeDisableDeepCopy); err == nil {
		for _, cu := range cudns.Items {
			if subnetConflictReported(cu.Status.Conditions) {
				out = append(out, ctrl.Request{NamespacedName: types.NamespacedName{Name: cu.Name}})
			}
		}
	}
	return out
}

// resolveConflicts settles n's conflicts before reconcileNetwork: it returns
// the namespaces n keeps (those where no older Primary network holds it),
// narrows n.spec to the NADs' old subnets when an appended Layer3 subnet
// conflicts, and sets n.conflict (with a Warning event when the condition
// changes).
func (r *networkReconciler) resolveConflicts(ctx context.Context, n *network, namespaces []string) ([]string, error) {
	if !n.obj.GetDeletionTimestamp().IsZero() {
		return namespaces, nil
	}
	var reason string
	var msgs []string
	if n.spec.IsPrimary() {
		kept, lost, err := r.primaryWinners(ctx, *n, namespaces)
		if err != nil {
			return nil, err
		}
		if len(lost) > 0 {
			reason = udnv1.ReasonPrimaryNetworkConflict
			msgs = append(msgs, lostMessage(lost, n.kind))
			namespaces = kept
		}
	}
	if n.spec.Layer3 != nil {
		spec, msg, err := r.appendedSubnetConflicts(ctx, *n, namespaces)
		if err != nil {
			return nil, err
		}
		if msg != "" {
			if reason == "" {
				reason = udnv1.ReasonSubnetConflict
			}
			msgs = append(msgs, msg)
			n.spec = spec
		}
	}
	if reason == "" {
		return namespaces, nil
	}
	n.conflict = &conflict{reason: reason, message: strings.Join(msgs, " ")}
	if old := meta.FindStatusCondition(n.status.Conditions, udnv1.ConditionNetworkCreated); old == nil ||
		old.Reason != reason || !strings.HasPrefix(old.Message, n.conflict.message) {
		r.event(n.obj, reason, n.conflict.message)
	}
	return namespaces, nil
}

// rival is a Primary network as the age rule sees it.
type rival struct {
	kind, namespace, name string
	created               metav1.Time
}

func (a rival) ref() string {
	if a.kind == kindUDN {
		return kindUDN + " " + a.namespace + "/" + a.name
	}
	return a.kind + " " + a.name
}

// olderThan is the rule that picks which Primary network keeps a namespace:
// the earlier creationTimestamp, then the kind (ClusterUserDefinedNetwork
// before UserDefinedNetwork), then namespace and name. Timestamps have
// one-second resolution, so networks created together are ordered by the
// tie-breakers, the same way on every reconcile.
func (a rival) olderThan(b rival) bool {
	if !a.created.Equal(&b.created) {
		return a.created.Before(&b.created)
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	if a.namespace != b.namespace {
		return a.namespace < b.namespace
	}
	return a.name < b.name
}

// primaryWinners splits namespaces into those n keeps and those an older
// Primary network holds (namespace -> that network).
func (r *networkReconciler) primaryWinners(ctx context.Context, n network, namespaces []string) ([]string, map[string]rival, error) {
	self := rival{kind: n.kind, namespace: n.obj.GetNamespace(), name: n.obj.GetName(), created: n.obj.GetCreationTimestamp()}
	var kept []string
	lost := map[string]rival{}
	for _, ns := range namespaces {
		var winner *rival
		older := func(o rival) {
			if o.olderThan(self) && (winner == nil || o.olderThan(*winner)) {
				winner = &o
			}
		}
		var udns udnv1.UserDefinedNetworkList
		if err := r.client.List(ctx, &udns, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return nil, nil, err
		}
		for _, u := range udns.Items {
			if u.Spec.Network().IsPrimary() && u.UID != n.obj.GetUID() {
				older(rival{kind: kindUDN, namespace: u.Namespace, name: u.Name, created: u.CreationTimestamp})
			}
		}
		// A namespace not in the cache (yet) has no labels, as before.
		nsObj := corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if err := r.client.Get(ctx, client.ObjectKey{Name: ns}, &nsObj, client.UnsafeDisableDeepCopy); client.IgnoreNotFound(err) != nil {
			return nil, nil, err
		}
		cudns, err := r.primaryCUDNs(ctx, n.obj.GetUID(), &nsObj)
		if err != nil {
			return nil, nil, err
		}
		for _, c := range cudns {
			older(c)
		}
		if winner == nil {
			kept = append(kept, ns)
		} else {
			lost[ns] = *winner
		}
	}
	return kept, lost, nil
}

// lostMessage is read by whoever may read the network reporting it
// (reporter is its kind): a UDN's tenant may not read CUDNs, so a UDN's
// message calls the CUDN that won "a ClusterUserDefinedNetwork" only.
func lostMessage(lost map[string]rival, reporter string) string {
	var parts []string
	for ns, w := range lost {
		name := w.ref()
		if reporter == kindUDN && w.kind == kindCUDN {
			name = "a " + kindCUDN
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", ns, name))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d namespace(s) already have an older primary network: %s; this network gets no NetworkAttachmentDefinition there until that network is deleted.",
		len(lost), listed(parts, ", ", maxListedInMessage))
}

// usedRange is a range an appended subnet must not overlap.
type usedRange struct {
	prefix netip.Prefix
	what   string
}

// appendedSubnetConflicts checks the Layer3 subnets of n's spec that its
// NADs do not have yet (OKEP-5377 appends). When one overlaps a range in use,
// it returns n's spec narrowed to the NADs' subnets and the reason; with no
// NAD yet there is nothing appended and nothing to keep.
func (r *networkReconciler) appendedSubnetConflicts(ctx context.Context, n network, namespaces []string) (udnv1.NetworkSpec, string, error) {
	owned, err := r.ownedNADs(ctx, n)
	if err != nil {
		return n.spec, "", err
	}
	// The subnets of a NAD that passes the ownership rule: another NAD
	// claiming n's UID (a CUDN's lists every namespace) is not read here,
	// and the reconcile removes it from namespaces n does not select.
	i := slices.IndexFunc(owned, func(nad nadv1.NetworkAttachmentDefinition) bool {
		_, err := nadtrust.Verify(ctx, r.client, &nad)
		return err == nil
	})
	if i < 0 {
		return n.spec, "", nil
	}
	nc, err := netconf.Parse(owned[i].Spec.Config)
	if err != nil {
		return n.spec, "", nil // a NAD udnkit cannot read is rewritten from the spec
	}
	oldSubnets, err := nc.SubnetPrefixes()
	if err != nil {
		return n.spec, "", nil
	}
	had := map[netip.Prefix]bool{}
	for _, p := range oldSubnets {
		had[p.Masked()] = true
	}
	path := "spec.layer3.subnets"
	if n.kind == kindCUDN {
		path = "spec.network.layer3.subnets"
	}
	var added []appended
	for i, s := range n.spec.Layer3.Subnets {
		if p, err := netip.ParsePrefix(string(s.CIDR)); err == nil && !had[p.Masked()] {
			added = append(added, appended{i, p.Masked()})
		}
	}
	if len(added) == 0 {
		return n.spec, "", nil
	}
	problems, err := r.appendedOverlaps(ctx, n, namespaces, added, path)
	if err != nil || len(problems) == 0 {
		return n.spec, "", err
	}
	spec := *n.spec.DeepCopy()
	spec.Layer3.Subnets = spec.Layer3.Subnets[:0]
	var keptCIDRs []string
	for _, s := range n.spec.Layer3.Subnets {
		if p, err := netip.ParsePrefix(string(s.CIDR)); err == nil && had[p.Masked()] {
			spec.Layer3.Subnets = append(spec.Layer3.Subnets, s)
			keptCIDRs = append(keptCIDRs, string(s.CIDR))
		}
	}
	return spec, fmt.Sprintf("%s; the NetworkAttachmentDefinitions keep the subnets [%s] until the conflict is resolved.",
		listed(problems, "; ", maxListedInMessage/5), strings.Join(keptCIDRs, ", ")), nil
}

// appended is a subnet of a network's spec (at index of path) that its NADs
// do not have yet.
type appended struct {
	index  int
	prefix netip.Prefix
}

// appendedOverlaps lists which of added overlap a range in use. A conflict
// the cache shows stands; "none" is confirmed from the apiserver before it
// lets the subnets into the NADs: a NAD created just before the append may
// not be in the cache yet (the NAD informer lags the UDN informer
// independently), and once the NADs carry the subnet it is no longer
// appended and never checked again, so a stale "none" would leave the
// overlap in place for good.
func (r *networkReconciler) appendedOverlaps(ctx context.Context, n network, namespaces []string, added []appended, path string) ([]string, error) {
	for _, live := range []bool{false, true} {
		used, err := r.usedRanges(ctx, n, namespaces, live)
		if err != nil {
			return nil, err
		}
		var problems []string
		for _, a := range added {
			for _, u := range used {
				if a.prefix.Overlaps(u.prefix) {
					problems = append(problems, fmt.Sprintf("%s[%d] %s overlaps %s", path, a.index, a.prefix, u.what))
				}
			}
		}
		if len(problems) > 0 {
			return problems, nil
		}
	}
	return nil, nil
}

// usedRanges are the ranges an appended subnet of n must stay clear of: n's
// join subnets, the cluster's internal and transit ranges (as configured
// now, which may differ from when the subnet was admitted), and the subnets
// of other networks' NADs in n's namespaces, read from the apiserver when
// live.
func (r *networkReconciler) usedRanges(ctx context.Context, n network, namespaces []string, live bool) ([]usedRange, error) {
	var out []usedRange
	join := n.spec.JoinSubnetCIDRs()
	if len(join) == 0 {
		for _, p := range r.cfg.Cluster.UDNJoinSubnets {
			join = append(join, p.String())
		}
	}
	for _, c := range join {
		if p, err := netip.ParsePrefix(c); err == nil {
			out = append(out, usedRange{p.Masked(), "the network's join subnet " + p.Masked().String()})
		}
	}
	for _, c := range append(r.cfg.Cluster.InternalRanges(), r.cfg.Cluster.TransitRanges()...) {
		out = append(out, usedRange{c.Prefix, fmt.Sprintf("the %s %s (--%s)", c.What, c.Prefix, c.Flag)})
	}
	nads, err := r.nadsIn(ctx, namespaces, live)
	if err != nil {
		return nil, err
	}
	for i := range nads {
		nad := &nads[i]
		if ref := metav1.GetControllerOf(nad); ref != nil && ref.UID == n.obj.GetUID() {
			continue
		}
		nc, err := netconf.Parse(nad.Spec.Config)
		if err != nil {
			continue
		}
		subnets, err := nc.SubnetPrefixes()
		if err != nil {
			continue
		}
		for _, p := range subnets {
			out = append(out, usedRange{p.Masked(), fmt.Sprintf("subnet %s of NetworkAttachmentDefinition %s/%s", p.Masked(), nad.Namespace, nad.Name)})
		}
	}
	return out, nil
}

// nadsIn lists the NADs of namespaces from the cache, or when live from the
// apiserver: there the NADs of several namespaces (a CUDN may select
// thousands) come from one LIST across the cluster.
func (r *networkReconciler) nadsIn(ctx context.Context, namespaces []string, live bool) ([]nadv1.NetworkAttachmentDefinition, error) {
	if live && len(namespaces) > 1 {
		var all nadv1.NetworkAttachmentDefinitionList
		if err := r.reader.List(ctx, &all); err != nil {
			return nil, err
		}
		wanted := make(map[string]bool, len(namespaces))
		for _, ns := range namespaces {
			wanted[ns] = true
		}
		return slices.DeleteFunc(all.Items, func(nad nadv1.NetworkAttachmentDefinition) bool { return !wanted[nad.Namespace] }), nil
	}
	reader := client.Reader(r.client)
	if live {
		reader = r.reader
	}
	var out []nadv1.NetworkAttachmentDefinition
	for _, ns := range namespaces {
		var nads nadv1.NetworkAttachmentDefinitionList
		if err := reader.List(ctx, &nads, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		out = append(out, nads.Items...)
	}
	return out, nil
}
