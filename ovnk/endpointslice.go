package ovnk

// Names on the EndpointSlices OVN-Kubernetes' mirror controller writes for
// Services in namespaces with a Primary user-defined network (upstream's
// pkg/types/const.go). udnkit's mirror controller writes them, its services
// controller reads them and its admission refuses tenants forging them.
const (
	// EndpointSliceMirrorControllerName is the value of
	// endpointslice.kubernetes.io/managed-by on a mirrored EndpointSlice.
	EndpointSliceMirrorControllerName = "endpointslice-mirror-controller.k8s.ovn.org"
	// EndpointSliceDefaultControllerName is the value of
	// endpointslice.kubernetes.io/managed-by on a slice Kubernetes'
	// EndpointSlice controller writes (the source of a mirror).
	EndpointSliceDefaultControllerName = "endpointslice-controller.k8s.io"
	// AnnotationSourceEndpointSlice names, on a mirrored slice, the default
	// slice it mirrors.
	AnnotationSourceEndpointSlice = "k8s.ovn.org/source-endpointslice"
	// LabelSourceEndpointSliceVersion holds, on a mirrored slice, the
	// resourceVersion of the default slice it was last written from. It is
	// an annotation, whatever its name says: upstream's mirror controller
	// writes it into the annotations.
	LabelSourceEndpointSliceVersion = "k8s.ovn.org/source-endpointslice-version"
	// AnnotationEndpointSliceNetwork names, on a mirrored slice, the Primary
	// user-defined network whose addresses it carries.
	AnnotationEndpointSliceNetwork = "k8s.ovn.org/endpointslice-network"
	// LabelUserDefinedServiceName names, on a mirrored slice, its Service
	// (the default slice's kubernetes.io/service-name, which a mirror must
	// not carry or Kubernetes' own proxies would use it).
	LabelUserDefinedServiceName = "k8s.ovn.org/service-name"
)
