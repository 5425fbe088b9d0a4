package zone

import (
	"flag"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/udnkit/udnkit/ovnk"
)

// Options configure what every dataplane controller of the zone shares.
type Options struct {
	// Zone is --zone, named in what the dataplane reports ("": the single zone).
	Zone string
	// Local says whether a node belongs to this OVN zone; nil means every node
	// does (one zone, as `make run` has). The manager sets it to InZone(Zone).
	Local func(*corev1.Node) bool
	// Workers is --dataplane-workers: how many networks each of the Layer2,
	// Layer3, multi-VTEP and live-migration controllers reconciles at once
	// (0: DefaultWorkers), so a large network's reconcile never holds a
	// small one in the workqueue.
	Workers int
	// FIFOQueue gives the controllers controller-runtime's default queue
	// (FIFO among equal priorities). Off (the default), each serves the
	// namespaces of its queued NADs in turn (fairqueue.ByNamespace), so a
	// flood of networks in one namespace does not hold up another
	// namespace's rows.
	FIFOQueue bool
	// GatewayMode is --gateway-mode, OVN-Kubernetes' own (shared or local):
	// where the pods' traffic leaves the node, hence the networks' routes.
	GatewayMode ovnk.GatewayMode
	// ExternalPortRange is --external-port-range: every SNAT's
	// external_port_range, upstream's --ephemeral-port-range.
	ExternalPortRange string
}

// ValidateGateway checks --gateway-mode and --external-port-range.
func (o Options) ValidateGateway() error {
	if _, err := ovnk.ParseGatewayMode(string(o.GatewayMode)); err != nil {
		return fmt.Errorf("--gateway-mode: %w", err)
	}
	if err := ovnk.ValidateExternalPortRange(o.ExternalPortRange); err != nil {
		return fmt.Errorf("--external-port-range: %w", err)
	}
	return nil
}

// BindFlags binds Options to the manager's flags.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Zone, "zone", "", "OVN interconnect zone these databases serve: nodes of other zones get remote ports (a node's zone is its name, or the k8s.ovn.org/zone-name of an older OVN-Kubernetes); empty: one zone where every node is local")
	fs.IntVar(&o.Workers, "dataplane-workers", DefaultWorkers,
		"networks each of the Layer2, Layer3, multi-VTEP and live-migration controllers programs at once (one at a time per network), so that a large network's Apply does not hold up the others")
	fs.StringVar((*string)(&o.GatewayMode), "gateway-mode", string(ovnk.GatewayModeShared),
		"OVN-Kubernetes' --gateway-mode, shared or local: in local mode the pods' traffic leaves through the management port (source routes to it, ct-commit-all on the Layer2 transit router, no routes to the UDN-enabled services)")
	fs.StringVar(&o.ExternalPortRange, "external-port-range", ovnk.DefaultExternalPortRange,
		"external_port_range of every SNAT the dataplane writes, <min>-<max>: OVN-Kubernetes' --ephemeral-port-range, which defaults to its host's net.ipv4.ip_local_port_range (the kernel's default is this one)")
}
