package webhooks_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
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
	callsBefore, secondsBefore := apiserverWebhookCalls(b)
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
	calls, seconds := apiserverWebhookCalls(b)
	if calls > callsBefore {
		// How long the apiserver itself spent per call to the UDN webhook.
		b.ReportMetric((seconds-secondsBefore)/(calls-callsBefore)*1e6, "apiserver-webhook-call-mean-µs")
	}
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

// apiserverWebhookCalls reads the apiserver's count and total seconds of
// admitted CREATE calls to the UDN webhook
// (apiserver_admission_webhook_admission_duration_seconds).
func apiserverWebhookCalls(b *testing.B) (count, sum float64) {
	b.Helper()
	cs, err := kubernetes.NewForConfig(startEnv(b).Config)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		b.Fatal(err)
	}
	const labels = `{name="userdefinednetworks.udnkit.k8s.ovn.org",operation="CREATE",rejected="false",type="validating"} `
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		for suffix, into := range map[string]*float64{"_count": &count, "_sum": &sum} {
			if v, ok := strings.CutPrefix(sc.Text(), "apiserver_admission_webhook_admission_duration_seconds"+suffix+labels); ok {
				*into, _ = strconv.ParseFloat(v, 64)
			}
		}
	}
	return count, sum
}

// BenchmarkUDNWebhookOverTLS posts a Secondary UDN's AdmissionReview straight
// to the webhook server over TLS and HTTP/2 with one reused connection, as
// the apiserver does: the server's share of a webhook call (compare
// BenchmarkCreateUDN's apiserver-webhook-call-mean-µs).
func BenchmarkUDNWebhookOverTLS(b *testing.B) {
	env := startEnv(b)
	raw, err := json.Marshal(udn("over-tls", "n", layer2(udnv1.NetworkRoleSecondary, "10.100.0.0/16")))
	if err != nil {
		b.Fatal(err)
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "bench", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
			Kind:     metav1.GroupVersionKind{Group: "k8s.ovn.org", Version: "v1", Kind: "UserDefinedNetwork"},
			Resource: metav1.GroupVersionResource{Group: "k8s.ovn.org", Version: "v1", Resource: "userdefinednetworks"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // local test server
	url := fmt.Sprintf("https://%s:%d/validate-k8s-ovn-org-v1-userdefinednetwork", env.Webhook.Host, env.Webhook.Port)
	post := func() {
		resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var out admissionv1.AdmissionReview
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
			b.Fatal(err)
		}
		if resp.ProtoMajor != 2 || out.Response == nil || !out.Response.Allowed {
			b.Fatalf("%s: %+v", resp.Proto, out.Response)
		}
	}
	post() // connect
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		post()
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, "", durations)
}
