package rows

import "fmt"

// ForeignRowError is an Apply refused because a router or switch the piece
// would create exists and is not the piece's: another writer (usually
// OVN-Kubernetes itself, when its network segmentation is on) owns it. The
// dataplane changes nothing of the network then; callers report it rather
// than retry, since only the other writer's leaving resolves it.
type ForeignRowError struct {
	// Kind is "logical router" or "logical switch"; Name the row's name.
	Kind, Name string
	// Owner is the piece that wanted the row.
	Owner Owner
	// RowNetwork is the row's own k8s.ovn.org/network ("" when unset): equal
	// to Owner.Network when OVN-Kubernetes programs the same network.
	RowNetwork string
}

func (e *ForeignRowError) Error() string {
	return fmt.Sprintf("%s %q exists but is not owned by network %q (%s/%s): refusing to touch it",
		e.Kind, e.Name, e.Owner.Network, e.Owner.Topology, e.Owner.Piece)
}

// SameNetwork says whether the foreign row belongs to the network the piece
// programs: another writer programs this very network.
func (e *ForeignRowError) SameNetwork() bool { return e.RowNetwork == e.Owner.Network }

// MissingRowError is an Apply refused because a router, switch, port
// group or load balancer group the piece only references (Ref) does not
// exist: the piece that creates it has not applied it yet. Callers wait
// and try again.
type MissingRowError struct {
	// Kind is "logical router", "logical switch", "port group" or "load
	// balancer group"; Name the row's name.
	Kind, Name string
}

func (e *MissingRowError) Error() string {
	return fmt.Sprintf("%s %q not found: it is created by another piece and must exist first", e.Kind, e.Name)
}
