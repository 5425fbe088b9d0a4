package zone

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/udnkit/udnkit/dataplane"
	"github.com/udnkit/udnkit/ovnk"
)

// InZone is Options.Local for the manager's --zone: a node is local iff
// its OVN interconnect zone (ovnk.ZoneOf: the node's name, or the
// k8s.ovn.org/zone-name an older OVN-Kubernetes set) is zone. The empty zone
// is the single zone of `make run`, where every node is local (nil).
func InZone(zone string) func(*corev1.Node) bool {
	if zone == "" {
		return nil
	}
	return func(n *corev1.Node) bool { return ovnk.ZoneOf(n) == zone }
}

// Connector is a manager runnable that connects to OVN in the background and
// then starts the dataplane controllers (controller-runtime starts
// controllers added to a running manager at once). It needs leader
// election, as the controllers do: replicas that are not the leader do not
// connect.
type Connector struct {
	OVN *dataplane.Client
	// Manager is what the controllers are set up with (Requeuer.Manager).
	Manager ctrl.Manager
	// Setups are the controllers' SetupWithManager.
	Setups []func(ctrl.Manager) error
}

// Start connects and then sets up the controllers; it returns when ctx ends.
func (r *Connector) Start(ctx context.Context) error {
	if err := r.OVN.Connect(ctx); err != nil {
		return nil // the manager stops
	}
	for _, setup := range r.Setups {
		if err := setup(r.Manager); err != nil {
			return fmt.Errorf("starting the dataplane controllers: %w", err)
		}
	}
	<-ctx.Done()
	r.OVN.Close()
	return nil
}
