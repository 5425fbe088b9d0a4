package benchzone

import (
	"maps"
	"strconv"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// RawOps are d's load balancers, address sets, port groups with their
// ACLs and zone meters as plain libovsdb operations for the baseline's
// Northbound, which holds the same topology and none of d's rows: inserts
// with named UUIDs (external_ids with d's owner's, as Apply writes them),
// and one mutation of each existing group, switch and router that gains
// load balancers. No cache lookups beyond those names, no diff.
func (z *Zone) RawOps(d *rows.Desired) []ovsdb.Operation {
	z.b.Helper()
	r := &rawOps{z: z, ids: d.Owner.IDs(), lbs: map[string]string{}}
	for _, m := range d.Meters {
		if _, ok := uuidByName(z, (*nbdb.Meter).GetName, (*nbdb.Meter).GetUUID)[m.Row.Name]; !ok {
			band := m.Band
			m.Row.Bands = []string{r.create(&band, &band.UUID)}
			r.create(&m.Row, &m.Row.UUID)
		}
	}
	for _, a := range d.AddressSets {
		a.ExternalIDs = r.owned(a.ExternalIDs)
		r.create(&a, &a.UUID)
	}
	ports := map[string]string{}
	if len(d.PortGroups) > 0 {
		ports = uuidByName(z, (*nbdb.LogicalSwitchPort).GetName, (*nbdb.LogicalSwitchPort).GetUUID)
	}
	for _, g := range d.PortGroups {
		row := g.Row
		row.ExternalIDs = r.owned(row.ExternalIDs)
		for _, acl := range g.ACLs {
			acl.ExternalIDs = r.owned(acl.ExternalIDs)
			row.ACLs = append(row.ACLs, r.create(&acl, &acl.UUID))
		}
		for _, p := range g.Ports {
			row.Ports = append(row.Ports, ports[p])
		}
		r.create(&row, &row.UUID)
	}
	for _, lb := range d.LoadBalancers {
		lb.ExternalIDs = r.owned(lb.ExternalIDs)
		r.lbs[lb.Name] = r.create(&lb, &lb.UUID)
	}
	groups := uuidByName(z, (*nbdb.LoadBalancerGroup).GetName, (*nbdb.LoadBalancerGroup).GetUUID)
	for _, g := range d.LoadBalancerGroups {
		row := &nbdb.LoadBalancerGroup{UUID: groups[g.Row.Name]}
		r.mutate(row, &row.LoadBalancer, g.LoadBalancers)
	}
	if len(d.Switches) > 0 {
		switches := uuidByName(z, (*nbdb.LogicalSwitch).GetName, (*nbdb.LogicalSwitch).GetUUID)
		for _, s := range d.Switches {
			row := &nbdb.LogicalSwitch{UUID: switches[s.Row.Name]}
			r.mutate(row, &row.LoadBalancer, s.LoadBalancers)
		}
	}
	if len(d.Routers) > 0 {
		routers := uuidByName(z, (*nbdb.LogicalRouter).GetName, (*nbdb.LogicalRouter).GetUUID)
		for _, rt := range d.Routers {
			row := &nbdb.LogicalRouter{UUID: routers[rt.Row.Name]}
			r.mutate(row, &row.LoadBalancer, rt.LoadBalancers)
		}
	}
	return r.ops
}

type rawOps struct {
	z   *Zone
	ids map[string]string
	lbs map[string]string
	ops []ovsdb.Operation
	n   int
}

// owned are ids with the owner's external IDs added.
func (r *rawOps) owned(ids map[string]string) map[string]string {
	out := maps.Clone(r.ids)
	maps.Copy(out, ids)
	return out
}

// create inserts m under a new named UUID, which it returns.
func (r *rawOps) create(m model.Model, uuid *string) string {
	r.n++
	*uuid = "raw" + strconv.Itoa(r.n)
	ops, err := r.z.Raw.Create(m)
	if err != nil {
		r.z.b.Fatal(err)
	}
	r.ops = append(r.ops, ops...)
	return *uuid
}

// mutate adds the named load balancers to an existing row's column.
func (r *rawOps) mutate(row model.Model, column *[]string, lbs []string) {
	if len(lbs) == 0 {
		return
	}
	var uuids []string
	for _, name := range lbs {
		uuids = append(uuids, r.lbs[name])
	}
	ops, err := r.z.Raw.Where(row).Mutate(row, model.Mutation{Field: column, Mutator: ovsdb.MutateOperationInsert, Value: uuids})
	if err != nil {
		r.z.b.Fatal(err)
	}
	r.ops = append(r.ops, ops...)
}

// uuidByName is the UUID of each row of T's table in the raw client's
// cache, by name.
func uuidByName[T any](z *Zone, name, uuid func(*T) string) map[string]string {
	z.b.Helper()
	var list []T
	if err := z.Raw.List(z.Ctx, &list); err != nil {
		z.b.Fatal(err)
	}
	out := make(map[string]string, len(list))
	for i := range list {
		out[name(&list[i])] = uuid(&list[i])
	}
	return out
}

// RawLoadBalancer is the UUID of the named load balancer in the
// baseline's Northbound.
func (z *Zone) RawLoadBalancer(name string) string {
	z.b.Helper()
	u := uuidByName(z, (*nbdb.LoadBalancer).GetName, (*nbdb.LoadBalancer).GetUUID)[name]
	if u == "" {
		z.b.Fatalf("no load balancer %s in the baseline's Northbound", name)
	}
	return u
}

// RawUpdateVips sets a load balancer's vips in the baseline's Northbound
// in one transaction and waits until the raw client's cache shows them.
func (z *Zone) RawUpdateVips(uuid string, vips map[string]string) {
	z.b.Helper()
	lb := &nbdb.LoadBalancer{UUID: uuid, Vips: vips}
	ops, err := z.Raw.Where(lb).Update(lb, &lb.Vips)
	if err != nil {
		z.b.Fatal(err)
	}
	z.transact(ops)
	z.eventually("the vips of "+uuid, func() (bool, error) {
		cur := &nbdb.LoadBalancer{UUID: lb.UUID}
		if err := z.Raw.Get(z.Ctx, cur); err != nil {
			return false, err
		}
		return maps.Equal(cur.Vips, vips), nil
	})
}

// ClearRaw deletes the owner's load balancers, port groups (their ACLs
// with them) and address sets from the baseline's Northbound with the raw
// client (the references to them are weak) and waits until its cache
// holds none.
func (z *Zone) ClearRaw(owner rows.Owner) {
	z.b.Helper()
	owned := func(ids map[string]string) bool {
		return ids[ovnk.ExternalIDPiece] == owner.Piece && ids[ovnk.ExternalIDNetwork] == owner.Network
	}
	var ops []ovsdb.Operation
	for _, where := range []func() ([]ovsdb.Operation, error){
		z.Raw.WhereCache(func(r *nbdb.LoadBalancer) bool { return owned(r.ExternalIDs) }).Delete,
		z.Raw.WhereCache(func(r *nbdb.PortGroup) bool { return owned(r.ExternalIDs) }).Delete,
		z.Raw.WhereCache(func(r *nbdb.AddressSet) bool { return owned(r.ExternalIDs) }).Delete,
	} {
		o, err := where()
		if err != nil {
			z.b.Fatal(err)
		}
		ops = append(ops, o...)
	}
	if len(ops) == 0 {
		return
	}
	z.transact(ops)
	for _, t := range []string{nbdb.LoadBalancerTable, nbdb.PortGroupTable, nbdb.AddressSetTable} {
		z.eventually("the baseline's "+t+" rows gone", func() (bool, error) {
			n := 0
			for _, m := range z.Raw.Cache().Table(t).RowsShallow() {
				if ids, ok := externalIDs(m); ok && owned(ids) {
					n++
				}
			}
			return n == 0, nil
		})
	}
}

func externalIDs(m model.Model) (map[string]string, bool) {
	switch r := m.(type) {
	case *nbdb.LoadBalancer:
		return r.ExternalIDs, true
	case *nbdb.PortGroup:
		return r.ExternalIDs, true
	case *nbdb.AddressSet:
		return r.ExternalIDs, true
	}
	return nil, false
}
