package reconcilers

import (
	"context"
	"net/netip"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
)

// checkJoinSubnets stops a Layer2 or Layer3 network whose subnets overlap
// its join subnets (its joinSubnets, or --udn-join-subnets' default for a
// family they lack), as upstream's UDN controller does when it renders the
// NAD (SubnetOverlapCheck): NetworkCreated=False with reason SyncError and
// upstream's message, and a Warning event; its NADs are left as they are.
// Admission refuses such a network (the CRD's CEL rule, the
// udnkit-network-config policy); this is the backstop for one admitted
// without them or before --udn-join-subnets changed. It checks the spec
// settleConflicts kept, so a conflicting appended Layer3 subnet stays a
// SubnetConflict.
func (r *networkReconciler) checkJoinSubnets(ctx context.Context, s *networkScope) (ctrl.Result, error) {
	n := s.n
	if n.spec.Layer2 == nil && n.spec.Layer3 == nil {
		return ctrl.Result{}, nil
	}
	subnets, err := ovnk.ParsePrefixes(strings.Join(n.spec.SubnetCIDRs(), ","))
	if err != nil {
		return ctrl.Result{}, nil // the NAD's rendering reports it
	}
	explicit, err := ovnk.ParsePrefixes(strings.Join(n.spec.JoinSubnetCIDRs(), ","))
	if err != nil {
		return ctrl.Result{}, nil
	}
	masked := make([]netip.Prefix, len(subnets))
	for i, p := range subnets {
		masked[i] = p.Masked()
	}
	overlap := ovnk.SubnetJoinOverlap(masked, r.cfg.Cluster.JoinSubnetsFor(explicit))
	if overlap == nil {
		return ctrl.Result{}, nil
	}
	msg := "invalid subnet configuration: " + overlap.Error()
	r.event(n.obj, eventSyncError, msg)
	return s.Done(ctrl.Result{}, r.applyStatus(ctx, n, metav1.ConditionFalse, udnv1.ReasonSyncError, msg, nil))
}
