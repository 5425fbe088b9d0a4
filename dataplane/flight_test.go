package dataplane

import (
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/udnkit/udnkit/dataplane/rows"
)

// linkLookUps reads udnkit_ovn_link_lookups_total, both kinds together, as
// the metrics endpoint serves it.
func linkLookUps(t *testing.T) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() == "udnkit_ovn_link_lookups_total" {
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// A plan that meets the new children of this process's own transaction
// while it is in flight (committed and in the cache, its links not learnt
// yet) waits for it rather than looking their parents up on the server,
// and plans what is left: nothing. Looking them up, once per network
// written meanwhile and with every link of the database when there are
// many, would grow a zone's work with the square of its networks.
func TestPlanWaitsForOwnTransactionInFlight(t *testing.T) {
	e := newEnv(t)
	e.c.eng.MaxTransactionOps = -1 // one transaction
	net, nodes := exampleV4()
	d := mustLayer2(t, net, nodes)
	type result struct {
		ops int
		err error
	}
	planned := make(chan result, 1)
	var once sync.Once
	e.hooks.Committed = func(rows.Owner) {
		once.Do(func() {
			for deadline := time.Now().Add(10 * time.Second); e.c.eng.NB.Cache().Table("Logical_Switch_Port").Len() == 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Error("the committed transaction's switch ports never reached the cache")
					return
				}
			}
			go func() {
				p, err := e.c.eng.NewPlan(d)
				if err != nil {
					planned <- result{err: err}
					return
				}
				planned <- result{ops: len(p.Ops)}
			}()
			// Long enough for the plan to read the index with the
			// children in it and no links for them.
			time.Sleep(300 * time.Millisecond)
		})
	}
	before := linkLookUps(t)
	e.apply(d)
	e.hooks.Committed = nil
	r := <-planned
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := linkLookUps(t) - before; got != 0 {
		t.Errorf("the plan looked children's parents up %v times, want 0 (it should wait for the transaction in flight)", got)
	}
	if r.ops != 0 {
		t.Errorf("the plan during the transaction found %d operations left, want 0", r.ops)
	}
}
