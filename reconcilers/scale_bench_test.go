package reconcilers_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers"
	"github.com/udnkit/udnkit/reconcilers/internal/rtest"
)

const scaleBenchNodes = 50

// BenchmarkNetworksScale is make scale's network mix in miniature, for a
// CPU profile of the reconcilers alone (the apiserver and etcd are other
// processes): n networks round-robin over UDN/CUDN × Layer2/Layer3 ×
// Primary/Secondary, each in its own namespace, over 50 nodes, timed from
// the first create to every NAD with a network ID and every node with a host
// subnet of every Layer3 network. Doubling n should cost about 2×.
func BenchmarkNetworksScale(b *testing.B) {
	rtest.Require(b)
	cfg := reconcilers.DefaultConfig()
	cfg.SingleWriter = true // as under leader election
	if err := startManagerB(cfg); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stopManager(); _ = startManager(reconcilers.DefaultConfig()) })
	for i := range scaleBenchNodes {
		node := testobj.MakeNode(fmt.Sprintf("bench-node-%03d", i)).Obj()
		if err := k8s.Create(ctx, node); client.IgnoreAlreadyExists(err) != nil {
			b.Fatal(err)
		}
	}
	for _, n := range []int{64, 128, 256} {
		b.Run(fmt.Sprint(n, "-networks"), func(b *testing.B) {
			for b.Loop() {
				run := benchRun.Add(1)
				var objs []client.Object
				for i := range n {
					objs = append(objs, benchNetwork(run, i)...)
				}
				var wg sync.WaitGroup
				sem := make(chan struct{}, 32)
				for _, o := range objs {
					if _, ok := o.(*corev1.Namespace); ok {
						if err := k8s.Create(ctx, o); err != nil {
							b.Fatal(err)
						}
						continue
					}
					sem <- struct{}{}
					wg.Go(func() {
						defer func() { <-sem }()
						if err := k8s.Create(ctx, o); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
				for !benchConverged(b, run, n) {
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
}

// startManagerB restarts the suite's manager with cfg.
func startManagerB(cfg reconcilers.Config) error {
	stopManager()
	return startManager(cfg)
}

func benchNetwork(run int32, i int) []client.Object {
	cluster, layer3, primary := i&4 != 0, i&1 != 0, i&2 == 0
	nsw := testobj.MakeNamespace(fmt.Sprintf("scale-%d-%05d", run, i))
	role := udnv1.NetworkRoleSecondary
	if primary {
		role = udnv1.NetworkRolePrimary
		nsw.Primary()
	}
	ns := nsw.Obj()
	spec := testobj.Layer2(role, "10.100.0.0/16")
	if layer3 {
		spec = testobj.Layer3(role, "172.16.0.0/12")
	}
	name := fmt.Sprintf("net-%d-%05d", run, i)
	if cluster {
		return []client.Object{ns, testobj.MakeCUDN(name).SelectLabels(map[string]string{corev1.LabelMetadataName: ns.Name}).Spec(spec).Obj()}
	}
	return []client.Object{ns, testobj.MakeUDN(ns.Name, name).Spec(spec).Obj()}
}

// benchConverged: every network of run has its NAD with a network ID, and
// every bench node a host subnet of each Layer3 network.
func benchConverged(b *testing.B, run int32, n int) bool {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := k8s.List(ctx, &nads, client.HasLabels{ovnk.LabelUserDefinedNetwork}); err != nil {
		b.Fatal(err)
	}
	withIDs := 0
	for _, nad := range nads.Items {
		var idx int
		if _, err := fmt.Sscanf(nad.Name, fmt.Sprintf("net-%d-%%05d", run), &idx); err != nil {
			continue
		}
		if ids, err := ovnk.DecodeNetworkIDs(nad.Annotations); err == nil && ids.HasID {
			withIDs++
		}
	}
	if withIDs < n {
		return false
	}
	var nodes corev1.NodeList
	if err := k8s.List(ctx, &nodes); err != nil {
		b.Fatal(err)
	}
	for _, node := range nodes.Items {
		if len(node.Name) < 11 || node.Name[:11] != "bench-node-" {
			continue
		}
		m, _ := ovnk.DecodeNodeSubnets(&node)
		for i := 1; i < n; i += 2 {
			name := ovnk.UDNNetworkName(fmt.Sprintf("scale-%d-%05d", run, i), fmt.Sprintf("net-%d-%05d", run, i))
			if i&4 != 0 {
				name = ovnk.CUDNNetworkName(fmt.Sprintf("net-%d-%05d", run, i))
			}
			if _, ok := m[name]; !ok {
				return false
			}
		}
	}
	return true
}
