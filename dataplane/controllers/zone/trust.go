package zone

import (
	"cmp"
	"context"
	"slices"
	"sync"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
	"github.com/udnkit/udnkit/ovnk/netconf"
)

// How the dataplane applies the NAD ownership rule (ovnk/nadtrust):
//
//   - A request is a NAD. Its reconcile acts only when the NAD passes the
//     rule, and then programs the network of the NAD's verified owner from
//     the network's source: its oldest NAD that passes (creationTimestamp,
//     namespace, name). A UDN has one NAD; a CUDN's NADs share one config,
//     and a copy of it elsewhere that somehow passes cannot steer the rows.
//   - A NAD that fails is left out of everything (rows, the live networks
//     a sweep keeps, the pods and namespaces a network serves), with an
//     Event on it and udnkit_untrusted_nads_total{consumer="dataplane"}.
//   - Every NAD event (but the initial list's) also queues the source of
//     each network the NAD names, before and after: a forged NAD that
//     comes, changes or goes makes the real network's reconcile run again,
//     so its rows are what its own NAD says. An owner that appears or goes
//     queues the NADs that name its network (a NAD seen before its owner
//     is in the cache is verified again).

// DataplaneConsumer is the consumer label of the dataplane's reports.
const DataplaneConsumer = "dataplane"

// trusting gives a reconciler its guard: the one it was given, or (nil)
// one reading through its client, without Events, made once.
type Trusting struct {
	once  sync.Once
	guard *nadtrust.Guard
}

func (t *Trusting) Of(g *nadtrust.Guard, c client.Client) *nadtrust.Guard {
	t.once.Do(func() {
		t.guard = g
		if g == nil {
			t.guard = &nadtrust.Guard{Reader: c, Consumer: DataplaneConsumer}
		}
	})
	return t.guard
}

// trustedNAD gets a request's NAD and verifies it: owner is set when it is
// live (there, not being deleted, udnkit's label) and passes the rule.
func TrustedNAD(ctx context.Context, c client.Client, g *nadtrust.Guard, req reconcile.Request) (nad *nadv1.NetworkAttachmentDefinition, owner *nadtrust.Owner, err error) {
	nad, live, err := LiveNAD(ctx, c, req)
	if err != nil || nad == nil {
		if nad == nil && err == nil {
			g.Forget(req.NamespacedName)
		}
		return nad, nil, err
	}
	if !live {
		return nad, nil, nil
	}
	o, ok, err := g.Trusted(ctx, nad)
	if err != nil || !ok {
		return nad, nil, err
	}
	return nad, &o, nil
}

// networkSource returns the NAD a network's rows follow: of the live NADs
// that name network (as name reads them) and pass the rule, the oldest. nil
// when none does.
func NetworkSource(ctx context.Context, c client.Client, g *nadtrust.Guard, network string,
	name func(*nadv1.NetworkAttachmentDefinition) (string, bool)) (*nadv1.NetworkAttachmentDefinition, error) {
	nads, err := namingNADs(ctx, c, network)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(nads, olderNAD)
	for _, nad := range nads {
		if n, ok := name(nad); !ok || n != network {
			continue
		}
		o, ok, err := g.Trusted(ctx, nad)
		if err != nil {
			return nil, err
		}
		if ok && o.Network == network {
			return nad, nil
		}
	}
	return nil, nil
}

// namingNADs lists the live NADs with udnkit's label whose config names
// network (NADNetworkField), from the cache; read-only.
func namingNADs(ctx context.Context, c client.Client, network string) ([]*nadv1.NetworkAttachmentDefinition, error) {
	var list nadv1.NetworkAttachmentDefinitionList
	if err := c.List(ctx, &list, client.HasLabels{ovnk.LabelUserDefinedNetwork}, client.MatchingFields{NADNetworkField: network},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*nadv1.NetworkAttachmentDefinition, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// trustedNamingNADs are namingNADs that pass the rule for network.
func TrustedNamingNADs(ctx context.Context, c client.Client, g *nadtrust.Guard, network string) ([]*nadv1.NetworkAttachmentDefinition, error) {
	nads, err := namingNADs(ctx, c, network)
	if err != nil {
		return nil, err
	}
	out := nads[:0]
	for _, nad := range nads {
		o, ok, err := g.Trusted(ctx, nad)
		if err != nil {
			return nil, err
		}
		if ok && o.Network == network {
			out = append(out, nad)
		}
	}
	return out, nil
}

func olderNAD(a, b *nadv1.NetworkAttachmentDefinition) int {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// nadEvents queues, for a NAD event, the source of each network the NAD
// names (before and after an update), besides the NAD itself (For).
func nadEvents(c client.Client, g *nadtrust.Guard, name func(*nadv1.NetworkAttachmentDefinition) (string, bool)) handler.EventHandler {
	queue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], self client.Object, objs ...client.Object) {
		seen := map[string]bool{}
		for _, o := range objs {
			nad, ok := o.(*nadv1.NetworkAttachmentDefinition)
			if !ok {
				continue
			}
			network, ok := name(nad)
			if !ok || seen[network] {
				continue
			}
			seen[network] = true
			src, err := NetworkSource(ctx, c, g, network, name)
			if err != nil || src == nil || client.ObjectKeyFromObject(src) == client.ObjectKeyFromObject(self) {
				continue
			}
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(src)})
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if !e.IsInInitialList {
				queue(ctx, q, e.Object, e.Object)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			queue(ctx, q, e.ObjectNew, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			queue(ctx, q, e.Object, e.Object)
		},
	}
}

// ownerEvents queues the NADs naming a UDN's or CUDN's network when the
// owner appears (after the initial list) or goes.
func ownerEvents(c client.Client) (handler.EventHandler, builder.WatchesOption) {
	h := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		kind := udnv1.KindClusterUserDefinedNetwork
		if _, ok := o.(*udnv1.UserDefinedNetwork); ok {
			kind = udnv1.KindUserDefinedNetwork
		}
		network := netconf.NADSource{Kind: kind, Meta: metav1.ObjectMeta{Namespace: o.GetNamespace(), Name: o.GetName()}}.NetworkName()
		nads, err := namingNADs(ctx, c, network)
		if err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(nads))
		for _, n := range nads {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(n)})
		}
		return out
	})
	return h, builder.WithPredicates(predicate.Funcs{CreateFunc: CreatedLater, UpdateFunc: func(event.UpdateEvent) bool { return false }})
}

// trustWatches adds the NAD watches every dataplane controller has: each
// NAD (For), the sources of the networks a NAD event names (nadEvents), and
// the owners (ownerEvents).
func TrustWatches(b *builder.Builder, c client.Client, g *nadtrust.Guard, name func(*nadv1.NetworkAttachmentDefinition) (string, bool)) *builder.Builder {
	owners, appearOrGo := ownerEvents(c)
	return b.For(&nadv1.NetworkAttachmentDefinition{}).
		Watches(&nadv1.NetworkAttachmentDefinition{}, nadEvents(c, g, name)).
		Watches(&udnv1.UserDefinedNetwork{}, owners, appearOrGo).
		Watches(&udnv1.ClusterUserDefinedNetwork{}, owners, appearOrGo)
}
