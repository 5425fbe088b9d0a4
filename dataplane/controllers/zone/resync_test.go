package zone

import (
	"context"
	"slices"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/udnkit/udnkit/dataplane/controllers/internal/ctrltest"
	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/ovnk"
)

// The Requeuer maps a network whose rows another client edited back to
// every udnkit NAD whose config names it, whatever its topology and role
// (a CUDN's NADs in several namespaces; a Primary Layer2 NAD before its
// tunnel keys), in every registered controller; a malformed NAD, a NAD
// without udnkit's label and a network no NAD names queue nothing.
func TestRequeuerMapsEveryNetworkToItsNADs(t *testing.T) {
	nad := func(ns, name, config string, labeled bool) *nadv1.NetworkAttachmentDefinition {
		n := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config}}
		if labeled {
			n.Labels = map[string]string{ovnk.LabelUserDefinedNetwork: ""}
		}
		return n
	}
	conf := func(network, topology, role string) string {
		return `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"` + network + `","topology":"` + topology +
			`","role":"` + role + `","subnets":"10.1.0.0/16"}`
	}
	c := fake.NewClientBuilder().WithScheme(ctrltest.NADScheme(t)).
		WithIndex(&nadv1.NetworkAttachmentDefinition{}, AnyNetworkField, AnyNetwork).
		WithObjects(
			nad("blue", "blue", conf("blue_blue", "layer2", "primary"), true),
			nad("green", "green", conf("green_green", "layer3", "primary"), true),
			nad("red", "back", conf("red_back", "layer2", "secondary"), true),
			nad("red", "l3", conf("red_l3", "layer3", "secondary"), true),
			// A CUDN's NADs: the network name is the config's, not the NAD's.
			nad("a", "phys", conf("cluster_udn_phys", "localnet", "secondary"), true),
			nad("b", "phys", conf("cluster_udn_phys", "localnet", "secondary"), true),
			nad("red", "broken", `{"name":"red_back",`, true),
			nad("red", "foreign", conf("red_back", "layer2", "secondary"), false),
		).Build()
	r := NewRequeuer(c)
	queues := []workqueue.TypedRateLimitingInterface[reconcile.Request]{
		workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()),
		workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()),
	}
	for _, q := range queues {
		t.Cleanup(q.ShutDown)
		if err := r.register(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	for networks, want := range map[string][]string{
		"blue_blue":        {"blue/blue"},
		"green_green":      {"green/green"},
		"red_back":         {"red/back"},
		"red_l3":           {"red/l3"},
		"cluster_udn_phys": {"a/phys", "b/phys"},
		"nobody":           nil,
	} {
		r.Resync(engine.Resync{Reason: engine.ResyncForeignEdit, Networks: []string{networks}})
		for i, q := range queues {
			var got []string
			for q.Len() > 0 {
				req, _ := q.Get()
				got = append(got, req.String())
				q.Done(req)
				q.Forget(req)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("network %s, controller %d: queued %v, want %v", networks, i, got, want)
			}
		}
	}
}

// AnyNetwork keys a NAD by its config's network name for the topologies
// udnkit programs only.
func TestAnyNetworkIndexesOnlyProgrammedTopologies(t *testing.T) {
	for config, want := range map[string][]string{
		`{"name":"n","topology":"layer2","role":"secondary"}`:   {"n"},
		`{"name":"n","topology":"localnet","role":"secondary"}`: {"n"},
		`{"name":"n","topology":"layer3","role":"primary"}`:     {"n"},
		`{"name":"n","topology":"bridge"}`:                      nil,
		`{"topology":"layer2"}`:                                 nil,
		`not json`:                                              nil,
	} {
		if got := AnyNetwork(&nadv1.NetworkAttachmentDefinition{Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config}}); !slices.Equal(got, want) {
			t.Errorf("AnyNetwork(%s) = %v, want %v", config, got, want)
		}
	}
}
