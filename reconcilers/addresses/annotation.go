package addresses

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
)

// podNetwork returns the pod's entry for key, if it has one.
func podNetwork(pod *corev1.Pod, key string) (*podannotation.PodNetwork, error) {
	return podannotation.DecodePodNetwork(pod.Annotations, key)
}

// allocationOf reads a pod network entry back as an allocation and its
// tunnel ID, refusing what the allocator could never have written.
func allocationOf(pn *podannotation.PodNetwork) (ipalloc.Allocation, int, error) {
	a, err := pn.Parse()
	if err != nil {
		// Malformed or not unicast: udnkit never wrote it.
		return ipalloc.Allocation{}, 0, &ipalloc.Error{Reason: ipalloc.ReasonInvalidRequest, Message: err.Error()}
	}
	return ipalloc.Allocation{IPs: a.IPs, MAC: a.MAC}, a.TunnelID, nil
}

// encapIP reads the test mapping for the network, by NAD key or network
// name; a malformed mapping sets none.
func encapIP(pod *corev1.Pod, keys ...string) string {
	m, _ := ovnk.DecodeEncapIPMapping(pod.Annotations)
	return m.For(keys...)
}
