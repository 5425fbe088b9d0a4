package controller

import (
	"context"
	"fmt"
	"net/netip"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
)

// Layer3Reconciler programs the OKEP-5377 priority-102 subnet policies
// of every primary Layer3 network on its <net>_ovn_cluster_router, creating
// (and owning) the router when no other component has. Requests are NADs; an
// appended subnet changes the NAD's spec.config and so the policies.
type Layer3Reconciler struct {
	Client client.Client
	OVN    *dataplane.Client
	// Form is the policies' form (default: one Address_Set policy per family).
	Form topology.Layer3PolicyForm
	// Workers is how many networks are reconciled at once (0: DefaultWorkers).
	Workers int
	// FIFOQueue is Options.FIFOQueue.
	FIFOQueue bool
	// Guard applies the NAD ownership rule (trust.go); nil: one reading
	// through Client, without Events.
	Guard *nadtrust.Guard
	trust trusting

	sweeps sweeps
}

// SetupWithManager registers the reconciler.
func (r *Layer3Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return trustWatches(ctrl.NewControllerManagedBy(mgr).
		Named("dataplane-layer3").
		WithOptions(controllerOptions(r.Workers, r.FIFOQueue)), r.Client, r.guard(), layer3Name).
		Complete(r)
}

// Reconcile applies one network's policies and removes the policies (and
// owned routers) of networks whose NADs are gone.
func (r *Layer3Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nad, owner, err := trustedNAD(ctx, r.Client, r.guard(), req)
	if err != nil {
		return reconcile.Result{}, err
	}
	network := ""
	if owner != nil {
		src, err := networkSource(ctx, r.Client, r.guard(), owner.Network, layer3Name)
		if err != nil {
			return reconcile.Result{}, err
		}
		if src == nil {
			src = nad // not a network, or malformed: reported below
		}
		name, subnets, ok, err := Layer3NetworkFromNAD(src)
		if err != nil {
			// A malformed NAD is the NAD writer's bug; retrying will not fix it.
			log.FromContext(ctx).Error(err, "skipping network")
		} else if ok {
			network = name
			d, err := topology.Layer3SubnetPoliciesForm(name, subnets, r.Form)
			if err != nil {
				log.FromContext(ctx).Error(err, "skipping network", "network", name)
			} else if _, err := r.OVN.Apply(ctx, d); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	return reconcile.Result{}, r.sweeps.sweep(ctx, req.NamespacedName, network, deleted(nad), r.collect)
}

// collect removes the policies of Layer3 networks that no NAD describes any more.
func (r *Layer3Reconciler) collect(ctx context.Context) error {
	return collectPiece(ctx, r.Client, r.guard(), r.OVN, rows.Owner{Topology: topology.TopologyLayer3, Piece: topology.PieceSubnetPolicies},
		r.OVN.PieceNetworks, layer3Name)
}

// Layer3NetworkFromNAD reads a primary Layer3 network's name and cluster
// subnets from its NAD's spec.config, where each subnet is "CIDR" or
// "CIDR/hostSubnet" (e.g. 10.200.0.0/16/24). ok is false for other networks.
func Layer3NetworkFromNAD(nad *nadv1.NetworkAttachmentDefinition) (name string, subnets []netip.Prefix, ok bool, err error) {
	conf, err := ovnk.Parse(nad.Spec.Config)
	if err != nil {
		return "", nil, false, fmt.Errorf("NAD %s/%s spec.config: %w", nad.Namespace, nad.Name, err)
	}
	if conf.Topology != "layer3" || conf.Role != "primary" {
		return "", nil, false, nil
	}
	if subnets, err = conf.SubnetPrefixes(); err != nil {
		return "", nil, false, fmt.Errorf("NAD %s/%s spec.config %w", nad.Namespace, nad.Name, err)
	}
	for i := range subnets {
		subnets[i] = subnets[i].Masked()
	}
	if conf.Name == "" || len(subnets) == 0 {
		return "", nil, false, fmt.Errorf("NAD %s/%s spec.config: a Layer3 network needs a name and subnets", nad.Namespace, nad.Name)
	}
	return conf.Name, subnets, true, nil
}

func (r *Layer3Reconciler) guard() *nadtrust.Guard { return r.trust.of(r.Guard, r.Client) }
