// Package metrics reads what the scale suite measures from outside a
// process: Prometheus text expositions (the manager's and the
// kube-apiserver's /metrics) and a process's RSS and CPU from procfs.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"
	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitDrained waits until the manager's work queues are empty.
func WaitDrained(ctx context.Context, timeout time.Duration, metricsAddr string) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		return Drained(ctx, metricsAddr), nil
	})
	if err != nil {
		return fmt.Errorf("the manager's work queues did not drain in %s: %w", timeout, err)
	}
	return nil
}

// Drained says whether the manager runs no reconcile and has no work queued
// (false while its metrics cannot be read).
func Drained(ctx context.Context, metricsAddr string) bool {
	depth, err := QueueDepth(ctx, metricsAddr)
	return err == nil && depth == 0
}

// WaitManagerSynced waits until the manager child serves metrics and its
// controllers have started (their work queues exist).
func WaitManagerSynced(ctx context.Context, addr string) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var m Samples
		m, last = Scrape(ctx, LocalHTTP, "http://"+addr+"/metrics")
		return last == nil && m.Has("workqueue_adds_total"), nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("the manager child did not start its controllers within 2 minutes (metrics: %v)", last)
	}
	return err
}

// LocalHTTP reaches the child's metrics on loopback, never through a proxy.
var LocalHTTP = &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}

// QueueDepth is the manager's work in progress: reconciles running and
// unfinished work (controller-runtime 0.25's priority queue exports no
// workqueue_depth).
func QueueDepth(ctx context.Context, addr string) (float64, error) {
	m, err := Scrape(ctx, LocalHTTP, "http://"+addr+"/metrics")
	if err != nil {
		return 0, err
	}
	return m.QueueDepth()
}

// QueueDepth is QueueDepth of one scrape.
func (m Samples) QueueDepth() (float64, error) {
	if !m.Has("workqueue_adds_total") {
		return 0, errors.New("no work queues yet")
	}
	total := 0.0
	for _, s := range m {
		if s.Name == "controller_runtime_active_workers" || s.Name == "workqueue_unfinished_work_seconds" {
			total += s.Value
		}
	}
	return total, nil
}

// ManagerReconciles is the manager's reconciles so far by controller
// (controller_runtime_reconcile_total, every result).
func ManagerReconciles(ctx context.Context, addr string) (map[string]float64, error) {
	m, err := Scrape(ctx, LocalHTTP, "http://"+addr+"/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, s := range m {
		if s.Name == "controller_runtime_reconcile_total" {
			out[s.Labels["controller"]] += s.Value
		}
	}
	return out, nil
}

// Sample is one Prometheus text-format sample.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Samples are one scrape's samples.
type Samples []Sample

// Has says whether a sample is named name.
func (m Samples) Has(name string) bool {
	for _, s := range m {
		if s.Name == name {
			return true
		}
	}
	return false
}

// Scrape reads a Prometheus text exposition with expfmt and flattens it
// into samples: counters, gauges and untyped values by name and labels
// (summaries and histograms are not read by this program).
func Scrape(ctx context.Context, hc *http.Client, url string) (Samples, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	var out Samples
	for name, f := range families {
		for _, m := range f.GetMetric() {
			s := Sample{Name: name, Labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.Labels[l.GetName()] = l.GetValue()
			}
			switch {
			case m.Counter != nil:
				s.Value = m.GetCounter().GetValue()
			case m.Gauge != nil:
				s.Value = m.GetGauge().GetValue()
			case m.Untyped != nil:
				s.Value = m.GetUntyped().GetValue()
			default:
				continue
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// APIServerCPU is the kube-apiserver's own CPU seconds
// (process_cpu_seconds_total) among APIServerRequests' counts: the
// manager's CPU is its child's, the apiserver's is this.
const APIServerCPU = "apiserver CPU seconds"

// APIServerRequests sums apiserver_request_total by "VERB resource[/subresource]".
func APIServerRequests(ctx context.Context, hc *http.Client, host string) (map[string]float64, error) {
	m, err := Scrape(ctx, hc, strings.TrimSuffix(host, "/")+"/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, s := range m {
		if s.Name == "process_cpu_seconds_total" {
			out[APIServerCPU] = s.Value
		}
		if s.Name != "apiserver_request_total" {
			continue
		}
		res := s.Labels["resource"]
		if s.Labels["subresource"] != "" {
			res += "/" + s.Labels["subresource"]
		}
		out[s.Labels["verb"]+" "+res] += s.Value
	}
	return out, nil
}

// Delta is after's counts less before's, those that grew.
func Delta(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// ProcUsage is process pid's RSS and peak RSS in MiB (VmRSS, VmHWM) and its
// CPU seconds (user + system), read with procfs; zeros when the process is gone.
func ProcUsage(pid int) (rss, peak, cpu float64) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, 0, 0
	}
	if st, err := p.NewStatus(); err == nil {
		rss, peak = float64(st.VmRSS)/(1<<20), float64(st.VmHWM)/(1<<20)
	}
	if st, err := p.Stat(); err == nil {
		cpu = st.CPUTime()
	}
	return rss, peak, cpu
}
