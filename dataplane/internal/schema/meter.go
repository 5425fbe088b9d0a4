package schema

import (
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// Meter: a zone row, by name (the table's index), which a COPP's meters
// name; it holds its bands (strong references to Meter_Band rows).
var Meter = Spec[nbdb.Meter]{
	Table: nbdb.MeterTable,
	Key:   func(r *nbdb.Meter) string { return r.Name },
	UUID:  func(r *nbdb.Meter) *string { return &r.UUID },
	IDs:   func(r *nbdb.Meter) *map[string]string { return &r.ExternalIDs },
	Fields: func(r *nbdb.Meter, buf []any) []any {
		return append(buf, &r.ExternalIDs, &r.Bands, &r.Fair, &r.Unit)
	},
}

var _ = planned(Meter, Table{
	Kind:    Zone,
	Indexed: true,
	Describe: func(m model.Model, mark string) string {
		r := m.(*nbdb.Meter)
		fair := r.Fair != nil && *r.Fair
		return fmt.Sprintf("meter %s%s unit=%s fair=%v", r.Name, mark, r.Unit, fair)
	},
	Monitor: func() client.MonitorOption { return client.WithTable(&nbdb.Meter{}) },
})
