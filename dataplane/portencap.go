package dataplane

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/ovsconn"
	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/sbdb"
	"github.com/udnkit/udnkit/dataplane/topology/multivtep"
)

// SetPortEncaps points the Southbound Port_Binding of each remote pod port of
// a network at the Encap row of its pod's encap IP on the pod's node
// (OKEP-5535), in one transaction; bindings already right are left alone.
// ports maps a logical switch port name to its node (chassis name) and encap
// IP, and replaces the network's earlier ports (none: it has none). A
// binding that loses its encap afterwards (another client, or a replaced
// Southbound whose bindings ovn-northd created again) asks for the
// network's foreign-edit resync (encapwatch.go).
func (c *Client) SetPortEncaps(ctx context.Context, network string, ports map[string]multivtep.PortEncap) (int, error) {
	c.encaps.want(network, ports)
	if len(ports) == 0 {
		return 0, nil
	}
	if err := ovsconn.WaitUp(ctx, c.sb); err != nil {
		return 0, err
	}
	encaps := map[multivtep.PortEncap]string{}
	for _, m := range c.sb.Cache().Table(sbdb.EncapTable).RowsShallow() {
		e := m.(*sbdb.Encap)
		encaps[multivtep.PortEncap{Chassis: e.ChassisName, EncapIP: e.IP}] = e.UUID
	}
	bindings := map[string]*sbdb.PortBinding{}
	for _, m := range c.sb.Cache().Table(sbdb.PortBindingTable).RowsShallow() {
		pb := m.(*sbdb.PortBinding)
		bindings[pb.LogicalPort] = pb
	}
	names := make([]string, 0, len(ports))
	for name := range ports {
		names = append(names, name)
	}
	sort.Strings(names)
	var ops []ovsdb.Operation
	for _, name := range names {
		want := ports[name]
		encap, ok := encaps[want]
		if !ok {
			return 0, fmt.Errorf("port %s: no Encap row for chassis %q with IP %s", name, want.Chassis, want.EncapIP)
		}
		pb, ok := bindings[name]
		if !ok {
			return 0, fmt.Errorf("port %s: no Port_Binding yet (ovn-northd has not bound it)", name)
		}
		if schema.Deref(pb.Encap) == encap {
			c.encaps.set(name)
			continue
		}
		upd := *pb
		upd.Encap = &encap
		o, err := c.sb.Where(pb).Update(&upd, &upd.Encap)
		if err != nil {
			return 0, err
		}
		ops = append(ops, o...)
	}
	if len(ops) == 0 {
		return 0, nil
	}
	if err := transact(ctx, c.sb, ops); err != nil {
		return 0, fmt.Errorf("set Port_Binding encaps: %w", err)
	}
	// Wait for the monitor to show the result, so a repeated call is a no-op.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, name := range names {
		want := encaps[ports[name]]
		for {
			m := c.sb.Cache().Table(sbdb.PortBindingTable).Row(bindings[name].UUID)
			if m != nil && schema.Deref(m.(*sbdb.PortBinding).Encap) == want {
				c.encaps.set(name)
				break
			}
			select {
			case <-ctx.Done():
				return len(ops), fmt.Errorf("port %s: cache did not show the new encap: %w", name, ctx.Err())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return len(ops), nil
}
