package ovnk

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// AnnotationNetworkName is the OVN network name a NAD belongs to, as
// OVN-Kubernetes' cluster manager annotates its NADs (types.OvnNetworkNameAnnotation).
const AnnotationNetworkName = "k8s.ovn.org/network-name"

// NetworkIDs are a network's cluster-wide identifiers, as the annotations
// k8s.ovn.org/network-id (a decimal integer) and k8s.ovn.org/tunnel-keys (a
// JSON list of integers, util.FormatTunnelKeysAnnotation) carry them on its
// NADs and on the UDN/CUDN.
type NetworkIDs struct {
	ID         int
	HasID      bool
	TunnelKeys []int
}

// AnnotationNetworkIDsCommitted is udnkit's own mark on a UDN or CUDN: the
// network IDs its k8s.ovn.org/network-id and k8s.ovn.org/tunnel-keys record
// were checked against every other network and committed, so no writer may
// change them and any may publish them. Its value repeats what it commits
// ("<network-id>/<tunnel-keys>"), so IDs written afterwards are not
// committed by a mark left over from before.
const AnnotationNetworkIDsCommitted = "k8s.ovn.org/udnkit-network-ids-committed"

// CommitMark is the value of AnnotationNetworkIDsCommitted that commits ids.
func (ids NetworkIDs) CommitMark() string {
	keys, _ := json.Marshal(append([]int{}, ids.TunnelKeys...))
	return strconv.Itoa(ids.ID) + "/" + string(keys)
}

// NetworkIDsCommitted says annotations record a network ID and the commit
// mark of exactly what they record.
func NetworkIDsCommitted(annotations map[string]string) bool {
	ids, err := DecodeNetworkIDs(annotations)
	return err == nil && ids.HasID && annotations[AnnotationNetworkIDsCommitted] == ids.CommitMark()
}

// DecodeNetworkIDs reads the two annotations; the error names the annotation
// and the rule. Values outside the ID and key spaces are refused.
func DecodeNetworkIDs(annotations map[string]string) (NetworkIDs, error) {
	var ids NetworkIDs
	if v, ok := annotations[AnnotationNetworkID]; ok {
		id, err := strconv.Atoi(v)
		if err != nil {
			return ids, fmt.Errorf("annotation %s=%q is not an integer", AnnotationNetworkID, v)
		}
		if id < 0 || id > MaxNetworkID {
			return ids, fmt.Errorf("annotation %s=%d is outside [0, %d]", AnnotationNetworkID, id, MaxNetworkID)
		}
		ids.ID, ids.HasID = id, true
	}
	if v, ok := annotations[AnnotationTunnelKeys]; ok {
		if err := json.Unmarshal([]byte(v), &ids.TunnelKeys); err != nil {
			return ids, fmt.Errorf("annotation %s=%q is not a JSON list of integers", AnnotationTunnelKeys, v)
		}
		for _, k := range ids.TunnelKeys {
			if k < FirstInterconnectKey || k > LastInterconnectKey {
				return ids, fmt.Errorf("annotation %s: tunnel key %d is outside the interconnect range [%d, %d]", AnnotationTunnelKeys, k, FirstInterconnectKey, LastInterconnectKey)
			}
		}
	}
	return ids, nil
}

// Encode writes both annotations into annotations ("[]" for a network
// without centrally allocated keys, as upstream's nad_controller writes it)
// and reports whether anything changed. Changed IDs drop the commit mark
// (AnnotationNetworkIDsCommitted): they are not committed yet.
func (ids NetworkIDs) Encode(annotations map[string]string) bool {
	keys, _ := json.Marshal(append([]int{}, ids.TunnelKeys...)) // "[]" when none, as upstream writes it
	want := map[string]string{AnnotationNetworkID: strconv.Itoa(ids.ID), AnnotationTunnelKeys: string(keys)}
	changed := false
	for k, v := range want {
		if annotations[k] != v {
			annotations[k] = v
			changed = true
		}
	}
	if changed {
		delete(annotations, AnnotationNetworkIDsCommitted)
	}
	return changed
}
