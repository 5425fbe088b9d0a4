// Package profile collects the scale suite's CPU and heap profiles: the
// kube-apiserver's (over HTTP), the driver's and a child process's own.
package profile

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync"
	"time"
)

// apiserverProfileChunk is the length of one kube-apiserver CPU profile
// (/debug/pprof/profile cannot be stopped early, so a phase is profiled in
// back-to-back chunks).
const apiserverProfileChunk = 5

// APIServer writes the kube-apiserver's CPU profile (its
// /debug/pprof/profile, on by default) in consecutive chunks
// <prefix>-NNN.pprof until the returned stop is called, which waits for the
// chunk under way. Merge them with `go tool pprof -proto <prefix>-*.pprof`.
func APIServer(ctx context.Context, hc *http.Client, host, prefix string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(host, "/"), apiserverProfileChunk)
		for i := 0; ctx.Err() == nil; i++ {
			// The chunk under way finishes even after stop: its
			// request runs on its own context.
			if err := fetchTo(context.WithoutCancel(ctx), hc, url, fmt.Sprintf("%s-%03d.pprof", prefix, i)); err != nil {
				fmt.Fprintf(os.Stderr, "apiserver profile: %v\n", err)
				return
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

func fetchTo(ctx context.Context, hc *http.Client, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Driver writes this process's CPU profile to path until the returned
// stop is called.
func Driver(path string) (stop func()) {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "driver profile: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "driver profile: %v\n", err)
		f.Close()
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// PeakHeap writes the process's heap profile to path each time its
// live heap (as of the last GC) is the largest seen so far, checking every
// 50 ms until ctx ends: a peak such as a restart's resync lasts a few GCs,
// which a profile at exit would miss. The profile's inuse figures are those
// of the GC that set the peak.
func PeakHeap(ctx context.Context, path string) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak uint64
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		metrics.Read(sample)
		if live := sample[0].Value.Uint64(); live > peak+peak/20 {
			peak = live
			if err := writeHeapProfile(path); err != nil {
				fmt.Fprintf(os.Stderr, "heap profile: %v\n", err)
				return
			}
		}
	}
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
