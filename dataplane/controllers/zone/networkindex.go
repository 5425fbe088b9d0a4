package zone

import (
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
)

// AnyNetworkField indexes NADs by the name of every network udnkit
// programs (AnyNetwork): Primary and Secondary, Layer2, Layer3 and
// Localnet. The Requeuer maps the networks whose rows another client
// changed back to their NADs through it. NADNetworkField holds only the
// Primary networks the topology controllers read, so it cannot serve: a
// Secondary network's rows (its switch and pod ports, its
// MultiNetworkPolicy rows) would heal only on an unrelated event. Setup
// registers it.
const AnyNetworkField = "udnkit.network.any"

// AnyNetwork is AnyNetworkField's index function: the network name in a
// NAD's spec.config ("name", the k8s.ovn.org/network of its rows) for the
// topologies udnkit programs, of either role; nothing for a malformed
// config or another topology.
func AnyNetwork(o client.Object) []string {
	nad, ok := o.(*nadv1.NetworkAttachmentDefinition)
	if !ok {
		return nil
	}
	conf, err := netconf.Parse(nad.Spec.Config)
	if err != nil || conf.Name == "" {
		return nil
	}
	switch conf.Topology {
	case base.TopologyLayer2, base.TopologyLayer3, ovnk.TopologyLocalnet:
		return []string{conf.Name}
	}
	return nil
}
