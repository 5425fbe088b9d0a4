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
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/internal/rtest"
)

const benchNamespaces = 1000

var benchRun atomic.Int32

// benchNamespaceSet creates benchNamespaces labelled namespaces (timer
// stopped) and returns their names and label.
func benchNamespaceSet(b *testing.B) ([]string, map[string]string) {
	b.Helper()
	run := benchRun.Add(1)
	sel := map[string]string{"bench": fmt.Sprint("run-", run)}
	names := make([]string, benchNamespaces)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%d-%d", run, i)
		if err := k8s.Create(ctx, testobj.MakeNamespace(names[i]).Labels(sel).Obj()); err != nil {
			b.Fatal(err)
		}
	}
	return names, sel
}

// BenchmarkNADs1000Namespaces times a CUDN selecting 1000 namespaces until
// all 1000 NADs exist (create to last NAD observed). The baseline creates
// 1000 NADs, one after another, with a plain client into 1000 namespaces.
func BenchmarkNADs1000Namespaces(b *testing.B) {
	rtest.Require(b)
	b.Run("cudn-reconciler", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			names, sel := benchNamespaceSet(b)
			cudn := testobj.MakeCUDN(fmt.Sprint("bench-", benchRun.Load())).SelectLabels(sel).Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.123.0.0/16")).Obj()
			b.StartTimer()
			if err := k8s.Create(ctx, cudn); err != nil {
				b.Fatal(err)
			}
			for countOwned(b, cudn) < benchNamespaces {
				time.Sleep(20 * time.Millisecond)
			}
			b.StopTimer()
			if err := k8s.Delete(ctx, cudn); err != nil {
				b.Fatal(err)
			}
			for countOwned(b, cudn) > 0 {
				time.Sleep(50 * time.Millisecond)
			}
			deleteNamespaces(names)
			b.StartTimer()
		}
	})
	b.Run("baseline-plain-client-creates", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			names, _ := benchNamespaceSet(b)
			b.StartTimer()
			for _, ns := range names {
				nad := testobj.MakeNAD(ns, "raw").Config(`{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"raw"}`).Obj()
				if err := k8s.Create(ctx, nad); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			for _, ns := range names {
				_ = k8s.Delete(ctx, &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "raw"}})
			}
			deleteNamespaces(names)
			b.StartTimer()
		}
	})
}

func countOwned(b *testing.B, cudn *udnv1.ClusterUserDefinedNetwork) int {
	var list nadv1.NetworkAttachmentDefinitionList
	if err := k8s.List(ctx, &list, client.HasLabels{ovnk.LabelUserDefinedNetwork}); err != nil {
		b.Fatal(err)
	}
	count := 0
	for _, nad := range list.Items {
		if ref := metav1.GetControllerOf(&nad); ref != nil && ref.UID == cudn.UID {
			count++
		}
	}
	return count
}

// deleteNamespaces deletes namespaces; with no namespace controller they
// stay Terminating, which every CUDN skips.
func deleteNamespaces(names []string) {
	for _, ns := range names {
		_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
}
