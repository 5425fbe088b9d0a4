package cel_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/cel"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
)

// BenchmarkValidate compares judging a UDN offline (udnctl validate) with a
// dry-run create of the same object on a real apiserver over loopback, for
// the simplest object and for a Layer3 network at its list maximum (where the
// O(n²) overlap rule dominates).
func BenchmarkValidate(b *testing.B) {
	testenv.Real(b, "kube-apiserver")
	v, err := cel.NewDefault()
	if err != nil {
		b.Fatal(err)
	}
	env, err := envtest.Start(envtest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	bctx := context.Background()
	if err := env.Client.Create(bctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}); err != nil {
		b.Fatal(err)
	}
	objects := map[string]*unstructured.Unstructured{
		"layer2": benchUDN(map[string]any{"topology": "Layer2", "layer2": map[string]any{"role": "Primary", "subnets": []any{"10.0.0.0/24"}}}),
		fmt.Sprintf("layer3-%d-subnets", maxL3Subnets): benchUDN(map[string]any{"topology": "Layer3",
			"layer3": map[string]any{"role": "Primary", "subnets": subnetsL3(maxL3Subnets)}}),
	}
	for name, obj := range objects {
		b.Run(name, func(b *testing.B) {
			b.Run("offline", func(b *testing.B) {
				for b.Loop() {
					res, err := v.Validate(bctx, obj, nil)
					if err != nil || !res.OK() {
						b.Fatalf("%v %v", err, res.Violations())
					}
				}
			})
			b.Run("baseline-apiserver-dry-run", func(b *testing.B) {
				// The first request of a kind compiles the CRD's CEL programs
				// (about 2 s); keep that out of the figure.
				if err := env.Client.Create(bctx, obj.DeepCopy(), client.DryRunAll); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if err := env.Client.Create(bctx, obj.DeepCopy(), client.DryRunAll); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

func benchUDN(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
		"metadata": map[string]any{"name": "bench", "namespace": "bench"},
		"spec":     spec,
	}}
}
