package zone

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udnkit/udnkit/dataplane/controllers/internal/ctrltest"
)

// TestSweepsOnlyWhenANetworkMayBeGone drives the sweep decision through the
// events a controller sees and checks when it lists every NAD: at the start,
// when a NAD stops naming its network or names another, when a NAD it never
// saw is deleted, and again after a sweep that failed; never for a NAD that
// keeps naming its network or was never a network.
func TestSweepsOnlyWhenANetworkMayBeGone(t *testing.T) {
	a := types.NamespacedName{Namespace: "ns1", Name: "a"}
	b := types.NamespacedName{Namespace: "ns2", Name: "b"}
	var s Sweeps
	ran := 0
	fail := false
	piece := func(context.Context) error {
		ran++
		if fail {
			return errors.New("list failed")
		}
		return nil
	}
	for i, step := range []struct {
		what    string
		key     types.NamespacedName
		network string
		deleted bool
		fail    bool
		sweep   bool
	}{
		{what: "first reconcile after start", key: a, network: "net-a", sweep: true},
		{what: "same NAD, same network", key: a, network: "net-a"},
		{what: "another NAD of a network", key: b, network: "net-b"},
		{what: "a NAD that is no network of this controller", key: types.NamespacedName{Name: "secondary"}},
		{what: "a NAD edited to name another network", key: a, network: "net-c", sweep: true},
		{what: "a NAD that became malformed", key: b, network: "", sweep: true},
		{what: "it names a network again", key: b, network: "net-b"},
		{what: "a deleted NAD this process saw", key: b, deleted: true, fail: true, sweep: true},
		{what: "after a failed sweep, any reconcile sweeps", key: a, network: "net-c", sweep: true},
		{what: "and then no more", key: a, network: "net-c"},
		{what: "a deleted NAD this process never saw", key: types.NamespacedName{Name: "unseen"}, deleted: true, sweep: true},
	} {
		fail = step.fail
		before := ran
		err := s.Sweep(t.Context(), step.key, step.network, step.deleted, piece)
		if (err != nil) != step.fail {
			t.Fatalf("step %d (%s): error %v", i, step.what, err)
		}
		if swept := ran > before; swept != step.sweep {
			t.Errorf("step %d (%s): swept %v, want %v", i, step.what, swept, step.sweep)
		}
	}
}

// A sweep asks NetworkLive through AnyNetworkField, so each network
// function a controller sweeps with must name a NAD by the name the index
// keys it under; a function naming NADs otherwise is caught.
func TestNetworkFunctionsAgreeWithTheIndex(t *testing.T) {
	for name, network := range map[string]func(*nadv1.NetworkAttachmentDefinition) (string, bool){
		"Layer2Name": Layer2Name, "Layer3Name": Layer3Name, "VTEPName": VTEPName,
	} {
		ctrltest.AgreesWithIndex(t, name, network, AnyNetwork)
	}
	byObjectName := func(nad *nadv1.NetworkAttachmentDefinition) (string, bool) {
		n, ok := Layer2Name(nad)
		return nad.Namespace + "_" + nad.Name, ok && n != ""
	}
	if bad := ctrltest.IndexDisagreements(byObjectName, AnyNetwork); len(bad) == 0 {
		t.Errorf("a function naming a network by its NAD's object name agrees with the index")
	}
}

// NADs deleted while a sweep runs share the next one: each reconcile
// returns only after a sweep that began after its NAD's deletion, and the
// five deletions cost one sweep, not five. A reconcile whose context ends
// while it waits for its turn sweeps nothing and says so.
func TestSweepsOfNADsDeletedTogetherShareOneSweep(t *testing.T) {
	var s Sweeps
	var runs atomic.Int32
	var second atomic.Bool
	block, started := make(chan struct{}), make(chan struct{})
	piece := func(context.Context) error {
		if runs.Add(1) == 1 {
			close(started)
			<-block
		} else {
			second.Store(true)
		}
		return nil
	}
	first := make(chan error, 1)
	go func() { first <- s.Sweep(t.Context(), types.NamespacedName{Name: "start"}, "net-0", false, piece) }()
	<-started
	const deleted = 5
	var wg sync.WaitGroup
	errs := make(chan error, deleted)
	for i := range deleted {
		key := types.NamespacedName{Namespace: "ns", Name: fmt.Sprint(i)}
		s.observe(key, "net", false) // seen while it named a network
		wg.Go(func() {
			err := s.Sweep(t.Context(), key, "", true, piece)
			if err == nil && !second.Load() {
				err = errors.New("returned before a sweep that began after its deletion")
			}
			errs <- err
		})
	}
	// Every deletion observed before the running sweep ends.
	for waited := 0; ; waited++ {
		s.mu.Lock()
		want := s.want
		s.mu.Unlock()
		if want == 1+deleted {
			break
		}
		if waited > 500 {
			t.Fatalf("the deletions were not observed: want %d", want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(block)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := runs.Load(); got != 2 {
		t.Errorf("%d sweeps ran for a start and %d deletions during it, want 2", got, deleted)
	}

	s.observe(types.NamespacedName{Name: "late"}, "net", false)
	release, err := s.take(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Sweep(ctx, types.NamespacedName{Name: "late"}, "", true, piece); !errors.Is(err, context.Canceled) {
		t.Errorf("a reconcile whose context ended while waiting: %v, want context.Canceled", err)
	}
	if got := runs.Load(); got != 2 {
		t.Errorf("a reconcile whose context ended swept: %d sweeps", got)
	}
}
