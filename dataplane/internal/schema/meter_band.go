package schema

import (
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// MeterBand: a zone row without a name, found only through the meters
// that hold it (Meter.bands, strong references: the server deletes a band
// no meter holds, so a plan inserts a band with the meters that use it).
var MeterBand = Spec[nbdb.MeterBand]{
	Table: nbdb.MeterBandTable,
	Key:   func(*nbdb.MeterBand) string { return "" },
	UUID:  func(r *nbdb.MeterBand) *string { return &r.UUID },
	IDs:   func(r *nbdb.MeterBand) *map[string]string { return &r.ExternalIDs },
	Fields: func(r *nbdb.MeterBand, buf []any) []any {
		return append(buf, &r.ExternalIDs, &r.Action, &r.Rate, &r.BurstSize)
	},
}

var _ = planned(MeterBand, Table{
	Kind:    Zone,
	Indexed: true,
	Describe: func(m model.Model, _ string) string {
		b := m.(*nbdb.MeterBand)
		return fmt.Sprintf("meter_band action=%s rate=%d burst_size=%d", b.Action, b.Rate, b.BurstSize)
	},
	Monitor: func() client.MonitorOption { return client.WithTable(&nbdb.MeterBand{}) },
})
