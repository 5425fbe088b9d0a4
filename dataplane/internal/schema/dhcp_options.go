package schema

import (
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/ovnk"
)

// DHCPOptions: a root row, by the VM it serves and its cidr.
var DHCPOptions = Spec[nbdb.DHCPOptions]{
	Table:  nbdb.DHCPOptionsTable,
	Key:    func(r *nbdb.DHCPOptions) string { return r.ExternalIDs[ovnk.ExternalIDVM] + "|" + r.Cidr },
	UUID:   func(r *nbdb.DHCPOptions) *string { return &r.UUID },
	IDs:    func(r *nbdb.DHCPOptions) *map[string]string { return &r.ExternalIDs },
	Fields: func(r *nbdb.DHCPOptions, buf []any) []any { return append(buf, &r.ExternalIDs, &r.Options) },
}

var _ = planned(DHCPOptions, Table{
	Kind:    Root,
	Indexed: true,
	Describe: func(m model.Model, _ string) string {
		o := m.(*nbdb.DHCPOptions)
		return "dhcp_options " + o.Cidr + kv(" options", o.Options)
	},
	Monitor: func() client.MonitorOption { return client.WithTable(&nbdb.DHCPOptions{}) },
})
