package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/udnkit/udnkit/webhooks
cpu: Intel(R) Xeon(R) CPU
BenchmarkCreateUDN/webhook-2         	     100	   3000000 ns/op	    1200000 p50-ns	    9000000 p99-ns
BenchmarkCreateUDN/baseline-no-webhook-2 	     100	   2000000 ns/op
BenchmarkHandler-2   	   50000	     25000 ns/op	    4096 B/op	      40 allocs/op
PASS
pkg: github.com/udnkit/udnkit/cel
BenchmarkValidate/offline-2	1000	500000 ns/op
BenchmarkValidate/baseline-2	100	4000000 ns/op
ok  	github.com/udnkit/udnkit/cel	3.1s
`

func TestReport(t *testing.T) {
	results, env, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 5 {
		t.Fatalf("parsed %d results, want 5", len(results))
	}
	table := report(results, env)
	for _, want := range []string{
		"Machine: linux/amd64, Intel(R) Xeon(R) CPU",
		"| webhooks | CreateUDN/webhook | 3.00 ms/op, p50 1.20 ms, p99 9.00 ms | baseline-no-webhook: 2.00 ms/op | 1.5× |",
		"| webhooks | Handler | 25.00 µs/op | — | — |",
		"| cel | Validate/offline | 500.00 µs/op | baseline: 4.00 ms/op | 0.125× |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "| Validate/baseline |") {
		t.Error("a baseline is listed as an operation of its own")
	}
}

func TestParseRejectsGarbageFigures(t *testing.T) {
	if _, _, err := parse(strings.NewReader("BenchmarkX-2  10  abc ns/op\n")); err == nil {
		t.Error("a non-numeric figure was accepted")
	}
}
