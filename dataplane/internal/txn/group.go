package txn

import (
	"net/netip"
	"sort"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
)

// member is one child row a unit inserts or removes, under its parent.
type member struct {
	u      *unit
	row    schema.GroupRow
	parent string
	insert bool
}

// group merges the units whose rows belong together (see the rules
// above): inserted rows with inserted rows, removed rows with removed rows,
// and the pairs joins names. Merged-away units are marked merged.
func group(members []member, joins [][2]*unit) {
	sets := unionFind{}
	for _, j := range joins {
		sets.union(j[0], j[1])
	}
	targets := targetsOf(members)
	for _, m := range members {
		if m.row.Peer != "" {
			sets.union(m.u, targets.byName[side{m.insert, m.row.Peer}])
		}
		if m.row.Port != "" {
			sets.union(m.u, targets.byName[side{m.insert, m.row.Port}])
		}
		for _, nh := range m.row.Nexthops {
			sets.union(m.u, targets.holding(m, nh))
		}
	}
	seen := map[*unit]bool{}
	for _, m := range members {
		u := m.u
		r := sets.find(u)
		if r == u || seen[u] {
			continue
		}
		seen[u] = true
		r.ops = append(r.ops, u.ops...)
		r.refs = append(r.refs, u.refs...)
		r.order = min(r.order, u.order)
		r.gc += u.gc
		u.merged = true
	}
}

// unionFind holds the sets of units merged so far.
type unionFind map[*unit]*unit

func (s unionFind) find(u *unit) *unit {
	p, ok := s[u]
	if !ok || p == u {
		return u
	}
	r := s.find(p)
	s[u] = r
	return r
}

func (s unionFind) union(a, b *unit) {
	if a == nil || b == nil {
		return
	}
	ra, rb := s.find(a), s.find(b)
	if ra != rb {
		s[rb] = ra
	}
}

// side is a name (or a parent) among the inserted or the removed rows.
type side struct {
	insert bool
	name   string
}

type sideNet struct {
	side
	prefix netip.Prefix
}

// targets are the rows others join (router ports): by name, and by
// (insert, parent, network) with the prefix lengths of those networks,
// longest first.
type targets struct {
	byName  map[side]*unit
	byNet   map[sideNet]*unit
	lengths []int
}

func targetsOf(members []member) targets {
	t := targets{byName: map[side]*unit{}, byNet: map[sideNet]*unit{}}
	bits := map[int]bool{}
	for _, m := range members {
		if !m.row.Target {
			continue
		}
		t.byName[side{m.insert, m.row.Name}] = m.u
		for _, n := range m.row.Networks {
			t.byNet[sideNet{side{m.insert, m.parent}, n}] = m.u
			bits[n.Bits()] = true
		}
	}
	for b := range bits {
		t.lengths = append(t.lengths, b)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(t.lengths)))
	return t
}

// holding is the unit of the target on the same parent, of the same side,
// whose networks hold addr most specifically.
func (t targets) holding(m member, addr string) *unit {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return nil
	}
	for _, b := range t.lengths {
		p, err := a.Prefix(b)
		if err != nil {
			continue
		}
		if port := t.byNet[sideNet{side{m.insert, m.parent}, p}]; port != nil {
			return port
		}
	}
	return nil
}
