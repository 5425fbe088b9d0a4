package app

import (
	"context"
	"flag"
	"io"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

func parse(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	o := NewOptions()
	fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.BindFlags(fs)
	return o, fs.Parse(args)
}

func TestSelected(t *testing.T) {
	o, err := parse(t, "--controllers=admission, ipam,admission")
	if err != nil {
		t.Fatal(err)
	}
	got, err := o.Selected()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "admission" || got[1].Name != "ipam" {
		t.Errorf("selected %v, want admission and ipam once each", got)
	}
	o, _ = parse(t, "--controllers=admission,magic")
	if _, err := o.Selected(); err == nil || !strings.Contains(err.Error(), `unknown component "magic"`) || !strings.Contains(err.Error(), "admission") {
		t.Errorf("an unknown component should be named with the known ones: %v", err)
	}
	if o := NewOptions(); o.Controllers != strings.Join(o.Names(), ",") {
		t.Errorf("default --controllers %q is not every component", o.Controllers)
	}
}

// The cluster's facts are one set of flags, parsed into the one
// ClusterConfig every component is handed.
func TestClusterFlagsParsedOnce(t *testing.T) {
	o := NewOptions()
	fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--preconfigured-udn-addresses-enable", "--service-cidrs=10.43.0.0/16"}); err != nil {
		t.Fatal(err)
	}
	if !o.Cluster.PreconfiguredUDNAddresses || len(o.Cluster.ServiceCIDRs) != 1 || o.Cluster.ServiceCIDRs[0].String() != "10.43.0.0/16" {
		t.Errorf("cluster config = %+v", o.Cluster)
	}
	for _, gone := range []string{"k8s-service-cidrs", "udn-transit-subnets"} {
		if fs.Lookup(gone) != nil {
			t.Errorf("--%s is an alias of a cluster fact; there must be one flag per fact", gone)
		}
	}
	if err := fs.Set("cluster-subnets", "not-a-cidr"); err == nil {
		t.Error("a bad CIDR flag value was accepted")
	}
}

// Half an OVN configuration is a mistake the manager refuses at start-up;
// none at all leaves the dataplane idle (checked against an apiserver in the
// chart's install test).
func TestDataplaneNeedsBothOVNAddresses(t *testing.T) {
	o, err := parse(t, "--controllers=dataplane", "--ovn-nb-address=unix:/run/ovn/ovnnb_db.sock",
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(context.Background(), &rest.Config{Host: "http://127.0.0.1:1"}, o)
	if err == nil || !strings.Contains(err.Error(), "needs both --ovn-nb-address and --ovn-sb-address") {
		t.Errorf("only --ovn-nb-address: err = %v", err)
	}
	o, _ = parse(t, "--controllers=dataplane", "--ovn-nb-address=ssl:10.0.0.1:6641", "--ovn-sb-address=ssl:10.0.0.1:6642",
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	if _, err := New(context.Background(), &rest.Config{Host: "http://127.0.0.1:1"}, o); err == nil ||
		!strings.Contains(err.Error(), "--ovn-client-cert") {
		t.Errorf("ssl: without a client certificate: err = %v", err)
	}
	o, _ = parse(t, "--controllers=dataplane", "--ovn-nb-address=unix:/nb.sock", "--ovn-sb-address=unix:/sb.sock", "--dataplane-workers=0",
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	if _, err := New(context.Background(), &rest.Config{Host: "http://127.0.0.1:1"}, o); err == nil ||
		!strings.Contains(err.Error(), "--dataplane-workers=0: the dataplane needs at least 1 worker") {
		t.Errorf("--dataplane-workers=0: err = %v", err)
	}
}
