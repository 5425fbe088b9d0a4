package zone

import (
	"context"
	"sync"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/ovnk"
)

// Requeuer re-queues NADs in every dataplane controller when the OVN client
// finds the Northbound database no longer holds networks' rows as udnkit
// wrote them (dataplane.Client.OnResync): the NADs of the networks named
// (through AnyNetworkField, so Secondary networks' too), or every udnkit
// NAD. Every controller is For(NAD), so a NAD's request re-applies all of
// its network's pieces.
type Requeuer struct {
	c      client.Client
	mu     sync.Mutex
	queues []workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// NewRequeuer returns a Requeuer that reads NADs through c.
func NewRequeuer(c client.Client) *Requeuer { return &Requeuer{c: c} }

// Manager is mgr for the dataplane controllers' SetupWithManager: every
// controller built with it also watches r (its queue is handed to r).
func (r *Requeuer) Manager(mgr ctrl.Manager) ctrl.Manager { return requeueing{Manager: mgr, r: r} }

type requeueing struct {
	ctrl.Manager
	r *Requeuer
}

// Add adds a controller's watch of r before adding it to the manager (a
// controller's constructor adds it).
func (m requeueing) Add(run manager.Runnable) error {
	if c, ok := run.(controller.Controller); ok {
		if err := c.Watch(source.Func(m.r.register)); err != nil {
			return err
		}
	}
	return m.Manager.Add(run)
}

func (r *Requeuer) register(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queues = append(r.queues, q)
	return nil
}

// Resync queues the NADs of the networks rs names (all of them with rs.All)
// in every controller.
func (r *Requeuer) Resync(rs engine.Resync) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logger := log.Log.WithName("dataplane")
	var reqs []reconcile.Request
	if rs.All {
		reqs = NADsIn(r.c, "")(ctx, nil)
	}
	for _, n := range rs.Networks {
		if rs.All {
			break
		}
		var nads nadv1.NetworkAttachmentDefinitionList
		if err := r.c.List(ctx, &nads, client.MatchingFields{AnyNetworkField: n}, client.HasLabels{ovnk.LabelUserDefinedNetwork},
			client.UnsafeDisableDeepCopy); err != nil {
			logger.Error(err, "listing a network's NADs for a resync", "network", n)
			continue
		}
		for i := range nads.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&nads.Items[i])})
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range r.queues {
		for _, req := range reqs {
			q.Add(req)
		}
	}
	logger.Info("re-queued NADs whose OVN rows were lost or changed", "reason", rs.Reason, "nads", len(reqs),
		"controllers", len(r.queues))
}
