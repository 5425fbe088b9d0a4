package zone

import (
	"context"
	"errors"
	"testing"

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
