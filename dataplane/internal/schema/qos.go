package schema

import (
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// QoS: a switch's QoS rule (its qos_rules column), by its external_ids
// k8s.ovn.org/id when set, otherwise by direction, priority and match.
var QoS = Spec[nbdb.QoS]{
	Table: nbdb.QoSTable,
	Key: func(r *nbdb.QoS) string {
		return objectKey(r.ExternalIDs, string(r.Direction), r.Priority, r.Match)
	},
	UUID: func(r *nbdb.QoS) *string { return &r.UUID },
	IDs:  func(r *nbdb.QoS) *map[string]string { return &r.ExternalIDs },
	Fields: func(r *nbdb.QoS, buf []any) []any {
		return append(buf, &r.ExternalIDs, &r.Action, &r.Bandwidth, &r.Direction, &r.Match, &r.Priority)
	},
}

var _ = planned(QoS, Table{
	Kind:    Child,
	Parent:  nbdb.LogicalSwitchTable,
	Column:  "qos_rules",
	In:      func(m model.Model) *[]string { return &m.(*nbdb.LogicalSwitch).QOSRules },
	Indexed: true,
	Describe: func(m model.Model, _ string) string {
		q := m.(*nbdb.QoS)
		return fmt.Sprintf("qos %s %d %q action=%v bandwidth=%v", q.Direction, q.Priority, q.Match, q.Action, q.Bandwidth)
	},
	Monitor:     func() client.MonitorOption { return client.WithTable(&nbdb.QoS{}) },
	Group:       func(model.Model) GroupRow { return GroupRow{Table: nbdb.QoSTable} },
	GroupInsert: func(ovsdb.Row) GroupRow { return GroupRow{Table: nbdb.QoSTable} },
})
