package reconcilers_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
)

var benchRun atomic.Int32

// BenchmarkCUDNSelecting1000Namespaces times a CUDN that selects 1000
// namespaces until all 1000 NADs exist. In the same iterations, with the
// timer stopped, it times the baseline: creating 1000 NADs one after another
// with a plain client into the same namespaces. x-raw is the ratio.
func BenchmarkCUDNSelecting1000Namespaces(b *testing.B) {
	const n = 1000
	var raw time.Duration
	for b.Loop() {
		b.StopTimer()
		run := benchRun.Add(1)
		sel := map[string]string{"bench": fmt.Sprint("run-", run)}
		namespaces := make([]string, n)
		for i := range n {
			namespaces[i] = fmt.Sprintf("bench-%d-%d", run, i)
			if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaces[i], Labels: sel}}); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		for _, ns := range namespaces {
			nad := &nadv1.NetworkAttachmentDefinition{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "raw"},
				Spec:       nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"raw"}`},
			}
			if err := k8s.Create(ctx, nad); err != nil {
				b.Fatal(err)
			}
		}
		raw += time.Since(start)

		cudn := makeCUDN(fmt.Sprint("bench-", run), sel, udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer2,
			Layer2: layer2(udnv1.NetworkRoleSecondary, "10.123.0.0/16")})
		b.StartTimer()
		if err := k8s.Create(ctx, cudn); err != nil {
			b.Fatal(err)
		}
		for {
			var list nadv1.NetworkAttachmentDefinitionList
			if err := k8s.List(ctx, &list, client.HasLabels{udnv1.LabelUserDefinedNetwork}); err != nil {
				b.Fatal(err)
			}
			count := 0
			for _, nad := range list.Items {
				if ref := metav1.GetControllerOf(&nad); ref != nil && ref.UID == cudn.UID {
					count++
				}
			}
			if count == n {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		b.StopTimer()
		if err := k8s.Delete(ctx, cudn); err != nil {
			b.Fatal(err)
		}
		for _, ns := range namespaces {
			_ = k8s.Delete(ctx, &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "raw"}})
			_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
		b.StartTimer()
	}
	rawPerOp := float64(raw.Nanoseconds()) / float64(b.N)
	b.ReportMetric(rawPerOp/1e9, "raw-s/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rawPerOp, "x-raw")
}
