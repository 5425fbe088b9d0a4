package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/udnkit/udnkit/apis/scheme"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
)

// A poll decodes an object again only when its resourceVersion changed:
// decoding every node's host subnets on each poll made the driver's CPU
// grow quadratically with the run.
func TestDecodedOnlyWhenChanged(t *testing.T) {
	m := map[string]versioned[int]{}
	calls := 0
	decode := func() int { calls++; return calls }
	for _, step := range []struct {
		rv        string
		want      int
		wantCalls int
	}{{"1", 1, 1}, {"1", 1, 1}, {"2", 2, 2}, {"2", 2, 2}} {
		if got := decoded(m, "node-a", step.rv, decode); got != step.want || calls != step.wantCalls {
			t.Errorf("rv %s: got %d after %d decodes, want %d after %d", step.rv, got, calls, step.want, step.wantCalls)
		}
	}
}

func TestConvergenceCounts(t *testing.T) {
	s := newSize("t", 2, 2, 2) // network 0: Primary Layer2 UDN, network 1: Primary Layer3 UDN
	nad := func(i int, name string, withID bool) *nadv1.NetworkAttachmentDefinition {
		n := testobj.MakeNAD(namespaceName(i), "net").Managed().Annotations(map[string]string{ovnk.AnnotationNetworkName: name}).Obj()
		if withID {
			ovnk.NetworkIDs{ID: i + 1, HasID: true}.Encode(n.Annotations)
		}
		return n
	}
	node := func(i int, subnets map[string][]netip.Prefix) *corev1.Node {
		n := testobj.MakeNode(nodeName(i))
		if subnets != nil {
			n.Annotation(ovnk.AnnotationNodeSubnets, ovnk.EncodeNodeSubnets(subnets))
		}
		return n.Obj()
	}
	l3 := map[string][]netip.Prefix{"l3": {netip.MustParsePrefix("172.16.1.0/24")}}
	pod := scalePod(0, s)
	pod.Annotations = map[string]string{ovnk.AnnotationPodNetworks: `{"scale-00000/net":{"ip_addresses":["10.100.0.4/16"],"mac_address":"0a:58:0a:64:00:04","role":"primary"}}`}
	objs := []client.Object{nad(0, "l2", true), nad(1, "l3", false), node(0, l3), node(1, nil), pod, scalePod(1, s)}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	conv := newConvergence(s)
	want := convergenceCounts{nads: 2, withIDs: 1, l3Names: 1, subnets: 1, addressed: 1}
	for poll := range 2 {
		got, err := conv.count(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("poll %d: %+v, want %+v", poll, got, want)
		}
	}
	// What changes is decoded again.
	var cur corev1.Node
	if err := c.Get(context.Background(), client.ObjectKey{Name: nodeName(1)}, &cur); err != nil {
		t.Fatal(err)
	}
	cur.Annotations = node(1, l3).Annotations
	if err := c.Update(context.Background(), &cur); err != nil {
		t.Fatal(err)
	}
	want.subnets = 2
	if got, err := conv.count(context.Background(), c); err != nil || got != want {
		t.Errorf("after node-0001 got its host subnet: %+v, %v, want %+v", got, err, want)
	}
}

// The report has the live dataplane's rows only when a run measured it, and
// its ratios from that run's own figures.
func TestReportLiveDataplaneRows(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report.md")
	d := driverFlags{nodes: 500, networks: 4095, pods: 20000, workers: 32, out: out}
	caughtUp := &ovnResult{allRows: 10 * time.Second, rows: map[string]int{"Logical_Switch_Port": 4000}, cpu: 8, serverCPU: 2}
	runs := []result{{size: newSize("1/8", 500, 511, 2500), ovn: caughtUp}, {size: newSize("1/4", 500, 1023, 5000), ovn: caughtUp}}
	read := func() string {
		t.Helper()
		if err := writeReport(d, runs); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(); strings.Contains(got, "live dataplane") || !strings.Contains(got, "| dataplane CPU per ovsdb-server CPU (machine speed cancels) | 4.00 | 4.00 | 1.00× |") {
		t.Errorf("without a live run:\n%s", got)
	}
	runs[0].ovnLive = &ovnResult{allRows: 20 * time.Second, rows: map[string]int{"Logical_Switch_Port": 4000}, cpu: 12, serverCPU: 4}
	runs[1].ovnLive = &ovnResult{allRows: 44 * time.Second, rows: map[string]int{"Logical_Switch_Port": 8000}, cpu: 30, serverCPU: 6}
	got := read()
	for _, want := range []string{
		"| live dataplane (from before the first create): all OVN rows | 20.0 s | 44.0 s | 2.20× |",
		"| live dataplane: CPU per ovsdb-server CPU | 3.00 | 5.00 | 1.67× |",
		"| live dataplane: CPU per 1000 Northbound rows | 3.000 s | 3.750 s | 1.25× |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("with a live run, no line %q in:\n%s", want, got)
		}
	}
}

// A restarted dataplane has converged only with both databases connected,
// every NAD queued by its Layer2 controller and no work left.
func TestDataplaneConverged(t *testing.T) {
	metric := func(name string, labels map[string]string, v float64) sample {
		return sample{name: name, labels: labels, value: v}
	}
	base := func(nb, sb, adds, active float64) samples {
		return samples{
			metric("udnkit_ovn_connected", map[string]string{"db": "nb"}, nb),
			metric("udnkit_ovn_connected", map[string]string{"db": "sb"}, sb),
			metric("workqueue_adds_total", map[string]string{"name": "dataplane-layer2"}, adds),
			metric("workqueue_adds_total", map[string]string{"name": "dataplane-layer3"}, 100),
			metric("controller_runtime_active_workers", map[string]string{"controller": "dataplane-layer2"}, active),
		}
	}
	for name, tc := range map[string]struct {
		m    samples
		want bool
	}{
		"converged":                {base(1, 1, 10, 0), true},
		"Southbound not connected": {base(1, 0, 10, 0), false},
		"not every NAD queued":     {base(1, 1, 9, 0), false},
		"a reconcile running":      {base(1, 1, 10, 1), false},
		"no work queues yet":       {base(1, 1, 10, 0)[:2], false},
	} {
		if got := dataplaneConverged(tc.m, 10); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

// scrape reads what a Prometheus registry exposes: label values with commas
// and escaped quotes, counters and gauges; histograms are left out.
func TestScrapeReadsTheTextExposition(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `# HELP apiserver_request_total Requests.
# TYPE apiserver_request_total counter
apiserver_request_total{resource="pods",verb="LIST",component="a,b \"c\""} 7
# TYPE udnkit_ovn_connected gauge
udnkit_ovn_connected{db="nb"} 1
# TYPE lat histogram
lat_bucket{le="+Inf"} 3
lat_sum 1.5
lat_count 3
`)
	}))
	defer srv.Close()
	m, err := scrape(context.Background(), srv.Client(), srv.URL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 {
		t.Fatalf("scrape: %d samples %v, want the counter and the gauge", len(m), m)
	}
	for _, s := range m {
		switch s.name {
		case "apiserver_request_total":
			if s.value != 7 || s.labels["component"] != `a,b "c"` || s.labels["verb"] != "LIST" {
				t.Errorf("counter: %+v", s)
			}
		case "udnkit_ovn_connected":
			if s.value != 1 || s.labels["db"] != "nb" {
				t.Errorf("gauge: %+v", s)
			}
		default:
			t.Errorf("unexpected sample %+v", s)
		}
	}
	if _, err := scrape(context.Background(), srv.Client(), srv.URL+"/missing"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("scrape of a missing page: %v, want the 404", err)
	}
}
