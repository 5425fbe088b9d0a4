package zone

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/udnkit/udnkit/ovnk"
)

// ReasonInvalidGatewayConfig: the node's k8s.ovn.org/l3-gateway-config is
// malformed or disables the gateway; the node keeps its place in the
// networks but gets no external side nor management port (Layer2) or no
// gateway (Layer3).
const ReasonInvalidGatewayConfig = "InvalidGatewayConfig"

// NodeGateway is the node's gateway config (the Layer2 and Layer3
// controllers' one reading of it), or nil: while it has none (its
// ovnkube-node has not set its gateway up; logged) and when it is
// malformed or disabled (reported: a log line, the metric and a Warning
// Event on the node).
func NodeGateway(ctx context.Context, rec recorder.EventRecorder, node *corev1.Node) *ovnk.L3GatewayConfig {
	cfg, ok, err := ovnk.DecodeL3GatewayConfig(node)
	if err == nil && ok && cfg.Mode == ovnk.GatewayModeDisabled {
		err = fmt.Errorf("node %s annotation %s: mode \"\" disables its gateway", node.Name, ovnk.AnnotationL3GatewayConfig)
	}
	switch {
	case err != nil:
		Skip(ctx, rec, node, "Node", ReasonInvalidGatewayConfig, err)
		return nil
	case !ok:
		log.FromContext(ctx).V(1).Info("node has no gateway config yet: no gateway external side until its ovnkube-node publishes it",
			"node", node.Name, "annotation", ovnk.AnnotationL3GatewayConfig)
		return nil
	}
	return &cfg
}
