package services

import (
	"context"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/rows"
	svctopo "github.com/udnkit/udnkit/dataplane/topology/services"
	"github.com/udnkit/udnkit/internal/phase"
	"github.com/udnkit/udnkit/ovnk"
)

// servicePrefix starts the name of a Service's request (its namespace, and
// the Service's name behind it): no NAD's name does, a NAD's name being a
// DNS subdomain, which has no ':'.
const servicePrefix = "service:"

// serviceRequest is the request of the Service namespace/name's part.
func serviceRequest(namespace, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: servicePrefix + name}}
}

// serviceOf is the Service name of a Service's request; ok is false for a
// NAD's.
func serviceOf(req reconcile.Request) (name string, ok bool) {
	return strings.CutPrefix(req.Name, servicePrefix)
}

// serviceRequests maps a Service, or a mirrored EndpointSlice (to the
// Service its label names), to the Service's request when its namespace
// has a udnkit NAD: other namespaces' Services have no load balancers
// here.
func (r *Reconciler) serviceRequests(ctx context.Context, o client.Object) []reconcile.Request {
	name := o.GetName()
	if _, slice := o.(*discoveryv1.EndpointSlice); slice {
		name = o.GetLabels()[ovnk.LabelUserDefinedServiceName]
	}
	if name == "" || len(zone.NADsIn(r.Client, o.GetNamespace())(ctx, o)) == 0 {
		return nil
	}
	return []reconcile.Request{serviceRequest(o.GetNamespace(), name)}
}

// reconcileService applies the Service's part of the piece of each
// network a trusted NAD of its namespace describes whose topology exists
// in the zone: its load balancers, or their removal when the Service is
// gone. For a network whose topology is not there yet, the NAD's request
// waits (woken when the topology is applied, it applies the whole piece)
// and this one is queued again after zone.TopologyWait.
func (r *Reconciler) reconcileService(ctx context.Context, namespace, name string) (reconcile.Result, error) {
	var res reconcile.Result
	done := map[string]bool{}
	for _, req := range zone.NADsIn(r.Client, namespace)(ctx, nil) {
		s := &zone.NADScope{Req: req}
		if _, err := phase.Run(ctx, s, []phase.Func[*zone.NADScope]{
			zone.ReadNADPhase[*zone.NADScope](r.Client, r.guard()),
			zone.ReadSourcePhase[*zone.NADScope](r.Client, r.guard(), zone.VTEPName),
		}); err != nil {
			return reconcile.Result{}, err
		}
		if s.Owner == nil {
			continue // not a network (yet), or not trusted
		}
		net, ok, err := r.network(s.Src)
		if err != nil || !ok || done[net.Name] {
			continue // a malformed NAD is its own reconcile's to report
		}
		done[net.Name] = true
		if wait, waiting := r.waiter.WaitForTopology(ctx, r.OVN, net.Name, net.Topology, req); waiting {
			res = phase.LowestNonZeroResult(res, wait)
			continue
		}
		applied, err := r.applyService(ctx, net, namespace, name)
		if err != nil {
			return reconcile.Result{}, err
		}
		res = phase.LowestNonZeroResult(res, applied)
	}
	return res, nil
}

// applyService applies the Service's part of the network's piece, under
// the network's lock, unless the network is gone by then.
func (r *Reconciler) applyService(ctx context.Context, net svctopo.Network, namespace, name string) (reconcile.Result, error) {
	defer r.locks.lock(net.Name)()
	var part *svctopo.Service
	svc := &corev1.Service{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, svc); err == nil {
		var eps discoveryv1.EndpointSliceList
		if err := r.Client.List(ctx, &eps, client.InNamespace(namespace), client.MatchingLabels{ovnk.LabelUserDefinedServiceName: name},
			client.UnsafeDisableDeepCopy); err != nil {
			return reconcile.Result{}, err
		}
		part = &svctopo.Service{Service: svc}
		for i := range eps.Items {
			part.Slices = append(part.Slices, &eps.Items[i])
		}
	} else if !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	nodes, err := r.nodes(ctx, net)
	if err != nil {
		return reconcile.Result{}, err
	}
	// A gone network gets no part back (zone.UnlessGone).
	return r.apply(ctx, net, nodes, zone.UnlessGone(r.Client, r.guard(), zone.VTEPName, net.Name), func(nodes []svctopo.Node) (*rows.Desired, error) {
		return svctopo.ServiceLoadBalancers(net, nodes, namespace, name, part)
	})
}

// networkLocks are the networks' locks: a reconcile reads a network's
// objects and applies its rows under it.
type networkLocks struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

// lock takes the network's lock and returns its unlock.
func (l *networkLocks) lock(network string) func() {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*sync.Mutex{}
	}
	m := l.m[network]
	if m == nil {
		m = &sync.Mutex{}
		l.m[network] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock
}
