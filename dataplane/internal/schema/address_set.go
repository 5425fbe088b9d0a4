package schema

import (
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// AddressSet: a root row, by name (which policies' matches reference as
// $name).
var AddressSet = Spec[nbdb.AddressSet]{
	Table:  nbdb.AddressSetTable,
	Key:    func(r *nbdb.AddressSet) string { return r.Name },
	UUID:   func(r *nbdb.AddressSet) *string { return &r.UUID },
	IDs:    func(r *nbdb.AddressSet) *map[string]string { return &r.ExternalIDs },
	Fields: func(r *nbdb.AddressSet, buf []any) []any { return append(buf, &r.ExternalIDs, &r.Addresses) },
}

var _ = planned(AddressSet, Table{
	Kind:    Root,
	Indexed: true,
	Describe: func(m model.Model, _ string) string {
		a := m.(*nbdb.AddressSet)
		return fmt.Sprintf("address_set %s addresses=%q", a.Name, a.Addresses)
	},
	Monitor: func() client.MonitorOption { return client.WithTable(&nbdb.AddressSet{}) },
})
