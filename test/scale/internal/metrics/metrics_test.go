package metrics

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Scrape reads what a Prometheus registry exposes: label values with commas
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
	m, err := Scrape(context.Background(), srv.Client(), srv.URL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 {
		t.Fatalf("scrape: %d samples %v, want the counter and the gauge", len(m), m)
	}
	for _, s := range m {
		switch s.Name {
		case "apiserver_request_total":
			if s.Value != 7 || s.Labels["component"] != `a,b "c"` || s.Labels["verb"] != "LIST" {
				t.Errorf("counter: %+v", s)
			}
		case "udnkit_ovn_connected":
			if s.Value != 1 || s.Labels["db"] != "nb" {
				t.Errorf("gauge: %+v", s)
			}
		default:
			t.Errorf("unexpected sample %+v", s)
		}
	}
	if _, err := Scrape(context.Background(), srv.Client(), srv.URL+"/missing"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("scrape of a missing page: %v, want the 404", err)
	}
}
