package zone

import (
	"context"
	"sync"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
)

// sweeps decides when a reconcile must look for networks whose NADs are
// gone. A sweep lists and reads every NAD, so sweeping on every reconcile
// made a controller's work grow with the square of the number of networks.
// A sweep is needed only after the controller starts (rows of NADs deleted
// while no process watched), and when a NAD that named a network no longer
// does or names another (deleted, relabelled, malformed, edited), or a NAD
// this process never saw is deleted. The zero value is ready: its first
// reconcile sweeps.
type Sweeps struct {
	mu sync.Mutex
	// want counts the events that need a sweep (the start is the first);
	// done is the highest want a successful sweep began after.
	want, done uint64
	named      map[types.NamespacedName]string
}

// observe records that the NAD key now names network ("" for none: gone, not
// udnkit's, not this controller's kind, or malformed), and returns the
// generation to sweep for, or 0 when no sweep is needed.
func (s *Sweeps) observe(key types.NamespacedName, network string, deleted bool) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.named == nil {
		s.named = map[types.NamespacedName]string{}
		s.want++ // the start
	}
	prev, known := s.named[key]
	if network == "" {
		delete(s.named, key)
	} else {
		s.named[key] = network
	}
	if (known && prev != network) || (deleted && !known) {
		s.want++
	}
	if s.done >= s.want {
		return 0
	}
	return s.want
}

// swept records a sweep for generation gen that succeeded. A failed sweep is
// not recorded, so the next reconcile of any NAD sweeps again.
func (s *Sweeps) swept(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = max(s.done, gen)
}

// sweep runs pieces (each a collectPiece of one topology piece) when s says
// a sweep is needed after the NAD key's reconcile, which found network.
func (s *Sweeps) Sweep(ctx context.Context, key types.NamespacedName, network string, deleted bool, pieces ...func(context.Context) error) error {
	gen := s.observe(key, network, deleted)
	if gen == 0 {
		return nil
	}
	for _, piece := range pieces {
		if err := piece(ctx); err != nil {
			return err
		}
	}
	s.swept(gen)
	return nil
}

// collectPiece removes a piece's rows (owner without a network) for every
// network that has some (networks lists them) and that no live NAD names.
func CollectPiece(ctx context.Context, c client.Client, g *nadtrust.Guard, ovn *dataplane.Client, owner rows.Owner,
	networks func(topology, piece string) []string, name func(*nadv1.NetworkAttachmentDefinition) (string, bool)) error {
	// The networks in OVN first, then the live NADs: a network whose rows
	// are there was applied from a NAD this list then has (reconciles run
	// concurrently, with one informer cache).
	candidates := networks(owner.Topology, owner.Piece)
	live, err := LiveNetworks(ctx, c, g, name)
	if err != nil {
		return err
	}
	for _, n := range candidates {
		if live[n] {
			continue
		}
		owner.Network = n
		// Asked again under the network's lock: a new NAD of the network
		// may have been applied since (by another worker). Only n's NADs
		// are read: this runs once per network removed.
		revived := func(ctx context.Context) (bool, error) {
			return NetworkLive(ctx, c, g, name, n)
		}
		if _, err := ovn.ApplyUnless(ctx, &rows.Desired{Owner: owner}, revived); err != nil {
			return err
		}
	}
	return nil
}
