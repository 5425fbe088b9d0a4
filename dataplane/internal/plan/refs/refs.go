// Package refs plans the rows a piece names rather than holds as children:
// zone rows (COPPs, meters and load balancer groups, found by name or
// inserted, never updated; a network's groups go with its last piece), the load balancers and DHCP options
// that groups and switch ports name by name or key, the members a port
// group names by port name, and the static MAC bindings, which are the
// piece's by the router port they name. Package plan diffs routers,
// switches, their children and root rows, and hands this package what it
// needs of its plan (Host).
package refs

import (
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/rows"
)

// Host is the plan the references are resolved in.
type Host interface {
	// API builds the operations and holds the cache.
	API() client.Client
	// NewUUID is a fresh named UUID for an insert.
	NewUUID() string
	// Add appends operations to the plan (or returns err).
	Add(ops []ovsdb.Operation, err error) error
	// Mutate mutates the columns of one cached row, by its UUID.
	Mutate(target, row model.Model, mutations []model.Mutation) error
	// Indexed says the plan reads the index (Scan returns the rows that
	// may matter to the piece), not whole tables.
	Indexed() bool
	// Scan returns, in UUID order, the rows of a table the plan looks at
	// (names: those with these names, when the index knows them).
	Scan(table string, names []string) []string
	// Row is a cached row (read-only) by UUID, nil when there is none.
	Row(table, uuid string) model.Model
	// Rows is a read-only snapshot of a cached table by UUID.
	Rows(table string) map[string]model.Model
	// Inserted is the named UUID of a row the plan inserts, by table and
	// key ("" none); InsertedIn lists a table's by key.
	Inserted(table, key string) string
	InsertedIn(table string) map[string]string
	NoteInserted(table, key, uuid string)
	// OwnedIn says whether a row of table is the piece's.
	OwnedIn(table string) func(uuid string) bool
	// NoteGone notes a row the plan deletes.
	NoteGone(table, uuid string)
	// MarkZone notes that the plan inserts the zone row of table named name.
	MarkZone(table, name string)
}

// Resolver resolves one plan's references.
type Resolver struct {
	h     Host
	owner rows.Owner
	// dhcp: the UUIDs of the piece's DHCP options (found or inserted), by
	// rows.DHCPKey.
	dhcp map[string]string
	// lbs: the UUIDs of the piece's load balancers (found or inserted), by name.
	lbs map[string]string
	// ownedLBs: the UUIDs of the piece's existing load balancers (ownedLB).
	ownedLBs map[string]bool
	// newLBs: the named UUIDs of the load balancers the plan inserts.
	newLBs map[string]bool
	// copps: the UUIDs of the zone's COPPs the plan found or inserts, by name.
	copps map[string]string
	// ports: the ports the port groups name → found (Ports).
	ports map[string]bool
	// later: DropLBGroups leaves the zone's check to DropUnreferenced
	// (Later); waiting are the groups it waits for, gone the plan's
	// deleted rows.
	later   bool
	waiting []string
	gone    func(table, uuid string) bool
}

// New is the resolver of the owner's plan h.
func New(h Host, owner rows.Owner) *Resolver {
	return &Resolver{h: h, owner: owner, copps: map[string]string{}}
}

// DuplicateRows is the refusal of two desired rows with one identity.
func DuplicateRows(table, key string) error {
	return fmt.Errorf("desired rows: two %s rows with the same identity %q", table, key)
}
