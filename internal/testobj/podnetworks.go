package testobj

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// PodNetworks sets the pod's k8s.ovn.org/pod-networks to value and its
// k8s.v1.cni.cncf.io/networks to the selection a real pod with those
// entries carries (PodNetworkAnnotations): readers wire a Secondary
// network's entry only if the selection names it.
func (w *PodWrapper) PodNetworks(value string) *PodWrapper {
	return w.Annotations(PodNetworkAnnotations(value))
}

// PodNetworkAnnotations are a pod's k8s.ovn.org/pod-networks value and the
// k8s.v1.cni.cncf.io/networks selection from which the address allocator
// would have written it, built from the one value so the two cannot
// disagree: the selection names the NAD of each entry that is not a
// Primary network's or the default network's (role "primary" or
// "infrastructure-locked"), as often as its highest index requires
// ("ns/a" and "ns/a/1" name ns/a twice; podannotation.SelectionKeys gives
// them back). A value without such entries, or one that does not decode (a
// test of a malformed annotation), comes alone.
func PodNetworkAnnotations(value string) map[string]string {
	out := map[string]string{ovnk.AnnotationPodNetworks: value}
	var entries map[string]struct {
		Role string `json:"role"`
	}
	if json.Unmarshal([]byte(value), &entries) != nil {
		return out
	}
	count := map[string]int{}
	for key, e := range entries {
		nad, ok := podannotation.NADOfKey(key)
		if !ok || e.Role == podannotation.RolePrimary || e.Role == podannotation.RoleInfrastructureLocked {
			continue
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(key, nad+"/")) // NADOfKey checked the index; the plain key is 0
		count[nad] = max(count[nad], n+1)
	}
	var elems []string
	for _, nad := range slices.Sorted(maps.Keys(count)) {
		for range count[nad] {
			elems = append(elems, nad)
		}
	}
	if len(elems) > 0 {
		out[ovnk.AnnotationNetworks] = strings.Join(elems, ",")
	}
	return out
}
