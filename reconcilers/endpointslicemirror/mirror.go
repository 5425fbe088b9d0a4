package endpointslicemirror

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// isDefault says whether slice is one Kubernetes' EndpointSlice controller
// writes for a Service: the source of a mirror.
func isDefault(slice *discoveryv1.EndpointSlice) bool {
	_, ok := slice.Labels[discoveryv1.LabelServiceName]
	return ok && slice.Labels[discoveryv1.LabelManagedBy] == ovnk.EndpointSliceDefaultControllerName
}

// isMirror says whether slice is a mirror this controller writes.
func isMirror(slice *discoveryv1.EndpointSlice) bool {
	return slice.Labels[discoveryv1.LabelManagedBy] == ovnk.EndpointSliceMirrorControllerName
}

// generateName is the mirror's metadata.generateName: "<network>-<source's
// generateName, else its name>" when that is a valid prefix, else the
// source's own. A user-defined network's name holds "_", so in practice it
// is the source's ("web-" for Service web).
func generateName(source *discoveryv1.EndpointSlice, network string) string {
	orig := source.GenerateName
	if orig == "" {
		orig = source.Name
	}
	if name := network + "-" + orig; len(validation.NameIsDNSSubdomain(name, true)) == 0 {
		return name
	}
	return orig
}

// podLookup returns a pod of the source's namespace from the cache, nil
// when absent.
type podLookup func(namespace, name string) (*corev1.Pod, error)

// desired is the mirror of source on network (NAD key nadKey for the pods
// of source's namespace) over current (nil: a new mirror). Labels and
// annotations other than the mirror's own are kept from current; owner
// references are the source's on a new mirror and current's after. An
// endpoint whose pod is gone or has no address of the slice's family on the
// network yet is left out: the pod's annotation brings it back.
func desired(current, source *discoveryv1.EndpointSlice, network, nadKey string, pod podLookup) (*discoveryv1.EndpointSlice, error) {
	var m *discoveryv1.EndpointSlice
	if current != nil {
		m = current.DeepCopy()
	} else {
		m = &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{
			Namespace:       source.Namespace,
			GenerateName:    generateName(source, network),
			OwnerReferences: source.DeepCopy().OwnerReferences,
		}}
	}
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Labels[discoveryv1.LabelManagedBy] = ovnk.EndpointSliceMirrorControllerName
	m.Labels[ovnk.LabelUserDefinedServiceName] = source.Labels[discoveryv1.LabelServiceName]
	m.Annotations[ovnk.AnnotationSourceEndpointSlice] = source.Name
	m.Annotations[ovnk.LabelSourceEndpointSliceVersion] = source.ResourceVersion
	m.Annotations[ovnk.AnnotationEndpointSliceNetwork] = network
	m.AddressType = source.AddressType
	m.Ports = source.DeepCopy().Ports
	m.Endpoints = []discoveryv1.Endpoint{}
	ipv6 := source.AddressType == discoveryv1.AddressTypeIPv6
	for _, ep := range source.Endpoints {
		if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" {
			continue
		}
		ns := ep.TargetRef.Namespace
		if ns == "" {
			ns = source.Namespace
		}
		p, err := pod(ns, ep.TargetRef.Name)
		if err != nil {
			return nil, err
		}
		if p == nil {
			continue
		}
		addr := podAddress(p, ep, nadKey, ipv6)
		if !addr.IsValid() {
			continue
		}
		out := *ep.DeepCopy()
		out.Addresses = []string{addr.String()}
		m.Endpoints = append(m.Endpoints, out)
	}
	return m, nil
}

// podAddress is the pod's address of the family on the network: for a
// host-network pod (it has no address of its own on the network) its
// default-network address, which the source endpoint lists (Kubernetes
// writes the pod's status.podIPs address of the slice's family there, the
// one upstream's getPodIP reads; the manager's cache does not keep pod
// status); else the first of its k8s.ovn.org/pod-networks entry for
// nadKey. The zero Addr: none yet, or an entry that does not parse (its
// writer's to fix; the endpoint comes with the fixed annotation, and the
// Service's other endpoints stay served).
func podAddress(p *corev1.Pod, ep discoveryv1.Endpoint, nadKey string, ipv6 bool) netip.Addr {
	if p.Spec.HostNetwork {
		for _, ip := range ep.Addresses {
			if a, err := netip.ParseAddr(ip); err == nil && a.Is6() == ipv6 {
				return a
			}
		}
		return netip.Addr{}
	}
	pn, err := podannotation.DecodePodNetwork(p.Annotations, nadKey)
	if err != nil || pn == nil {
		return netip.Addr{}
	}
	a, err := pn.Parse()
	if err != nil {
		return netip.Addr{}
	}
	for _, ip := range a.IPs {
		if ip.Addr().Is6() == ipv6 {
			return ip.Addr()
		}
	}
	return netip.Addr{}
}
