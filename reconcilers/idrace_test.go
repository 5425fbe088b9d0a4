package reconcilers_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/internal/rtest"
)

// publishedClash is two NADs of different networks advertising one network
// ID or tunnel key at the same moment.
type publishedClash struct{ what, a, b string }

// published is what every UDN NAD advertises, as the watch has shown it so
// far.
type published map[string]ovnk.NetworkIDs

// clashes lists the values nad's IDs share with another network's NAD.
func (p published) clashes(nad string) []publishedClash {
	var out []publishedClash
	mine := p[nad]
	for other, ids := range p {
		if other == nad {
			continue
		}
		if mine.HasID && ids.HasID && mine.ID == ids.ID {
			out = append(out, publishedClash{fmt.Sprintf("network ID %d", ids.ID), other, nad})
		}
		for _, k := range ids.TunnelKeys {
			if slices.Contains(mine.TunnelKeys, k) {
				out = append(out, publishedClash{fmt.Sprintf("tunnel key %d", k), other, nad})
			}
		}
	}
	return out
}

// watchPublished follows every version of every UDN NAD, in the order the
// apiserver wrote them, until stop is closed, and returns each moment two
// networks' NADs advertised one network ID or tunnel key: what the
// dataplane of each node would act on.
func watchPublished(t *testing.T, stop <-chan struct{}) <-chan []publishedClash {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	w, err := wc.Watch(wctx, &nadv1.NetworkAttachmentDefinitionList{}, client.HasLabels{ovnk.LabelUserDefinedNetwork})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []publishedClash, 1)
	go func() {
		defer cancel()
		var seen []publishedClash
		state := published{}
		for {
			select {
			case <-stop:
				w.Stop()
				done <- seen
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					done <- append(seen, publishedClash{"the watch of NADs ended early", "", ""})
					return
				}
				nad, isNAD := ev.Object.(*nadv1.NetworkAttachmentDefinition)
				if !isNAD {
					continue
				}
				key := nad.Namespace + "/" + nad.Name
				dec, err := ovnk.DecodeNetworkIDs(nad.Annotations)
				if ev.Type == watch.Deleted || err != nil {
					delete(state, key)
					continue
				}
				state[key] = dec
				seen = append(seen, state.clashes(key)...)
			}
		}
	}()
	return done
}

// nadsAgree checks that every network's NAD advertises the IDs its CR
// records.
func nadsAgree(g Gomega, udns []*udnv1.UserDefinedNetwork) {
	for _, u := range udns {
		var cur udnv1.UserDefinedNetwork
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(u), &cur)).To(Succeed())
		nad := getNAD(g, u.Namespace, u.Name)
		g.Expect(nad.Annotations[ovnk.AnnotationNetworkID]).To(Equal(cur.Annotations[ovnk.AnnotationNetworkID]), "%s/%s", u.Namespace, u.Name)
		g.Expect(nad.Annotations[ovnk.AnnotationTunnelKeys]).To(Equal(cur.Annotations[ovnk.AnnotationTunnelKeys]), "%s/%s", u.Namespace, u.Name)
	}
}

// TestFourManagersNetworkIDRounds aims at the window of the network ID
// race: four managers without leader election (the suite's and three more,
// each with its own cache and allocators), and round after round of Primary
// Layer2 networks created at once, so the managers keep proposing the same
// next network ID and tunnel key. At no moment may two networks' NADs
// advertise one network ID or tunnel key, and once settled every NAD
// advertises what its network's CR records, no value on two networks.
func TestFourManagersNetworkIDRounds(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	const managers, rounds, perRound = 4, 8, 24
	for range managers - 1 {
		startSecondManager(t)
	}

	var all []*udnv1.UserDefinedNetwork
	t.Cleanup(func() {
		for _, u := range all {
			_ = k8s.Delete(ctx, u)
		}
	})
	stop := make(chan struct{})
	clashes := watchPublished(t, stop)
	for r := range rounds {
		var udns []*udnv1.UserDefinedNetwork
		for i := range perRound {
			ns := newNamespace(t, fmt.Sprintf("idrace-%d", r), nil)
			udns = append(udns, testobj.MakeUDN(ns, "net").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, udnv1.CIDR(fmt.Sprintf("10.%d.0.0/16", 100+i)))).Obj())
		}
		var wg sync.WaitGroup
		for _, u := range udns {
			wg.Go(func() { g.Expect(k8s.Create(ctx, u)).To(Succeed()) })
		}
		wg.Wait()
		all = append(all, udns...)
		for _, u := range udns {
			expectCondition(t, u, metav1.ConditionTrue, udnv1.ReasonNADCreated)
		}
		g.Eventually(func(g Gomega) {
			nadsAgree(g, all)
			g.Expect(countDuplicates(g).total()).To(BeZero())
		}).WithTimeout(3 * timeout).WithPolling(interval).Should(Succeed())
		expectUniqueAllocations(t)
		t.Logf("round %d settled at %s", r, time.Now().Format(time.StampMilli))
	}
	close(stop)
	seen := <-clashes
	if len(seen) > 0 {
		t.Errorf("%d times two networks' NADs advertised one value (or the watch failed), first %+v", len(seen), seen[0])
	}
}
