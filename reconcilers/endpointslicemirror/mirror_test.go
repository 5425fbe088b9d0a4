package endpointslicemirror_test

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/ovnk"
)

// defaultSlice is the EndpointSlice Kubernetes' EndpointSlice controller
// writes for svc (pkg/controller/endpointslice's newEndpointSlice and
// podToEndpoint): generateName "<service>-", the Service as controller
// owner, the service-name and managed-by labels, one endpoint per pod with
// its default-network address of the family.
func defaultSlice(svc *corev1.Service, family discoveryv1.AddressType, backends ...*backend) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: svc.Namespace, GenerateName: svc.Name + "-",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))},
			Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name,
				discoveryv1.LabelManagedBy: ovnk.EndpointSliceDefaultControllerName},
		},
		AddressType: family,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   endpoints(family, backends...),
	}
}

func endpoints(family discoveryv1.AddressType, backends ...*backend) []discoveryv1.Endpoint {
	out := []discoveryv1.Endpoint{}
	for _, b := range backends {
		ip := b.defaultIPs[0]
		if family == discoveryv1.AddressTypeIPv6 {
			ip = b.defaultIPs[len(b.defaultIPs)-1]
		}
		out = append(out, discoveryv1.Endpoint{
			Addresses:  []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To(b.node),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: b.pod.Namespace, Name: b.pod.Name, UID: b.pod.UID},
		})
	}
	return out
}

// setEndpoints updates the default slice's endpoints, as Kubernetes does
// when pods come and go.
func setEndpoints(t *testing.T, s *discoveryv1.EndpointSlice, backends ...*backend) {
	t.Helper()
	must(t, admin.Get(ctx, client.ObjectKeyFromObject(s), s))
	s.Endpoints = endpoints(s.AddressType, backends...)
	must(t, admin.Update(ctx, s))
}

// view is what `kubectl get endpointslice -o yaml` shows of a mirror,
// without the fields the apiserver fills in.
type view struct {
	GenerateName    string
	Labels          map[string]string
	Annotations     map[string]string
	OwnerReferences []metav1.OwnerReference
	AddressType     discoveryv1.AddressType
	Ports           []discoveryv1.EndpointPort
	Endpoints       []discoveryv1.Endpoint
}

func viewOf(s *discoveryv1.EndpointSlice) view {
	return view{s.GenerateName, s.Labels, s.Annotations, s.OwnerReferences, s.AddressType, s.Ports, s.Endpoints}
}

// expected is the mirror upstream's controller writes for src on network
// (pkg/clustermanager/endpointslicemirror/endpointslice_mirror_controller.go,
// mirrorEndpointSlice): the labels endpointslice.kubernetes.io/managed-by=
// endpointslice-mirror-controller.k8s.ovn.org and k8s.ovn.org/service-name
// (and no kubernetes.io/service-name); the annotations
// k8s.ovn.org/source-endpointslice (the source's name),
// k8s.ovn.org/source-endpointslice-version (its resourceVersion: upstream's
// types.LabelSourceEndpointSliceVersion is written as an annotation) and
// k8s.ovn.org/endpointslice-network; the source's owner references (the
// Service); its addressType and ports; each pod endpoint as it is but with
// the pod's address on the network (addrs, by pod name). generateName is
// getGenerateName's: "<network>-<source generateName>" is no valid name
// when the network's name holds "_" (every UDN's and CUDN's), so it is the
// source's own (its generateName, else its name).
func expected(src *discoveryv1.EndpointSlice, network string, addrs map[string]string) view {
	gen := src.GenerateName
	if gen == "" {
		gen = src.Name
	}
	v := view{
		GenerateName: gen,
		Labels: map[string]string{discoveryv1.LabelManagedBy: ovnk.EndpointSliceMirrorControllerName,
			ovnk.LabelUserDefinedServiceName: src.Labels[discoveryv1.LabelServiceName]},
		Annotations: map[string]string{ovnk.AnnotationSourceEndpointSlice: src.Name,
			ovnk.LabelSourceEndpointSliceVersion: src.ResourceVersion, ovnk.AnnotationEndpointSliceNetwork: network},
		OwnerReferences: src.OwnerReferences,
		AddressType:     src.AddressType,
		Ports:           src.Ports,
		Endpoints:       []discoveryv1.Endpoint{},
	}
	for _, ep := range src.Endpoints {
		if a, ok := addrs[ep.TargetRef.Name]; ok {
			e := ep.DeepCopy()
			e.Addresses = []string{a}
			v.Endpoints = append(v.Endpoints, *e)
		}
	}
	return v
}

// mirrorsOf lists the mirrors of the slice src (by name) in ns.
func mirrorsOf(ns, src string) ([]discoveryv1.EndpointSlice, error) {
	var list discoveryv1.EndpointSliceList
	if err := admin.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelManagedBy: ovnk.EndpointSliceMirrorControllerName}); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list.Items, func(s discoveryv1.EndpointSlice) bool {
		return s.Annotations[ovnk.AnnotationSourceEndpointSlice] != src
	}), nil
}

// waitMirror waits until src has exactly one mirror, the one upstream
// writes for its current version, and returns it.
func waitMirror(t *testing.T, src *discoveryv1.EndpointSlice, network string, addrs map[string]string) *discoveryv1.EndpointSlice {
	t.Helper()
	var got discoveryv1.EndpointSlice
	testenv.Eventually(t, "the mirror of "+src.Name, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(src), src); err != nil {
			return err
		}
		mirrors, err := mirrorsOf(src.Namespace, src.Name)
		if err != nil {
			return err
		}
		if len(mirrors) != 1 {
			return fmt.Errorf("%d mirrors, want 1", len(mirrors))
		}
		want := expected(src, network, addrs)
		if have := viewOf(&mirrors[0]); !equality.Semantic.DeepEqual(have, want) {
			return fmt.Errorf("mirror %s:\n have %+v\n want %+v", mirrors[0].Name, have, want)
		}
		got = mirrors[0]
		return nil
	})
	return &got
}

// waitNoMirror waits until src has no mirror.
func waitNoMirror(t *testing.T, ns, src string) {
	t.Helper()
	testenv.Eventually(t, "no mirror of "+src, func() error {
		mirrors, err := mirrorsOf(ns, src)
		if err == nil && len(mirrors) != 0 {
			err = fmt.Errorf("mirrors %v remain", names(mirrors))
		}
		return err
	})
}

func names(list []discoveryv1.EndpointSlice) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.Name
	}
	return out
}
