package engine

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/ovn-kubernetes/libovsdb/model"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// Port group members another writer owns. A port group may name logical
// switch ports that udnkit does not write (OVN-Kubernetes' default-network
// pod ports in the Primary-UDN isolation group) or that are still being
// created: a plan leaves out a port that does not exist (package plan). No
// controller hears of that port's creation, so the engine watches for it:
// it remembers, per owner, the desired rows of its last Apply and which of
// the ports they name exist, and when a missing one appears in the
// monitor's updates it applies those rows again, which adds it. A port
// that is deleted leaves its groups by itself (Port_Group.ports is a weak
// reference) and is missing again from then on: its re-creation under the
// same name adds it again.
type memberWatch struct {
	mu sync.Mutex
	// owners: the owners whose port groups name ports → their last desired
	// rows and those ports (true: exists).
	owners map[ownerKey]*awaited
	// byPort: a port's name → the owners that name it.
	byPort map[string][]ownerKey
	// due: owners to apply again (a missing port appeared).
	due map[ownerKey]bool
}

type ownerKey [5]string

type awaited struct {
	d     *rows.Desired
	ports map[string]bool
}

func keyOf(o rows.Owner) ownerKey { return o.Key() }

// planned notes the desired rows of an owner's Apply with the ports its
// port groups name (nil: none, the owner is forgotten). exists looks a
// port up in the cache (without the watch's lock, a leaf): one that
// appeared after the plan read it makes the owner due at once.
func (w *memberWatch) planned(d *rows.Desired, ports map[string]bool, exists func(name string) bool) {
	k := keyOf(d.Owner)
	w.mu.Lock()
	if old := w.owners[k]; old != nil {
		for p := range old.ports {
			w.byPort[p] = slices.DeleteFunc(w.byPort[p], func(o ownerKey) bool { return o == k })
			if len(w.byPort[p]) == 0 {
				delete(w.byPort, p)
			}
		}
		delete(w.owners, k)
	}
	delete(w.due, k)
	var missing []string
	if len(ports) > 0 {
		if w.owners == nil {
			w.owners, w.byPort = map[ownerKey]*awaited{}, map[string][]ownerKey{}
		}
		// ports is the plan's own map, which nothing else holds.
		w.owners[k] = &awaited{d: d, ports: ports}
		for p, found := range ports {
			w.byPort[p] = append(w.byPort[p], k)
			if !found {
				missing = append(missing, p)
			}
		}
	}
	w.mu.Unlock()
	// A port that appeared after the plan read the cache and before the
	// watch above: its event may have come before it.
	for _, p := range missing {
		if exists(p) {
			w.seen(nbdb.LogicalSwitchPortTable, &nbdb.LogicalSwitchPort{Name: p}, true)
		}
	}
}

// portExists says whether the cache holds a logical switch port by name.
func (e *Engine) portExists(name string) bool {
	_, m, err := e.NB.Cache().Table(nbdb.LogicalSwitchPortTable).RowByModel(&nbdb.LogicalSwitchPort{Name: name})
	return err == nil && m != nil
}

// current says whether d is still the last desired rows of its owner.
func (w *memberWatch) current(d *rows.Desired) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	a := w.owners[keyOf(d.Owner)]
	return a != nil && a.d == d
}

// seen notes a port's creation (exists) or deletion, from the monitor.
func (w *memberWatch) seen(table string, m model.Model, exists bool) {
	if table != nbdb.LogicalSwitchPortTable {
		return
	}
	name := m.(*nbdb.LogicalSwitchPort).Name
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range w.byPort[name] {
		a := w.owners[k]
		if exists && !a.ports[name] {
			if w.due == nil {
				w.due = map[ownerKey]bool{}
			}
			w.due[k] = true
		}
		a.ports[name] = exists
	}
}

// takeDue returns the desired rows to apply again.
func (w *memberWatch) takeDue() []*rows.Desired {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*rows.Desired
	for k := range w.due {
		out = append(out, w.owners[k].d)
	}
	clear(w.due)
	return out
}

// memberWait bounds an Apply that adds ports which appeared.
const memberWait = time.Minute

// applyAwaited applies again, each in its own goroutine, the desired rows
// whose port groups name a port that appeared, unless an Apply of newer
// rows of the owner came first.
func (e *Engine) applyAwaited() {
	w := &e.healing.members
	for _, d := range w.takeDue() {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), memberWait)
			defer cancel()
			_, err := e.ApplyUnless(ctx, d, func(context.Context) (bool, error) { return !w.current(d), nil })
			if err != nil {
				log.Log.WithName("ovn").Error(err, "adding port group members that appeared", "network", d.Owner.Network,
					"topology", d.Owner.Topology, "piece", d.Owner.Piece)
			}
		}()
	}
}
