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

// A flag two components share is registered once and sets both copies.
func TestSharedFlagsFanOut(t *testing.T) {
	o := NewOptions()
	fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--preconfigured-udn-addresses-enable", "--service-cidrs=10.43.0.0/16"}); err != nil {
		t.Fatal(err)
	}
	if v := fs.Lookup("preconfigured-udn-addresses-enable").Value; v.String() != "true" {
		t.Errorf("shared flag reads %q after --flag", v)
	}
	if fan, ok := fs.Lookup("preconfigured-udn-addresses-enable").Value.(fanOut); !ok || len(fan) < 2 {
		t.Fatalf("the shared flag does not reach every component: %T", fs.Lookup("preconfigured-udn-addresses-enable").Value)
	} else {
		for i, v := range fan {
			if v.String() != "true" {
				t.Errorf("component copy %d of the shared flag is %q", i, v)
			}
		}
	}
	if fan, ok := fs.Lookup("service-cidrs").Value.(fanOut); !ok || len(fan) != 2 {
		t.Errorf("--service-cidrs does not also set --k8s-service-cidrs: %T", fs.Lookup("service-cidrs").Value)
	} else if err := fan.Set("not-a-cidr"); err == nil {
		t.Error("a bad --service-cidrs value was accepted")
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
}
