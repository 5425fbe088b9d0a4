package networkpolicy

import (
	"fmt"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// AnnotationPolicyFor names the networks (NADs: "name" in the policy's
// namespace or "namespace/name", comma-separated) a MultiNetworkPolicy
// applies to (upstream's PolicyForAnnotation).
const AnnotationPolicyFor = "k8s.v1.cni.cncf.io/policy-for"

// PolicyFor says whether a MultiNetworkPolicy of namespace with these
// annotations applies to a network whose NADs are nadKeys
// ("namespace/name"): upstream's shouldApplyMultiPolicy.
func PolicyFor(namespace string, annotations map[string]string, nadKeys map[string]bool) bool {
	v, ok := annotations[AnnotationPolicyFor]
	if !ok {
		return false
	}
	for _, name := range strings.Split(strings.ReplaceAll(v, " ", ""), ",") {
		ns := namespace
		if n, nad, found := strings.Cut(name, "/"); found {
			ns, name = n, nad
		}
		if nadKeys[ns+"/"+name] {
			return true
		}
	}
	return false
}

// ConvertMultiNetworkPolicy reads a k8s.cni.cncf.io MultiNetworkPolicy
// (unstructured: its spec has NetworkPolicy's shape) as the NetworkPolicy
// upstream's convertMultiNetPolicyToNetPolicy makes of it: name,
// namespace, annotations, pod selector, rules and policy types.
func ConvertMultiNetworkPolicy(u map[string]any) (networkingv1.NetworkPolicy, error) {
	var mnp struct {
		metav1.ObjectMeta `json:"metadata"`
		Spec              networkingv1.NetworkPolicySpec `json:"spec"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &mnp); err != nil {
		return networkingv1.NetworkPolicy{}, fmt.Errorf("MultiNetworkPolicy: %w", err)
	}
	return networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: mnp.Namespace, Name: mnp.Name, Annotations: mnp.Annotations},
		Spec:       mnp.Spec,
	}, nil
}
