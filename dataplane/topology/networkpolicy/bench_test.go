package networkpolicy

import (
	"fmt"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// BenchmarkBuild500Policies builds a namespace's 500 policies, each
// admitting its own port from its own peer selector, over 500 pods.
func BenchmarkBuild500Policies(b *testing.B) {
	n := network()
	n.Pods = nil
	for i := range 500 {
		n.Pods = append(n.Pods, pod(tNS, fmt.Sprintf("p%d", i), fmt.Sprintf("port%d", i), map[string]string{"app": fmt.Sprintf("a%d", i%50)},
			fmt.Sprintf("10.100.%d.%d", i/250, i%250+2), fmt.Sprintf("fd00:100::%x", i+2)))
		n.Policies = append(n.Policies, makeNP(fmt.Sprintf("np%d", i)).selecting(map[string]string{"app": fmt.Sprintf("a%d", i%50)}).
			types(networkingv1.PolicyTypeIngress).ingress(networkingv1.NetworkPolicyIngressRule{
			Ports: []networkingv1.NetworkPolicyPort{tcp(intstr.FromInt32(int32(1000 + i)))},
			From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("a%d", (i+1)%50)}}}},
		}).obj())
	}
	b.ReportAllocs()
	for b.Loop() {
		d, err := Build(n)
		if err != nil || len(d.PortGroups) != 502 {
			b.Fatalf("%v, %d port groups", err, len(d.PortGroups))
		}
	}
}
