package zone

import (
	"flag"

	corev1 "k8s.io/api/core/v1"
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
}

// BindFlags binds Options to the manager's flags.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Zone, "zone", "", "OVN interconnect zone these databases serve: nodes of other zones get remote ports (a node's zone is its name, or the k8s.ovn.org/zone-name of an older OVN-Kubernetes); empty: one zone where every node is local")
	fs.IntVar(&o.Workers, "dataplane-workers", DefaultWorkers,
		"networks each of the Layer2, Layer3, multi-VTEP and live-migration controllers programs at once (one at a time per network), so that a large network's Apply does not hold up the others")
}
