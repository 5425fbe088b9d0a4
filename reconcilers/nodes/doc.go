// Package nodes is the node controller: it gives every node a node ID
// (k8s.ovn.org/node-id), one tunnel ID per encap IP beyond the first
// (k8s.ovn.org/node-transit-switch-port-tunnel-ids, multi-VTEP) and a host
// subnet per Layer3 network and IP family (k8s.ovn.org/node-subnets), and
// reports on each Layer3 UDN and CUDN whether every node has one
// (HostSubnetsAllocated). Set it up with SetupWithManager.
//
// # Who writes node IDs
//
// Options.NodeIDs says who writes k8s.ovn.org/node-id. With NodeIDsAllocate
// (the default) this controller allocates it, as below. With NodeIDsRead
// OVN-Kubernetes' cluster manager does (profile udn-controllers), with
// k8s.ovn.org/node-transit-switch-port-ifaddr: this controller never writes
// either, and a node without both, with a malformed ID, or with an ID
// another node records too is not ready: it gets no tunnel IDs and no host
// subnets, a log line and an Event say why when it starts waiting, and each
// Layer3 network's HostSubnetsAllocated condition names it
// (WaitingForNodeIDs) until its next update brings the ID. A changed ID is
// followed (the old one is freed, the tunnel IDs start from the new one); an
// ID this process gave another node as a tunnel ID is taken from that node,
// which gets a new tunnel ID; the check after each write (verify) never
// makes a node yield its node ID. Tunnel IDs then come from above the
// cluster manager's node IDs (allocTunnelID), so that such a clash takes a
// node ID written by hand.
//
// # Allocations
//
// Node IDs and tunnel IDs share one ID space. The first reconcile reads
// every node straight from the apiserver, a page at a time and oldest first,
// and rebuilds every allocator from what the nodes record: of two nodes
// claiming one value the older keeps it, and the younger gets a new one with
// an Event. Every write of a node's annotations carries the resourceVersion
// it read. Without leader election (Options.SingleWriter false) every write
// is checked afterwards against every other node (verify): whichever writer
// reads after both writes sees a clash and the younger node yields.
//
// A change of a Layer3 network or its NAD reconciles every node, after a
// pass delay measured from the reconciles themselves, so that a burst of
// network changes costs a few passes over the nodes rather than one per
// change; each node then checks only the networks changed since its value
// was last complete.
//
// # State
//
// Reconciles of several nodes run at once (Options.MaxConcurrentReconciles).
// The reconciler's fields, and what guards each:
//
//	field       what it holds                                      guarded by
//	client      the manager's cached client                        (read only)
//	reader      the apiserver, uncached (rebuild and verify)       (read only)
//	recorder    the Event recorder                                 (read only)
//	opts        Options                                            (read only)
//	ids         node and tunnel IDs (idalloc.IDAllocator)           its own lock
//	followed    NodeIDsRead: each node's ID and why it waits       followed.mu
//	tunnelNext  NodeIDsRead: the next tunnel ID search's start     an atomic
//	nets        every Layer3 network's host subnet state           nets.mu
//	networks    the Layer3 networks as last listed from the cache  its own locks (layer3.Lister)
//	seen        each node's node-subnets as last decoded/written   seen.mu
//	pace        the pass delay and the reconciles' average time    atomics
//	unverified  nodes whose new values verify has not yet checked  its own lock
//	retry       nodes to reconcile again when a node frees subnets a channel
//
// What each lock guards:
//   - nets.mu: every field of networkStates (byName, removed, synced,
//     syncedGen, changes, orphans) and each hostSubnetState's net, lacking
//     and want. syncNetworks holds it while it reads every node from the
//     apiserver (the first sync, and a new network when another writer may
//     be about): reconciles wait for that read.
//   - networks (reconcilers/nodes/layer3): the list's lock, held while it
//     lists the networks from the cache, so one reconcile lists them while
//     the others wait and then reuse its list; and its NAD subnet cache's
//     lock, held while the nadtrust guard checks a NAD's owner, which may
//     read the apiserver.
//   - seen.mu: seenSubnets' map.
//   - each hostSubnetState's applyMu: its applied, and the order of that
//     network's HostSubnetsAllocated writes; it is held across the status
//     apply, so that the latest summary lands last.
//   - ids, each hostSubnetState's alloc, unverified, followed and the
//     nadtrust guard lock themselves.
//
// # Lock order
//
// The networks' list lock before their NAD cache's lock before the guard's
// lock (layer3.Lister); applyMu before nets.mu (applyHostSubnetsCondition); nets.mu
// before ids's and an allocator's lock (syncNetworks). No other two are held
// together, and no lock but applyMu, the networks' two locks and nets.mu
// (during the read of every node) is held across an API call.
package nodes
