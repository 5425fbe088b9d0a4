package zone

import (
	"context"
	"net/netip"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/udnkit/udnkit/internal/fairqueue"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
)

// nadsIn maps an event to udnkit's NADs in namespace ("" for all).
func NADsIn(c client.Client, namespace string) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		var nads nadv1.NetworkAttachmentDefinitionList
		if err := c.List(ctx, &nads, client.InNamespace(namespace), client.HasLabels{ovnk.LabelUserDefinedNetwork}, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(nads.Items))
		for _, n := range nads.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&n)})
		}
		return out
	}
}

// liveNAD gets a request's NAD; live is false when it is gone, being deleted
// or not udnkit's.
func LiveNAD(ctx context.Context, c client.Client, req reconcile.Request) (nad *nadv1.NetworkAttachmentDefinition, live bool, err error) {
	nad = &nadv1.NetworkAttachmentDefinition{}
	if err := c.Get(ctx, req.NamespacedName, nad); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	_, labeled := nad.Labels[ovnk.LabelUserDefinedNetwork]
	return nad, labeled && nad.DeletionTimestamp.IsZero(), nil
}

// deleted says whether a NAD liveNAD read is gone or being deleted.
func Deleted(nad *nadv1.NetworkAttachmentDefinition) bool {
	return nad == nil || !nad.DeletionTimestamp.IsZero()
}

// LiveNetworks names the networks that udnkit's NADs (not being deleted)
// describe, as network reads them, and that pass the ownership rule, from
// the guard's list (Guard.Labelled: the controllers that ask at once share
// one list and one check of each NAD). The NADs are the guard's Reader's
// own, not copies: network only reads them.
func LiveNetworks(ctx context.Context, g *nadtrust.Guard, network func(*nadv1.NetworkAttachmentDefinition) (string, bool)) (map[string]bool, error) {
	live, _, err := listLive(ctx, g, network)
	return live, err
}

// listLive is LiveNetworks and the NADs it read.
func listLive(ctx context.Context, g *nadtrust.Guard, network func(*nadv1.NetworkAttachmentDefinition) (string, bool)) (map[string]bool, []*nadtrust.Verified, error) {
	nads, err := g.Labelled(ctx)
	if err != nil {
		return nil, nil, err
	}
	live := map[string]bool{}
	for _, v := range nads {
		name, ok := network(v.NAD)
		if !ok || live[name] {
			continue
		}
		owner, trusted, err := v.Trusted(ctx)
		if err != nil {
			return nil, nil, err
		}
		if trusted && owner.Network == name {
			live[name] = true
		}
	}
	return live, nads, nil
}

// NetworkLive says whether n is one of LiveNetworks. It reads only n's NADs
// through AnyNetworkField, so a sweep asking it once per network it removes
// reads no other NAD (asking LiveNetworks made removing N networks at once
// read about N³ NADs). The index keys on spec.config's name for every
// topology udnkit programs; a NAD counts only when that name is its
// owner's network (the trust rule) and network returns it, and every
// dataplane controller's network function returns spec.config's name
// (IndexDisagreements), so the index holds every NAD that counts. A NAD it
// holds is still read by network: one of another kind or role never counts.
func NetworkLive(ctx context.Context, c client.Client, g *nadtrust.Guard, network func(*nadv1.NetworkAttachmentDefinition) (string, bool), n string) (bool, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := c.List(ctx, &nads, client.MatchingFields{AnyNetworkField: n}, client.HasLabels{ovnk.LabelUserDefinedNetwork},
		client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	live, err := liveIn(ctx, g, nads.Items, network)
	return live[n], err
}

// UnlessGone is ApplyUnless's unless for a piece of network n whose NAD a
// reconcile read: whether no NAD keeps n live any more (NetworkLive, with
// the controller's network function), asked with the network's lock held.
// Without it a reconcile that read the NAD just before its deletion reached
// the cache writes the network's rows after a sweep (another NAD's
// reconcile) removed them, and they stay until the next sweep.
func UnlessGone(c client.Client, g *nadtrust.Guard, network func(*nadv1.NetworkAttachmentDefinition) (string, bool), n string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		live, err := NetworkLive(ctx, c, g, network, n)
		return !live, err
	}
}

// liveIn names the networks of nads (read by network) that some NAD not
// being deleted, whose owner the guard trusts, names.
func liveIn(ctx context.Context, g *nadtrust.Guard, nads []nadv1.NetworkAttachmentDefinition, network func(*nadv1.NetworkAttachmentDefinition) (string, bool)) (map[string]bool, error) {
	live := map[string]bool{}
	for i := range nads {
		name, ok := network(&nads[i])
		if !ok || live[name] || !nads[i].DeletionTimestamp.IsZero() {
			continue
		}
		owner, trusted, err := g.Trusted(ctx, &nads[i])
		if err != nil {
			return nil, err
		}
		if trusted && owner.Network == name {
			live[name] = true
		}
	}
	return live, nil
}

// orDefault is d, or def when d is 0.
func OrDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// DefaultWorkers is how many networks each dataplane controller reconciles
// at once: a large network's reconcile (a long Apply) never queues a small
// one's behind it.
const DefaultWorkers = 4

func workers(n int) int {
	if n <= 0 {
		return DefaultWorkers
	}
	return n
}

// controllerOptions are a dataplane controller's: n workers and, unless
// fifo, a queue that serves the NADs' namespaces in turn.
func ControllerOptions(n int, fifo bool) controller.Options {
	o := controller.Options{MaxConcurrentReconciles: workers(n)}
	if !fifo {
		o.NewQueue = fairqueue.ByNamespace
	}
	return o
}

// ipFamily is 4 or 6.
func ipFamily(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}
