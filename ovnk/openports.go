package ovnk

import (
	"fmt"
	"slices"

	"sigs.k8s.io/yaml"
)

// AnnotationOpenDefaultPorts is a Primary-UDN pod's list of ports its
// default-network interface accepts despite the UDN isolation, e.g.
// [{"protocol":"tcp","port":80},{"protocol":"icmp"}] (upstream's
// util.UDNOpenPortsAnnotationName).
const AnnotationOpenDefaultPorts = "k8s.ovn.org/open-default-ports"

// OpenPort is one entry of AnnotationOpenDefaultPorts (util.OpenPort):
// Protocol is tcp, udp, sctp or icmp; Port is required but for icmp,
// which takes none.
type OpenPort struct {
	Protocol string `json:"protocol"`
	Port     *int   `json:"port,omitempty"`
}

// openPortProtocols are the protocols an OpenPort takes.
var openPortProtocols = []string{"tcp", "udp", "sctp", "icmp"}

// DecodeOpenPorts reads a pod's AnnotationOpenDefaultPorts as upstream's
// UnmarshalUDNOpenPortsAnnotation does: absent, nothing; the value is
// YAML (JSON being YAML); any entry with a protocol not in
// openPortProtocols, icmp with a port, another protocol without one, or a
// port outside 0-65535 makes the whole list an error (upstream then opens
// none of the pod's ports). The entries keep the annotation's order.
func DecodeOpenPorts(annotations map[string]string) ([]OpenPort, error) {
	v, ok := annotations[AnnotationOpenDefaultPorts]
	if !ok {
		return nil, nil
	}
	var ports []OpenPort
	if err := yaml.Unmarshal([]byte(v), &ports); err != nil {
		return nil, fmt.Errorf("annotation %s: failed to unmarshal %q: %w", AnnotationOpenDefaultPorts, v, err)
	}
	for i, p := range ports {
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("annotation %s: entry %d: %w", AnnotationOpenDefaultPorts, i, err)
		}
	}
	return ports, nil
}

// Validate is UnmarshalUDNOpenPortsAnnotation's check of one entry, with
// its messages.
func (p OpenPort) Validate() error {
	if !slices.Contains(openPortProtocols, p.Protocol) {
		return fmt.Errorf("invalid protocol %s", p.Protocol)
	}
	if p.Protocol == "icmp" {
		if p.Port != nil {
			return fmt.Errorf("invalid port %d for icmp protocol, should be empty", *p.Port)
		}
	} else if p.Port == nil {
		return fmt.Errorf("port is required for %s protocol", p.Protocol)
	}
	if p.Port != nil && (*p.Port > 65535 || *p.Port < 0) {
		return fmt.Errorf("invalid port %d", *p.Port)
	}
	return nil
}
