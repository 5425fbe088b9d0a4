package services

import (
	"context"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// collectGroups removes the load balancer groups of networks no NAD names
// any more that no piece's removal took: the last piece of a network
// drops them only once no router or switch of the network stays, and one
// written by another (OVN-Kubernetes' gateway router) may go after every
// piece did; a split removal interrupted between its transactions leaves
// them too. The groups have no external_ids: a group is a network's by its
// name's prefix (ovnk.LoadBalancerGroupPrefix), and any NAD, udnkit's or
// not, whose network has that prefix keeps it. The removal is the plan's
// own (an empty services piece of the network the prefix names drops the
// groups that no router or switch names and that hold no other piece's
// load balancer), asked under the networks' locks whether a NAD came back.
func (r *Reconciler) collectGroups(ctx context.Context) error {
	candidates := map[string]bool{}
	for _, g := range r.OVN.LoadBalancerGroups() {
		if p, ok := ovnk.LoadBalancerGroupPrefix(g); ok {
			candidates[p] = true
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	live, err := r.namedPrefixes(ctx)
	if err != nil {
		return err
	}
	var gone []rows.Owner
	for p := range candidates {
		if !live[p] {
			gone = append(gone, rows.Owner{Network: strings.TrimSuffix(p, "_"), Topology: base.TopologyLayer2, Piece: base.PieceServices})
		}
	}
	// One list of the NADs under the networks' locks, for them all.
	revived := func(ctx context.Context, networks []string) (map[string]bool, error) {
		live, err := r.namedPrefixes(ctx)
		out := map[string]bool{}
		for _, n := range networks {
			out[n] = live[ovnk.NetworkPrefix(n)]
		}
		return out, err
	}
	_, err = r.OVN.RemoveUnless(ctx, gone, revived)
	return err
}

// namedPrefixes are the network prefixes of every network a NAD names.
func (r *Reconciler) namedPrefixes(ctx context.Context) (map[string]bool, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &nads, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for i := range nads.Items {
		for _, n := range zone.AnyNetwork(&nads.Items[i]) {
			out[ovnk.NetworkPrefix(n)] = true
		}
	}
	return out, nil
}
