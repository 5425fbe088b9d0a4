package zone

import (
	"context"
	"sync"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
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
	// turn lets one sweep run at a time, so the reconciles of N NADs
	// deleted together share a few sweeps instead of running N, each
	// reading every network's NADs once per piece.
	turn chan struct{}
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

// due returns the generation a sweep starting now covers (every event
// observed so far), or 0 when a sweep that began after generation gen has
// already succeeded.
func (s *Sweeps) due(gen uint64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done >= gen {
		return 0
	}
	return s.want
}

// take waits for the sweeps' turn (or ctx's end) and returns its release.
func (s *Sweeps) take(ctx context.Context) (func(), error) {
	s.mu.Lock()
	if s.turn == nil {
		s.turn = make(chan struct{}, 1)
	}
	turn := s.turn
	s.mu.Unlock()
	select {
	case turn <- struct{}{}:
		return func() { <-turn }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Sweep runs pieces (each a CollectPiece of one topology piece) when s
// says a sweep is needed after the NAD key's reconcile, which found
// network. One sweep runs at a time; a reconcile that waited for its turn
// runs none when a sweep that began after its event succeeded meanwhile.
func (s *Sweeps) Sweep(ctx context.Context, key types.NamespacedName, network string, deleted bool, pieces ...func(context.Context) error) error {
	gen := s.observe(key, network, deleted)
	if gen == 0 {
		return nil
	}
	release, err := s.take(ctx)
	if err != nil {
		return err
	}
	defer release()
	if gen = s.due(gen); gen == 0 {
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

// Remover removes pieces' rows of networks, except those asked not to
// under the networks' locks (dataplane.Client's RemoveUnless).
type Remover interface {
	RemoveUnless(ctx context.Context, owners []rows.Owner, unless func(context.Context, []string) (map[string]bool, error)) (engine.Result, error)
}

// CollectPiece is CollectPieces for one piece.
func CollectPiece(ctx context.Context, c client.Client, g *nadtrust.Guard, ovn Remover, owner rows.Owner,
	networks func(topology, piece string) []string, name func(*nadv1.NetworkAttachmentDefinition) (string, bool)) error {
	_, err := CollectPieces(ctx, c, g, ovn, networks, new(Names).Of(name), owner)
	return err
}

// CollectPieces removes the rows of each owner's piece (an owner without a
// network) for every network that has some (networks lists them) and that
// no live NAD names, as names reads them; piece after piece, in owners'
// order. It reads the live networks (Names.Live, a list of every NAD) once
// for all the pieces and returns them, so a sweep reads each of its name
// functions' live set once; a controller that keeps its Names between
// sweeps parses only the NADs that changed meanwhile.
func CollectPieces(ctx context.Context, c client.Client, g *nadtrust.Guard, ovn Remover, networks func(topology, piece string) []string,
	names *Names, owners ...rows.Owner) (map[string]bool, error) {
	return collectPieces(ctx, c, g, ovn, networks, names, false, owners)
}

// CollectPiecesTogether is CollectPieces for independent pieces (none owns
// a row another names): their removals are planned and sent together, so
// a network's pieces go in one transaction rather than one each.
func CollectPiecesTogether(ctx context.Context, c client.Client, g *nadtrust.Guard, ovn Remover, networks func(topology, piece string) []string,
	names *Names, owners ...rows.Owner) (map[string]bool, error) {
	return collectPieces(ctx, c, g, ovn, networks, names, true, owners)
}

func collectPieces(ctx context.Context, c client.Client, g *nadtrust.Guard, ovn Remover, networks func(topology, piece string) []string,
	names *Names, together bool, owners []rows.Owner) (map[string]bool, error) {
	// The networks in OVN first, then the live NADs: a network whose rows
	// are there was applied from a NAD this list then has (reconciles run
	// concurrently, with one informer cache).
	candidates := make([][]string, len(owners))
	for i, o := range owners {
		candidates[i] = networks(o.Topology, o.Piece)
	}
	live, err := names.Live(ctx, g)
	if err != nil {
		return nil, err
	}
	// Asked again under the networks' locks: a new NAD of a network may
	// have been applied since (by another worker). Only those networks'
	// NADs are read.
	revived := func(ctx context.Context, networks []string) (map[string]bool, error) {
		out := map[string]bool{}
		for _, n := range networks {
			live, err := NetworkLive(ctx, c, g, names.Name, n)
			if err != nil {
				return nil, err
			}
			out[n] = live
		}
		return out, nil
	}
	// The piece's removals together (all the pieces' when together): a
	// sweep after N deletions sends a few transactions, not N.
	var gone []rows.Owner
	for i, owner := range owners {
		for _, n := range candidates[i] {
			if !live[n] {
				owner.Network = n
				gone = append(gone, owner)
			}
		}
		if together && i < len(owners)-1 || len(gone) == 0 {
			continue
		}
		if _, err := ovn.RemoveUnless(ctx, gone, revived); err != nil {
			return nil, err
		}
		gone = nil
	}
	return live, nil
}
