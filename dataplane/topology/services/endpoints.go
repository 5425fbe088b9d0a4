package services

import (
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/udnkit/udnkit/ovnk"
)

// entry is one target port's endpoints of a Service port, by family
// (util.LBEndpointEntry): addresses in canonical text, sorted as text.
type entry struct {
	port   int32
	v4, v6 []string
}

// mirroredSlices are the slices of the Service on the network, as
// util.GetServiceEndpointSlices selects them: in the Service's namespace,
// labelled k8s.ovn.org/service-name with its name and annotated
// k8s.ovn.org/endpointslice-network with the network. A default slice (no
// such label) or one mirrored for another network never counts.
func mirroredSlices(network string, svc *corev1.Service, all []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for _, s := range all {
		if s == nil || s.Namespace != svc.Namespace || s.Labels[ovnk.LabelUserDefinedServiceName] != svc.Name ||
			s.Annotations[ovnk.AnnotationEndpointSliceNetwork] != network {
			continue
		}
		out = append(out, s)
	}
	return out
}

// portKey is util.GetServicePortKey: "<protocol>/<port name>".
func portKey(proto corev1.Protocol, name string) string { return string(proto) + "/" + name }

// endpointsByPort are the eligible endpoints of each of the Service's
// ports (util.GetEndpointsForService): slices' endpoints grouped by port
// name, protocol and target port, FQDN slices and ports without protocol
// or number dropped, each target port's endpoints those
// buildLBEndpointEntry keeps, target ports in ascending order; a target
// port with no address or out of range has no entry. With withLocal, local
// also holds each of nodes' own endpoints (buildNodeLBEndpointEntry: the
// eligible ones among those on the node).
func endpointsByPort(all []*discoveryv1.EndpointSlice, svc *corev1.Service, nodes []string, withLocal bool) (cluster map[string][]entry,
	local map[string]map[string][]entry) {
	byPort := map[string]map[int32][]discoveryv1.Endpoint{}
	for _, s := range all {
		if s.AddressType == discoveryv1.AddressTypeFQDN {
			continue
		}
		for _, p := range s.Ports {
			if p.Protocol == nil || p.Port == nil {
				continue
			}
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			k := portKey(*p.Protocol, name)
			if byPort[k] == nil {
				byPort[k] = map[int32][]discoveryv1.Endpoint{}
			}
			byPort[k][*p.Port] = append(byPort[k][*p.Port], s.Endpoints...)
		}
	}
	cluster, local = map[string][]entry{}, map[string]map[string][]entry{}
	for _, sp := range svc.Spec.Ports {
		k := portKey(sp.Protocol, sp.Name)
		for _, port := range slices.Sorted(maps.Keys(byPort[k])) {
			eps := byPort[k][port]
			if e, ok := makeEntry(port, eps, svc); ok {
				cluster[k] = append(cluster[k], e)
			}
			if !withLocal {
				continue
			}
			for _, node := range nodes {
				onNode := slices.DeleteFunc(slices.Clone(eps), func(ep discoveryv1.Endpoint) bool {
					return ep.NodeName == nil || *ep.NodeName != node
				})
				if e, ok := makeEntry(port, onNode, svc); ok {
					if local[k] == nil {
						local[k] = map[string][]entry{}
					}
					local[k][node] = append(local[k][node], e)
				}
			}
		}
	}
	return cluster, local
}

// makeEntry is one target port's entry of endpoints (buildLBEndpointEntry):
// none without an address or with a port out of range.
func makeEntry(port int32, eps []discoveryv1.Endpoint, svc *corev1.Service) (entry, bool) {
	e := entry{port: port}
	for _, ip := range eligibleAddresses(eps, svc.Spec.PublishNotReadyAddresses) {
		if strings.Contains(ip, ":") {
			e.v6 = append(e.v6, ip)
		} else {
			e.v4 = append(e.v4, ip)
		}
	}
	return e, len(e.v4)+len(e.v6) > 0 && port > 0 && port <= 65535
}

// eligibleAddresses are the addresses of the eligible endpoints
// (util.getSelectedEligibleEndpoints): the ready ones (a nil ready
// condition is ready; every one when the Service publishes not-ready
// addresses), or, when none is, the serving and terminating ones;
// deduplicated and sorted as text (sets.List).
func eligibleAddresses(eps []discoveryv1.Endpoint, publishNotReady bool) []string {
	var ready, terminating []discoveryv1.Endpoint
	for _, ep := range eps {
		c := ep.Conditions
		isReady := c.Ready == nil || *c.Ready
		serving := isReady
		if c.Serving != nil {
			serving = *c.Serving
		}
		switch {
		case publishNotReady || isReady:
			ready = append(ready, ep)
		case serving && c.Terminating != nil && *c.Terminating:
			terminating = append(terminating, ep)
		}
	}
	if len(ready) == 0 {
		ready = terminating
	}
	set := map[string]bool{}
	for _, ep := range ready {
		for _, a := range ep.Addresses {
			if ip, err := netip.ParseAddr(a); err == nil {
				set[ip.Unmap().String()] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}
