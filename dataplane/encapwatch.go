package dataplane

import (
	"sync"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/sbdb"
	"github.com/udnkit/udnkit/dataplane/topology/multivtep"
)

// encapWatch follows the Southbound Port_Bindings whose encap SetPortEncaps
// set. No Northbound row records that encap, so the Northbound healer
// cannot see it go: another client clearing or changing it, or a
// Southbound replaced (an ovsdb-server restarted on an emptied or restored
// file) whose bindings ovn-northd creates again without it. A binding
// udnkit saw right that the monitor then shows without its Encap row asks
// for its network's foreign-edit resync (lost), which re-applies the
// network, its encaps among it; so does, for such a binding, the Encap row
// it wants appearing (a chassis registering again in a new Southbound).
// The check is of the rows' state, not of who wrote them: udnkit's own
// writes and the cache's refills leave bindings right.
type encapWatch struct {
	// sb is the Southbound connection; lost asks for a network's resync.
	sb   client.Client
	lost func(network string)

	mu sync.Mutex
	// ports: a port → what SetPortEncaps was last told for it.
	ports map[string]*wantedEncap
	// byNet: a network → its ports.
	byNet map[string][]string
}

// wantedEncap is one port's encap.
type wantedEncap struct {
	network string
	encap   multivtep.PortEncap
	// right: the binding was seen pointing at it; lost: since then it no
	// longer does.
	right, lost bool
}

// want replaces a network's ports.
func (w *encapWatch) want(network string, ports map[string]multivtep.PortEncap) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.byNet[network] {
		if _, again := ports[p]; !again && w.ports[p] != nil && w.ports[p].network == network {
			delete(w.ports, p)
		}
	}
	delete(w.byNet, network)
	if len(ports) == 0 {
		return
	}
	if w.ports == nil {
		w.ports, w.byNet = map[string]*wantedEncap{}, map[string][]string{}
	}
	for p, e := range ports {
		old := w.ports[p]
		if old == nil || old.network != network || old.encap != e {
			old = &wantedEncap{network: network, encap: e}
			w.ports[p] = old
		}
		w.byNet[network] = append(w.byNet[network], p)
	}
}

// set notes a port's binding seen pointing at its encap.
func (w *encapWatch) set(port string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.ports[port]; p != nil {
		p.right, p.lost = true, false
	}
}

// OnAdd, OnUpdate and OnDelete make the watch a cache.EventHandler of the
// Southbound cache.
func (w *encapWatch) OnAdd(table string, m model.Model) { w.changed(table, m) }
func (w *encapWatch) OnUpdate(table string, _, m model.Model) {
	w.changed(table, m)
}
func (w *encapWatch) OnDelete(string, model.Model) {}

// changed checks a binding, or the bindings that want an Encap row.
func (w *encapWatch) changed(table string, m model.Model) {
	var lost []string
	switch table {
	case sbdb.PortBindingTable:
		pb := m.(*sbdb.PortBinding)
		if !w.wants(pb.LogicalPort) {
			return // most bindings: no Encap row to look up
		}
		if net := w.check(pb.LogicalPort, w.encapOf(schema.Deref(pb.Encap))); net != "" {
			lost = append(lost, net)
		}
	case sbdb.EncapTable:
		e := m.(*sbdb.Encap)
		lost = w.appeared(multivtep.PortEncap{Chassis: e.ChassisName, EncapIP: e.IP})
	}
	if w.lost != nil {
		for _, net := range lost {
			w.lost(net)
		}
	}
}

// wants says whether SetPortEncaps was told of a port.
func (w *encapWatch) wants(port string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ports[port] != nil
}

// encapOf is the chassis and IP of an Encap row (zero: none, or not in
// the cache).
func (w *encapWatch) encapOf(uuid string) multivtep.PortEncap {
	if uuid == "" || w.sb == nil {
		return multivtep.PortEncap{}
	}
	t := w.sb.Cache().Table(sbdb.EncapTable)
	if t == nil {
		return multivtep.PortEncap{}
	}
	e, ok := t.Row(uuid).(*sbdb.Encap)
	if !ok {
		return multivtep.PortEncap{}
	}
	return multivtep.PortEncap{Chassis: e.ChassisName, EncapIP: e.IP}
}

// check notes a port's binding pointing at encap and returns its network
// when that loses the encap udnkit saw it hold.
func (w *encapWatch) check(port string, encap multivtep.PortEncap) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.ports[port]
	switch {
	case p == nil:
		return ""
	case encap == p.encap:
		p.right, p.lost = true, false
		return ""
	case p.right && !p.lost:
		p.lost = true
		return p.network
	}
	return ""
}

// appeared returns the networks of lost bindings that want an Encap row
// that appeared.
func (w *encapWatch) appeared(encap multivtep.PortEncap) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, p := range w.ports {
		if p.lost && p.encap == encap {
			out = append(out, p.network)
		}
	}
	return out
}
