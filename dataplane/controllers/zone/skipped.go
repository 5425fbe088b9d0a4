package zone

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// Reasons an object is skipped (the reason label of
// udnkit_dataplane_skipped_objects_total and of the Warning Event).
const (
	ReasonMalformedNetwork = "MalformedNetwork"
	ReasonInvalidNodeID    = "InvalidNodeID"
	// ReasonInvalidTunnelID: the node's
	// k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids is malformed.
	ReasonInvalidTunnelID = "InvalidTunnelID"
)

// skippedObjects counts objects the dataplane left out of the rows it
// programs because their annotations or specs are malformed, out of range
// or conflict with another object's: one bad object costs only itself.
var SkippedObjects = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "udnkit_dataplane_skipped_objects_total",
	Help: "Objects (nodes, pods, networks) the dataplane left out of the OVN rows it programs, by kind and reason; each skip also logs and raises a Warning Event on the object.",
}, []string{"kind", "reason"})

func init() { metrics.Registry.MustRegister(SkippedObjects) }

// skip reports that obj is left out: a log line, the metric and, when rec
// is set, a Warning Event on obj.
func Skip(ctx context.Context, rec recorder.EventRecorder, obj client.Object, kind, reason string, err error) {
	SkippedObjects.WithLabelValues(kind, reason).Inc()
	log.FromContext(ctx).Error(err, "object left out of the OVN rows", "kind", kind, "name", client.ObjectKeyFromObject(obj), "reason", reason)
	if rec != nil {
		rec.Eventf(obj, nil, corev1.EventTypeWarning, reason, "ProgramOVN", "%v", err)
	}
}
