package plan

import (
	"slices"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/index"
	"github.com/udnkit/udnkit/dataplane/internal/plan/refs"
)

// host is the Planner as package refs sees it (refs.Host).
type host struct{ p *Planner }

var _ refs.Host = host{}

func (h host) API() client.Client                          { return h.p.api }
func (h host) NewUUID() string                             { return h.p.name() }
func (h host) Add(ops []ovsdb.Operation, err error) error  { return h.p.add(ops, err) }
func (h host) Indexed() bool                               { return h.p.ix != nil }
func (h host) Scan(table string, names []string) []string  { return h.p.scan(table, names, false) }
func (h host) Row(table, uuid string) model.Model          { return h.p.row(table, uuid) }
func (h host) Rows(table string) map[string]model.Model    { return h.p.rows(table) }
func (h host) Inserted(table, key string) string           { return h.p.inserted[[2]string{table, key}] }
func (h host) NoteInserted(table, key, uuid string)        { h.p.inserted[[2]string{table, key}] = uuid }
func (h host) OwnedIn(table string) func(uuid string) bool { return h.p.ownedIn(table) }
func (h host) MarkZone(table, name string) {
	if k := table + "/" + name; !slices.Contains(h.p.Zone, k) {
		h.p.Zone = append(h.p.Zone, k)
	}
}
func (h host) NoteGone(table, uuid string) {
	h.p.Gone = append(h.p.Gone, index.RowRef{Table: table, UUID: uuid})
}

func (h host) Mutate(target, row model.Model, mutations []model.Mutation) error {
	return h.p.mutate(target, row, mutations)
}

func (h host) InsertedIn(table string) map[string]string {
	m := map[string]string{}
	for k, u := range h.p.inserted {
		if k[0] == table {
			m[k[1]] = u
		}
	}
	return m
}
