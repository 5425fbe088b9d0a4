package webhooks_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/benchgoal"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/webhooks/network"
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

// primaryCUDNReview is the JSON of a Primary CUDN that selects the
// namespaces labelled bench=<run>.
func primaryCUDNReview(b *testing.B, run string) []byte {
	b.Helper()
	raw, err := json.Marshal(testobj.MakeCUDN("bench-" + run).SelectLabels(map[string]string{"bench": run}).Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "10.100.0.0/16")).Obj())
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// BenchmarkCUDNHandler measures the CUDN validating webhook in process: a
// new Primary CUDN selecting 10 labelled namespaces (a namespace list and
// two indexed lists of the manager's informer cache).
func BenchmarkCUDNHandler(b *testing.B) {
	env := startEnv(b)
	run := strconv.FormatInt(benchRun.Add(1), 10)
	for i := range 10 {
		namespace(b, synced(env.Client), fmt.Sprintf("bench-handler-%s-%d", run, i), true, map[string]string{"bench": run})
	}
	benchmarkHandler(b, admission.WithValidator(env.Scheme, &network.ClusterUserDefinedNetworkValidator{
		Client: shared.mgr.GetCache(), APIReader: shared.mgr.GetAPIReader()}),
		admissionv1.AdmissionRequest{UID: "bench", Operation: admissionv1.Create, Name: "bench-" + run,
			Kind:   metav1.GroupVersionKind{Group: "k8s.ovn.org", Version: "v1", Kind: "ClusterUserDefinedNetwork"},
			Object: runtime.RawExtension{Raw: primaryCUDNReview(b, run)}})
}

// BenchmarkUDNHandler measures the UDN validating webhook in process, as
// the webhook server runs it for the apiserver's call: the AdmissionReview's
// body read and decoded, the validator (the counts, the name-prefix index;
// a Primary UDN also the namespace's primary networks) and the response
// encoded, for a new Secondary and a new Primary UDN named like most
// (with a '-', so the name index is read) in a labelled namespace.
func BenchmarkUDNHandler(b *testing.B) {
	env := startEnv(b)
	run := strconv.FormatInt(benchRun.Add(1), 10)
	ns := "bench-udn-handler-" + run
	namespace(b, synced(env.Client), ns, true, nil)
	counts, err := network.NewNetworkCounts(ctx, shared.mgr.GetCache())
	if err != nil {
		b.Fatal(err)
	}
	hook := admission.WithValidator(env.Scheme, &network.UserDefinedNetworkValidator{
		Client: shared.mgr.GetCache(), APIReader: shared.mgr.GetAPIReader(), Limits: testLimits, Counts: counts})
	for _, role := range []udnv1.NetworkRole{udnv1.NetworkRoleSecondary, udnv1.NetworkRolePrimary} {
		b.Run(string(role), func(b *testing.B) {
			raw, err := json.Marshal(testobj.MakeUDN(ns, "tenant-net").Spec(testobj.Layer2(role, "10.100.0.0/16")).Obj())
			if err != nil {
				b.Fatal(err)
			}
			body, err := json.Marshal(admissionv1.AdmissionReview{
				TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
				Request: &admissionv1.AdmissionRequest{UID: "bench", Operation: admissionv1.Create, Name: "tenant-net", Namespace: ns,
					Object:   runtime.RawExtension{Raw: raw},
					Kind:     metav1.GroupVersionKind{Group: "k8s.ovn.org", Version: "v1", Kind: "UserDefinedNetwork"},
					Resource: metav1.GroupVersionResource{Group: "k8s.ovn.org", Version: "v1", Resource: "userdefinednetworks"}},
			})
			if err != nil {
				b.Fatal(err)
			}
			// serve times ServeHTTP alone and checks that it admitted.
			serve := func() time.Duration {
				req := httptest.NewRequest(http.MethodPost, udnWebhookPath, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				start := time.Now()
				hook.ServeHTTP(rec, req)
				d := time.Since(start)
				var out admissionv1.AdmissionReview
				if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil || !out.Response.Allowed {
					b.Fatalf("%v: %s", err, rec.Body.Bytes())
				}
				return d
			}
			serve() // warm up
			durations := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				durations = append(durations, serve())
			}
			b.StopTimer()
			reportPercentiles(b, "", durations)
		})
	}
}

// benchmarkHandler times handler on req, which it must admit, and reports
// p50 and p99.
func benchmarkHandler(b *testing.B, handler admission.Handler, req admissionv1.AdmissionRequest) {
	// Warm up: the first request discovers the API (REST mapping).
	if resp := handler.Handle(ctx, admission.Request{AdmissionRequest: req}); !resp.Allowed {
		b.Fatalf("refused: %+v", resp.Result)
	}
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		resp := handler.Handle(ctx, admission.Request{AdmissionRequest: req})
		durations = append(durations, time.Since(start))
		if !resp.Allowed {
			b.Fatalf("refused: %+v", resp.Result)
		}
	}
	b.StopTimer()
	reportPercentiles(b, "", durations)
}

// BenchmarkCreateUDN measures creating a Layer2 UDN through the apiserver in
// a namespace covered by all of udnkit's admission (its
// ValidatingAdmissionPolicies and the UDN webhook) and in one excluded from
// all of it (every udnkit binding's matchResources.namespaceSelector and
// every udnkit webhook's namespaceSelector leave it out), on the same
// control plane in the same run. The creates alternate between the two
// namespaces, so the machine's load drifts alike for both. It reports both
// p50s and their ratio (admission-overhead-ratio), for a Secondary and a
// Primary UDN, for both with 500 (Secondary) CUDNs present (a policy with
// CUDN params would be evaluated once per CUDN), and for both in a
// namespace that already holds 500 Secondary UDNs (admission reads counters
// and index entries, not the namespace's UDNs: the ratio stays where it is
// in an empty namespace). Each UDN is deleted (untimed) so its namespace
// can take the next. It reports the ratio beside its goal (benchgoal) and
// where admission's time goes (admissionStages).
func BenchmarkCreateUDN(b *testing.B) {
	for _, role := range []udnv1.NetworkRole{udnv1.NetworkRoleSecondary, udnv1.NetworkRolePrimary} {
		b.Run(string(role), func(b *testing.B) { benchmarkCreateUDN(b, role, 0) })
	}
	for _, role := range []udnv1.NetworkRole{udnv1.NetworkRoleSecondary, udnv1.NetworkRolePrimary} {
		b.Run(string(role)+"-500UDNsInNamespace", func(b *testing.B) { benchmarkCreateUDN(b, role, 500) })
	}
	const many = 500
	var cudns []client.Object
	defer func() {
		for _, cu := range cudns {
			if err := startEnv(b).Client.Delete(ctx, cu); err != nil {
				b.Error(err)
			}
		}
	}()
	for _, role := range []udnv1.NetworkRole{udnv1.NetworkRoleSecondary, udnv1.NetworkRolePrimary} {
		b.Run(fmt.Sprintf("%s-%dCUDNs", role, many), func(b *testing.B) {
			for i := len(cudns); i < many; i++ { // once, untimed: b.Run calls this for each b.N
				cu := testobj.MakeCUDN(fmt.Sprintf("bench-many-%d", i)).SelectLabels(map[string]string{"none": "none"}).Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.100.0.0/16")).Obj()
				if err := startEnv(b).Client.Create(ctx, cu); err != nil {
					b.Fatal(err)
				}
				cudns = append(cudns, cu)
			}
			benchmarkCreateUDN(b, role, 0)
		})
	}
}

// minCreatePairs is how many creates per namespace benchmarkCreateUDN's
// ratio is made of, whatever b.N.
const minCreatePairs = 600

// benchmarkCreateUDN: prefill UDNs wait in the covered namespace first.
func benchmarkCreateUDN(b *testing.B, role udnv1.NetworkRole, prefill int) {
	env := startEnv(b)
	c := env.Client
	run := benchRun.Add(1)
	withNS := fmt.Sprintf("bench-e2e-%s-%d", strings.ToLower(string(role)), run)
	withoutNS := withNS + "-excluded"
	namespace(b, synced(c), withNS, true, nil)
	namespace(b, synced(c), withoutNS, true, nil)
	for i := range prefill {
		if err := c.Create(ctx, testobj.MakeUDN(withNS, fmt.Sprintf("prefill-%d", i)).Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.101.0.0/16")).Obj()); err != nil {
			b.Fatal(err)
		}
	}
	if prefill > 0 {
		defer func() {
			if err := c.DeleteAllOf(ctx, &udnv1.UserDefinedNetwork{}, client.InNamespace(withNS)); err != nil {
				b.Error(err)
			}
		}()
	}
	restore := excludeFromAdmission(b, c, withNS, withoutNS)
	defer restore()
	create := func(ns string) time.Duration {
		u := testobj.MakeUDN(ns, "n").Spec(testobj.Layer2(role, "10.100.0.0/16")).Obj()
		start := time.Now()
		err := c.Create(ctx, u)
		d := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Delete(ctx, u); err != nil {
			b.Fatal(err)
		}
		return d
	}
	// Warm up both paths.
	create(withNS)
	create(withoutNS)
	before := admissionTimes(b)
	// The ratio compares two p50s about 10% apart: with ~130 pairs (what
	// one second gives) it moved by ±0.03 between runs. So at least
	// minCreatePairs pairs make the ratio; the time per op counts the
	// first b.N only.
	pairs := max(b.N, minCreatePairs)
	with := make([]time.Duration, 0, pairs)
	without := make([]time.Duration, 0, pairs)
	b.ResetTimer()
	for i := range pairs {
		if i == b.N {
			b.StopTimer()
		}
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
	admissionTimes(b).reportSince(b, before)
	p50With := reportPercentiles(b, "admission-", with)
	p50Without := reportPercentiles(b, "excluded-", without)
	benchgoal.Report(b, "admission-overhead-ratio", float64(p50With)/float64(p50Without), admissionOverheadGoal)
	b.ReportMetric(float64(p50With-p50Without)/1e3, "admission-overhead-p50-µs")
}

// admissionOverheadGoal is the most a UDN create through udnkit's
// admission may cost over the same create without it (p50 over p50):
// "≤ 1.10× at 0 and at 500 UDNs in the namespace, Primary and Secondary".
const admissionOverheadGoal = 1.10

// excludeFromAdmission leaves namespace without out of every udnkit
// ValidatingAdmissionPolicyBinding (matchResources.namespaceSelector) and
// every webhook of udnkit's configurations that matches UDNs
// (namespaceSelector), and waits until a UDN only the policies refuse is
// refused in with and admitted in without; the returned function restores
// them all and waits until without is covered again.
func excludeFromAdmission(b *testing.B, c client.Client, with, without string) func() {
	b.Helper()
	notIn := metav1.LabelSelectorRequirement{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{without}}
	exclude := func(sel *metav1.LabelSelector) *metav1.LabelSelector {
		out := &metav1.LabelSelector{}
		if sel != nil {
			out = sel.DeepCopy()
		}
		out.MatchExpressions = append(out.MatchExpressions, notIn)
		return out
	}
	var restores []func()
	var bindings admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	if err := c.List(ctx, &bindings); err != nil {
		b.Fatal(err)
	}
	for i := range bindings.Items {
		binding := &bindings.Items[i]
		if !strings.HasPrefix(binding.Name, "udnkit-") {
			continue
		}
		saved := binding.Spec.MatchResources.DeepCopy()
		if binding.Spec.MatchResources == nil {
			binding.Spec.MatchResources = &admissionregistrationv1.MatchResources{}
		}
		binding.Spec.MatchResources.NamespaceSelector = exclude(binding.Spec.MatchResources.NamespaceSelector)
		if err := c.Update(ctx, binding); err != nil {
			b.Fatal(err)
		}
		name := binding.Name
		restores = append(restores, func() {
			var cur admissionregistrationv1.ValidatingAdmissionPolicyBinding
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &cur); err != nil {
				b.Fatal(err)
			}
			cur.Spec.MatchResources = saved
			if err := c.Update(ctx, &cur); err != nil {
				b.Fatal(err)
			}
		})
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := c.Get(ctx, client.ObjectKey{Name: "validating-webhook-configuration"}, &vwc); err != nil {
		b.Fatal(err)
	}
	savedHooks := slices.Clone(vwc.Webhooks)
	for i, w := range vwc.Webhooks {
		if slices.ContainsFunc(w.Rules, func(r admissionregistrationv1.RuleWithOperations) bool {
			return slices.Contains(r.Resources, "userdefinednetworks")
		}) {
			vwc.Webhooks[i].NamespaceSelector = exclude(w.NamespaceSelector)
		}
	}
	if err := c.Update(ctx, &vwc); err != nil {
		b.Fatal(err)
	}
	restores = append(restores, func() {
		if err := c.Get(ctx, client.ObjectKey{Name: vwc.Name}, &vwc); err != nil {
			b.Fatal(err)
		}
		vwc.Webhooks = savedHooks
		if err := c.Update(ctx, &vwc); err != nil {
			b.Fatal(err)
		}
	})
	waitForAdmission(b, c, without, false)
	waitForAdmission(b, c, with, true)
	return func() {
		for _, r := range restores {
			r()
		}
		waitForAdmission(b, c, without, true)
	}
}

// waitForAdmission polls with a dry-run Secondary UDN inside the cluster
// subnet, which only udnkit-network-config refuses, until udnkit's
// admission covers namespace ns (or does not).
func waitForAdmission(b *testing.B, c client.Client, ns string, covered bool) {
	b.Helper()
	testenv.Eventually(b, "udnkit's admission of namespace "+ns, func() error {
		err := c.Create(ctx, testobj.MakeUDN(ns, "probe").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.244.0.0/24")).Obj(), client.DryRunAll)
		if (err != nil) != covered {
			return fmt.Errorf("namespace %s: admission covers it: %v, want %v (last error: %v)", ns, err != nil, covered, err)
		}
		return nil
	})
}

// timing is a latency histogram's count and sum (seconds).
type timing struct{ count, sum float64 }

// admissionStages are where an admitted UDN create spends its admission
// time, as the apiserver and the webhook server count it.
type admissionStages struct {
	// vap is the apiserver's ValidatingAdmissionPolicy plugin, all
	// policies together (it exposes no per-policy latency of admitted
	// requests).
	vap timing
	// webhookCall is the apiserver's call of the UDN webhook: the round
	// trip, encoding and decoding on both sides included.
	webhookCall timing
	// handler is the webhook server's own time on the request (decoding,
	// the validator, encoding), without the transport.
	handler timing
}

// udnWebhookName and udnWebhookPath name the UDN webhook (its
// configuration entry, its server path).
const (
	udnWebhookName = "userdefinednetworks.udnkit.k8s.ovn.org"
	udnWebhookPath = "/validate-k8s-ovn-org-v1-userdefinednetwork"
)

// admissionTimes reads the apiserver's admission metrics
// (apiserver_admission_controller_admission_duration_seconds of the
// ValidatingAdmissionPolicy plugin, apiserver_admission_webhook_admission_duration_seconds
// of the UDN webhook, admitted CREATEs only) and the webhook server's
// (controller_runtime_webhook_latency_seconds of the UDN webhook's path).
func admissionTimes(b *testing.B) admissionStages {
	b.Helper()
	cs, err := kubernetes.NewForConfig(startEnv(b).Config)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var st admissionStages
	if !histogram(raw, "apiserver_admission_controller_admission_duration_seconds",
		`{name="ValidatingAdmissionPolicy",operation="CREATE",rejected="false",type="validate"}`, &st.vap) {
		b.Error(errors.New("the apiserver exposes no ValidatingAdmissionPolicy plugin latency"))
	}
	if !histogram(raw, "apiserver_admission_webhook_admission_duration_seconds",
		`{name="`+udnWebhookName+`",operation="CREATE",rejected="false",type="validating"}`, &st.webhookCall) {
		b.Error(errors.New("the apiserver exposes no latency of the UDN webhook"))
	}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "controller_runtime_webhook_latency_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "webhook" && l.GetValue() == udnWebhookPath }) {
				st.handler = timing{count: float64(m.GetHistogram().GetSampleCount()), sum: m.GetHistogram().GetSampleSum()}
			}
		}
	}
	return st
}

// histogram reads the count and sum of one labelled series of a histogram
// from Prometheus text.
func histogram(raw []byte, name, labels string, into *timing) bool {
	found := false
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		for suffix, v := range map[string]*float64{"_count": &into.count, "_sum": &into.sum} {
			if s, ok := strings.CutPrefix(sc.Text(), name+suffix+labels+" "); ok {
				*v, _ = strconv.ParseFloat(s, 64)
				found = true
			}
		}
	}
	return found
}

// reportSince reports each stage's mean per call since before, in µs.
func (st admissionStages) reportSince(b *testing.B, before admissionStages) {
	for _, s := range []struct {
		now, then timing
		unit      string
	}{
		{st.vap, before.vap, "apiserver-vap-plugin-mean-µs"},
		{st.webhookCall, before.webhookCall, "apiserver-udn-webhook-mean-µs"},
		{st.handler, before.handler, "webhook-handler-mean-µs"},
	} {
		if n := s.now.count - s.then.count; n > 0 {
			b.ReportMetric((s.now.sum-s.then.sum)/n*1e6, s.unit)
		}
	}
}

// BenchmarkCUDNWebhookOverTLS posts a Primary CUDN's AdmissionReview straight
// to the webhook server over TLS and HTTP/1.1 (all the server offers,
// webhooks.ServeHTTP1) with one kept-alive connection, as the apiserver
// does: the server's share of a webhook call.
func BenchmarkCUDNWebhookOverTLS(b *testing.B) {
	env := startEnv(b)
	run := strconv.FormatInt(benchRun.Add(1), 10)
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "bench", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: primaryCUDNReview(b, run)},
			Kind:     metav1.GroupVersionKind{Group: "k8s.ovn.org", Version: "v1", Kind: "ClusterUserDefinedNetwork"},
			Resource: metav1.GroupVersionResource{Group: "k8s.ovn.org", Version: "v1", Resource: "clusteruserdefinednetworks"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, // offers h2: the check below holds the server to HTTP/1.1
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // local test server
	url := fmt.Sprintf("https://%s:%d/validate-k8s-ovn-org-v1-clusteruserdefinednetwork", env.Webhook.Host, env.Webhook.Port)
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
		if resp.ProtoMajor != 1 || out.Response == nil || !out.Response.Allowed {
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
