package ovnk

import (
	"encoding/json"
	"fmt"
)

// AnnotationEncapIPMapping is the multi-VTEP design's test annotation
// (OKEP-5535), {"<network>": "<encap-ip>"}, keyed by NAD key or network
// name: the encap_ip udnkit writes into the pod's k8s.ovn.org/pod-networks
// entry for that network.
const AnnotationEncapIPMapping = "test.k8s.ovn.org/pod-network-encap-ip-mapping"

// EncapIPMapping is the value of AnnotationEncapIPMapping.
type EncapIPMapping map[string]string

// DecodeEncapIPMapping reads the annotation from a pod's annotations; no
// annotation is an empty mapping. The error names the annotation.
func DecodeEncapIPMapping(annotations map[string]string) (EncapIPMapping, error) {
	out := EncapIPMapping{}
	v, ok := annotations[AnnotationEncapIPMapping]
	if !ok {
		return out, nil
	}
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("annotation %s is not a JSON object of networks to encap IPs: %w", AnnotationEncapIPMapping, err)
	}
	return out, nil
}

// Encode renders the annotation value (keys sorted).
func (m EncapIPMapping) Encode() string {
	if m == nil {
		return "{}"
	}
	b, _ := json.Marshal(map[string]string(m))
	return string(b)
}

// For returns the encap IP of the first key the mapping holds, "" when it
// holds none.
func (m EncapIPMapping) For(keys ...string) string {
	for _, k := range keys {
		if ip, ok := m[k]; ok {
			return ip
		}
	}
	return ""
}
