package webhooks_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/webhooks"
)

// benchRun numbers benchmark runs, so each (-count, growing b.N) gets its
// own namespace.
var benchRun atomic.Int64

// reportPercentiles adds p50 and p99 of d (in µs) to the benchmark's output.
func reportPercentiles(b *testing.B, prefix string, d []time.Duration) time.Duration {
	slices.Sort(d)
	p50 := d[len(d)/2]
	p99 := d[min(len(d)-1, len(d)*99/100)]
	b.ReportMetric(float64(p50.Nanoseconds())/1e3, prefix+"p50-µs")
	b.ReportMetric(float64(p99.Nanoseconds())/1e3, prefix+"p99-µs")
	return p50
}

// BenchmarkUDNHandler measures the UDN validating webhook in process, from
// the decoded AdmissionRequest to the response: a Secondary network (static
// checks only) and a Primary one (plus a namespace read and two indexed
// lists of the manager's informer cache, as in production).
func BenchmarkUDNHandler(b *testing.B) {
	env := startEnv(b)
	ns := fmt.Sprintf("bench-handler-%d", benchRun.Add(1))
	namespace(b, synced(env.Client), ns, true, nil)
	handler := admission.WithValidator(env.Scheme, &webhooks.UserDefinedNetworkValidator{
		Client: shared.mgr.GetCache(), APIReader: shared.mgr.GetAPIReader(), Config: testConfig()})
	for _, tc := range []struct {
		name string
		spec udnv1.NetworkSpec
	}{
		{"secondary", layer2(udnv1.NetworkRoleSecondary, "10.100.0.0/16", "fd00:100::/64")},
		{"primary", layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16", "fd00:100::/64")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			raw, err := json.Marshal(udn(ns, "n", tc.spec))
			if err != nil {
				b.Fatal(err)
			}
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "bench", Operation: admissionv1.Create, Namespace: ns, Name: "n",
				Kind:   metav1.GroupVersionKind{Group: "k8s.ovn.org", Version: "v1", Kind: "UserDefinedNetwork"},
				Object: runtime.RawExtension{Raw: raw}}}
			// Warm up: the first request discovers the API (REST mapping).
			if resp := handler.Handle(ctx, req); !resp.Allowed {
				b.Fatalf("refused: %+v", resp.Result)
			}
			durations := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				resp := handler.Handle(ctx, req)
				durations = append(durations, time.Since(start))
				if !resp.Allowed {
					b.Fatalf("refused: %+v", resp.Result)
				}
			}
			b.StopTimer()
			reportPercentiles(b, "", durations)
		})
	}
}

// BenchmarkCreateUDN measures creating a Layer2 UDN through the apiserver
// with udnkit's UDN webhook called, and without it, on the same control plane
// in the same run: the webhook's entry excludes a second namespace by
// namespaceSelector, and the creates alternate between the two namespaces,
// so the machine's load drifts alike for both. It reports both and their
// ratio (webhook-overhead-ratio, p50 over p50). Each UDN is deleted (untimed,
// and until the webhooks' cache has dropped it) so its namespace can take
// the next.
func BenchmarkCreateUDN(b *testing.B) {
	for _, role := range []udnv1.NetworkRole{udnv1.NetworkRoleSecondary, udnv1.NetworkRolePrimary} {
		b.Run(string(role), func(b *testing.B) { benchmarkCreateUDN(b, role) })
	}
}

func benchmarkCreateUDN(b *testing.B, role udnv1.NetworkRole) {
	env := startEnv(b)
	c := env.Client
	run := benchRun.Add(1)
	withNS := fmt.Sprintf("bench-e2e-%s-%d", strings.ToLower(string(role)), run)
	withoutNS := withNS + "-nowebhook"
	namespace(b, synced(c), withNS, true, nil)
	namespace(b, synced(c), withoutNS, true, nil)
	restore := excludeFromUDNWebhook(b, c, withNS, withoutNS)
	defer restore()
	create := func(ns string) time.Duration {
		u := udn(ns, "n", layer2(role, "10.100.0.0/16"))
		start := time.Now()
		err := c.Create(ctx, u)
		d := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if err := synced(c).Delete(ctx, u); err != nil {
			b.Fatal(err)
		}
		return d
	}
	// Warm up: the apiserver's first call to the webhook sets up its client.
	create(withNS)
	create(withoutNS)
	with := make([]time.Duration, 0, b.N)
	without := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		// Alternate which goes first, so neither always follows a delete
		// of the same namespace.
		if i%2 == 0 {
			with = append(with, create(withNS))
			without = append(without, create(withoutNS))
		} else {
			without = append(without, create(withoutNS))
			with = append(with, create(withNS))
		}
	}
	b.StopTimer()
	p50With := reportPercentiles(b, "webhook-", with)
	p50Without := reportPercentiles(b, "nowebhook-", without)
	b.ReportMetric(float64(p50With)/float64(p50Without), "webhook-overhead-ratio")
}

// excludeFromUDNWebhook adds a namespaceSelector to the UDN entry of
// udnkit's ValidatingWebhookConfiguration that leaves out namespace without,
// and waits until the apiserver calls the webhook for UDNs in with and not
// for UDNs in without (a UDN only the webhook refuses gets through); the
// returned function restores the entry.
func excludeFromUDNWebhook(b *testing.B, c client.Client, with, without string) func() {
	b.Helper()
	const name = "validating-webhook-configuration"
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &vwc); err != nil {
		b.Fatal(err)
	}
	saved := slices.Clone(vwc.Webhooks)
	i := slices.IndexFunc(vwc.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
		return w.Name == "userdefinednetworks.udnkit.k8s.ovn.org"
	})
	if i < 0 {
		b.Fatal("the UDN webhook is not registered")
	}
	vwc.Webhooks[i].NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{without}}}}
	if err := c.Update(ctx, &vwc); err != nil {
		b.Fatal(err)
	}
	waitForUDNWebhook(b, c, without, false)
	waitForUDNWebhook(b, c, with, true)
	return func() {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &vwc); err != nil {
			b.Fatal(err)
		}
		vwc.Webhooks = saved
		if err := c.Update(ctx, &vwc); err != nil {
			b.Fatal(err)
		}
		waitForUDNWebhook(b, c, without, true)
	}
}

// waitForUDNWebhook polls with a Secondary UDN inside the cluster subnet,
// which only the webhook refuses, until the webhook is (or is not) called.
func waitForUDNWebhook(b *testing.B, c client.Client, ns string, called bool) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		probe := udn(ns, "probe", layer2(udnv1.NetworkRoleSecondary, "10.244.0.0/24"))
		err := c.Create(ctx, probe)
		if err == nil {
			if err := c.Delete(ctx, probe); err != nil {
				b.Fatal(err)
			}
		}
		if (err != nil) == called {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the UDN webhook is still %s after 10 s (last error: %v)", map[bool]string{true: "not called", false: "called"}[called], err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
