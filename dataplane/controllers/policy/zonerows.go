package policy

import (
	"context"
	"hash/maphash"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/policy"
	"github.com/udnkit/udnkit/ovnk"
)

// zoneRows remembers what the zone's pieces were last applied from. The
// zone's rows depend on the nodes, the UDN-enabled services, the zone's
// pods and the configuration only, yet every network's reconcile reaches
// them: a piece is built and applied only when a fingerprint of exactly
// what its builder reads differs from the one of its last successful
// Apply, so N networks' reconciles over unchanged inputs build it once.
//
// mu is held across the zone's fingerprints, builds and Applies: one
// reconcile at a time works on them, the others then find them applied.
// A failed build or Apply records nothing, so the next reconcile tries
// again. What a reconcile does not read itself counts as generations
// folded into the fingerprints, each counted after the cache holds the
// change and before its NADs are queued: pods (the pod events that may
// change the isolation port group's members), services (the watched
// UDN-enabled services' events) and epoch (the resyncs of every network or
// of the zone's rows: the OVN database lost or changed them).
type zoneRows struct {
	mu   sync.Mutex
	seed maphash.Seed
	// last: piece → the fingerprint of its last successful Apply.
	last map[string]uint64

	epoch, pods, services atomic.Uint64
	// builds counts the pieces built.
	builds atomic.Int64
	// apply, when set, stands for the OVN client's Apply.
	apply func(context.Context, *rows.Desired) error
	// resyncs signals a resync of the zone's rows alone (Resynced).
	resyncs chan event.GenericEvent
}

// applyZoneRows applies each zone piece whose inputs changed since its
// last successful Apply: the isolation port group, then EgressIP's shared
// address sets and the node-ips and egresssvc-served-pods sets. A node's
// malformed host addresses or an unreadable service fail the reconcile
// before the EgressIP sets are written; a failure to write the node-ips
// and egresssvc-served-pods sets is logged (OVN-Kubernetes' EgressIP may
// own them).
func (r *Reconciler) applyZoneRows(ctx context.Context, nodes []corev1.Node) error {
	z := &r.zone
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.last == nil {
		z.seed, z.last = maphash.MakeSeed(), map[string]uint64{}
	}
	epoch := z.epoch.Load()
	fp, err := r.isolationFingerprint(nodes, epoch)
	if err != nil {
		return err
	}
	if err := r.applyChanged(ctx, base.PieceUDNIsolation, fp, func() (*rows.Desired, error) { return r.isolation(ctx, nodes) }); err != nil {
		return err
	}
	shared, svcIPs, err := r.sharedFingerprint(ctx, epoch)
	if err != nil {
		return err
	}
	defaults := r.defaultSetsFingerprint(nodes, epoch)
	var hostIPs []netip.Addr
	if r.EgressIP && z.changed(base.PieceEgressIPDefaultSets, defaults) {
		if hostIPs, err = nodeIPs(nodes); err != nil {
			return err
		}
	}
	if err := r.applyChanged(ctx, base.PieceEgressIPShared, shared, func() (*rows.Desired, error) {
		if !r.EgressIP {
			return zonePiece(base.PieceEgressIPShared), nil
		}
		if svcIPs == nil {
			if svcIPs, err = r.serviceIPs(ctx); err != nil {
				return nil, err
			}
		}
		return policy.EgressIPShared(r.cluster(), svcIPs)
	}); err != nil {
		return err
	}
	if err := r.applyChanged(ctx, base.PieceEgressIPDefaultSets, defaults, func() (*rows.Desired, error) {
		if !r.EgressIP {
			return zonePiece(base.PieceEgressIPDefaultSets), nil
		}
		return policy.EgressIPDefaultNetworkSets(r.cluster(), hostIPs)
	}); err != nil {
		log.FromContext(ctx).Error(err, "the zone's node-ips and egresssvc-served-pods address sets not written (OVN-Kubernetes' EgressIP writes them for the default network)")
	}
	return nil
}

// changed says whether piece's fingerprint differs from its last
// successful Apply's; z.mu is held.
func (z *zoneRows) changed(piece string, fp uint64) bool {
	last, ok := z.last[piece]
	return !ok || last != fp
}

// applyChanged builds and applies a zone piece unless its fingerprint is
// that of its last successful Apply; z.mu is held.
func (r *Reconciler) applyChanged(ctx context.Context, piece string, fp uint64, build func() (*rows.Desired, error)) error {
	z := &r.zone
	if !z.changed(piece, fp) {
		return nil
	}
	z.builds.Add(1)
	d, err := build()
	if err != nil {
		return err
	}
	if z.apply != nil {
		err = z.apply(ctx, d)
	} else {
		_, err = r.OVN.Apply(ctx, d)
	}
	if err != nil {
		return err
	}
	z.last[piece] = fp
	return nil
}

// isolationFingerprint covers what isolation reads: the local nodes, by
// name, with their default network host subnets, and the pods' generation
// when it reads the zone's pods.
func (r *Reconciler) isolationFingerprint(nodes []corev1.Node, epoch uint64) (uint64, error) {
	f := r.zone.fingerprint(base.PieceUDNIsolation, epoch)
	var buf []byte
	for _, n := range r.local(nodes) {
		hosts, err := r.subnets.Of(n, defaultNetwork)
		if err != nil {
			return 0, err
		}
		f.WriteString(n.Name)
		f.WriteByte(0)
		for _, h := range hosts {
			buf, _ = h.AppendBinary(buf[:0])
			f.Write(buf)
		}
		f.WriteByte(0)
	}
	writeBool(&f, r.IsolationPorts != nil)
	if r.IsolationPorts != nil {
		writeUint(&f, r.zone.pods.Load())
	}
	return f.Sum64(), nil
}

// sharedFingerprint covers what the shared EgressIP sets read: with
// EgressIP, the watched services' generation, or, unwatched, their
// ClusterIPs, read now and returned for the build.
func (r *Reconciler) sharedFingerprint(ctx context.Context, epoch uint64) (uint64, []netip.Addr, error) {
	f := r.zone.fingerprint(base.PieceEgressIPShared, epoch)
	writeBool(&f, r.EgressIP)
	if !r.EgressIP {
		return f.Sum64(), nil, nil
	}
	if r.Services != nil {
		writeUint(&f, r.zone.services.Load())
		return f.Sum64(), nil, nil
	}
	ips, err := r.serviceIPs(ctx)
	if err != nil {
		return 0, nil, err
	}
	writeAddrs(&f, ips)
	return f.Sum64(), ips, nil
}

// defaultSetsFingerprint covers what the node-ips set reads: with
// EgressIP, every node's k8s.ovn.org/host-cidrs as written, whatever order
// the nodes are listed in (a sum of each node's hash).
func (r *Reconciler) defaultSetsFingerprint(nodes []corev1.Node, epoch uint64) uint64 {
	f := r.zone.fingerprint(base.PieceEgressIPDefaultSets, epoch)
	writeBool(&f, r.EgressIP)
	if r.EgressIP {
		var sum uint64
		var n maphash.Hash
		n.SetSeed(r.zone.seed)
		for i := range nodes {
			n.Reset()
			v, has := nodes[i].Annotations[ovnk.AnnotationHostCIDRs]
			n.WriteString(nodes[i].Name)
			n.WriteByte(0)
			writeBool(&n, has)
			n.WriteString(v)
			sum += n.Sum64()
		}
		writeUint(&f, uint64(len(nodes)))
		writeUint(&f, sum)
	}
	return f.Sum64()
}

// fingerprint starts a piece's fingerprint at epoch; z.mu is held.
func (z *zoneRows) fingerprint(piece string, epoch uint64) maphash.Hash {
	var f maphash.Hash
	f.SetSeed(z.seed)
	f.WriteString(piece)
	f.WriteByte(0)
	writeUint(&f, epoch)
	return f
}

// writeAddrs writes the distinct addresses, sorted: the address sets hold
// them so, whatever order the nodes are listed in.
func writeAddrs(f *maphash.Hash, addrs []netip.Addr) {
	sorted := slices.Clone(addrs)
	slices.SortFunc(sorted, netip.Addr.Compare)
	var buf []byte
	for _, a := range slices.Compact(sorted) {
		buf, _ = a.AppendBinary(buf[:0])
		writeUint(f, uint64(len(buf)))
		f.Write(buf)
	}
}

func writeUint(f *maphash.Hash, u uint64) {
	var b [8]byte
	for i := range b {
		b[i] = byte(u >> (8 * i))
	}
	f.Write(b[:])
}

func writeBool(f *maphash.Hash, v bool) {
	if v {
		f.WriteByte(1)
	} else {
		f.WriteByte(0)
	}
}

// zonePiece is a zone piece without rows.
func zonePiece(piece string) *rows.Desired {
	return &rows.Desired{Owner: rows.Owner{Network: policy.ZoneNetwork, Topology: base.TopologyZone, Piece: piece}}
}

// nodeIPs are every node's k8s.ovn.org/host-cidrs addresses.
func nodeIPs(nodes []corev1.Node) ([]netip.Addr, error) {
	var out []netip.Addr
	for i := range nodes {
		cidrs, _, err := ovnk.DecodeNodeHostCIDRs(&nodes[i])
		if err != nil {
			return nil, err
		}
		for _, c := range cidrs {
			out = append(out, c.Addr())
		}
	}
	return out, nil
}

// Resynced passes the OVN client's resyncs on to next, after making the
// zone's rows stale when a resync names every network or the zone's. The
// next network's reconcile applies them again: every network's, queued by
// next, with All; with the zone's rows only (which no NAD names), the
// NADs this controller queues for them (SetupWithManager).
func (r *Reconciler) Resynced(next func(engine.Resync)) func(engine.Resync) {
	ch := make(chan event.GenericEvent, 1)
	r.zone.resyncs = ch
	return func(rs engine.Resync) {
		if rs.All || slices.Contains(rs.Networks, policy.ZoneNetwork) {
			r.zone.epoch.Add(1)
			if !rs.All {
				select {
				case ch <- event.GenericEvent{Object: &corev1.Node{}}:
				default: // one is queued already
				}
			}
		}
		if next != nil {
			next(rs)
		}
	}
}
