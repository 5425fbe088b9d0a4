package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// plan of the example Primary Layer2 UDN (10.100.0.0/16, fd00:100::/64: its
// management port is .2 / ::2) on one node, with args.
func planBlue(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), append([]string{"plan", "-f", filepath.Join("..", "..", "examples", "udn-layer2-primary.yaml"), "--nodes", "1"}, args...), &out, &errOut)
	return out.String(), errOut.String(), code
}

// --service gives the UDN-enabled services' ClusterIPs: the first (the
// service's spec.clusterIP; a second family is not routed, as upstream) is a
// dst-ip route on the transit router to the management port of its family, marked
// with the service's key, in the order of --udn-allowed-default-services as
// the dataplane writes them; an allowed service not given is planned as
// absent, and said so.
func TestPlanServiceRoutes(t *testing.T) {
	out, errOut, code := planBlue(t, "--service", "kube-system/kube-dns=10.96.0.10,fd02::a", "--service", "default/kubernetes=10.96.0.1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	routes := []string{
		"    route 10.96.0.1 via 10.100.0.2 policy=dst-ip external_ids{k8s.ovn.org/udn-enabled-default-service=default/kubernetes}\n",
		"    route 10.96.0.10 via 10.100.0.2 policy=dst-ip external_ids{k8s.ovn.org/udn-enabled-default-service=kube-system/kube-dns}\n",
	}
	if strings.Contains(out, "route fd02::a") {
		t.Errorf("kube-dns's second ClusterIP is routed:\n%s", out)
	}
	last := -1
	for _, r := range routes {
		i := strings.Index(out, r)
		if i < 0 {
			t.Fatalf("plan lacks %q:\n%s", r, out)
		}
		if i < last {
			t.Errorf("%q is out of --udn-allowed-default-services' order:\n%s", r, out)
		}
		last = i
	}
	if n := strings.Count(out, "policy=dst-ip"); n != len(routes) {
		t.Errorf("%d dst-ip routes, want %d:\n%s", n, len(routes), out)
	}
	if tr := strings.Index(out, "router tenant.blue_blue_transit_router"); tr < 0 || tr > strings.Index(out, routes[0]) ||
		strings.Index(out, "\nrouter GR_") < last {
		t.Errorf("the service routes are not the transit router's:\n%s", out)
	}
	if strings.Contains(out, "planned as absent") {
		t.Errorf("every UDN-enabled service is given, yet one is planned as absent:\n%s", out)
	}

	// Only the API service given: the DNS service is absent, with a note.
	out, _, code = planBlue(t, "--service", "default/kubernetes=10.96.0.1")
	if code != 0 || strings.Count(out, "policy=dst-ip") != 1 ||
		!strings.Contains(out, "# UDN-enabled services without --service, planned as absent (no routes): kube-system/kube-dns\n") {
		t.Errorf("exit %d, plan with the API service only:\n%s", code, out)
	}
	// None given: no service routes, both noted.
	out, _, _ = planBlue(t)
	if strings.Count(out, "policy=dst-ip") != 0 ||
		!strings.Contains(out, "planned as absent (no routes): default/kubernetes,kube-system/kube-dns\n") {
		t.Errorf("plan without --service:\n%s", out)
	}
	// An IPv4-mapped IPv6 ClusterIP is the IPv4 address, as the dataplane reads it.
	out, _, _ = planBlue(t, "--service", "default/kubernetes=::ffff:10.96.0.1")
	if !strings.Contains(out, "route 10.96.0.1 via 10.100.0.2 policy=dst-ip") {
		t.Errorf("plan with ClusterIP ::ffff:10.96.0.1:\n%s", out)
	}
	// Another cluster's UDN-enabled services.
	out, errOut, code = planBlue(t, "--udn-allowed-default-services=openshift-dns/dns-default", "--service", "openshift-dns/dns-default=172.30.0.10")
	if code != 0 || !strings.Contains(out, "route 172.30.0.10 via 10.100.0.2 policy=dst-ip external_ids{k8s.ovn.org/udn-enabled-default-service=openshift-dns/dns-default}") ||
		strings.Contains(out, "planned as absent") {
		t.Errorf("exit %d %s, plan with --udn-allowed-default-services=openshift-dns/dns-default:\n%s", code, errOut, out)
	}
}

// A malformed --service is refused before anything is printed, with exit
// code 2 and a message naming the flag and the rule.
func TestPlanRefusesBadService(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"no ClusterIPs":           {[]string{"--service", "default/kubernetes"}, `invalid value "default/kubernetes" for flag -service: want namespace/name=CLUSTERIP[,CLUSTERIP]`},
		"empty ClusterIPs":        {[]string{"--service", "default/kubernetes="}, "flag -service: want namespace/name=CLUSTERIP[,CLUSTERIP]"},
		"no namespace":            {[]string{"--service", "kubernetes=10.96.0.1"}, `flag -service: service "kubernetes": want namespace/name`},
		"two services in one":     {[]string{"--service", "default/kubernetes,kube-system/kube-dns=10.96.0.1"}, "flag -service: one service per --service, got 2"},
		"bad namespace":           {[]string{"--service", "Default/kubernetes=10.96.0.1"}, `flag -service: service "Default/kubernetes": namespace "Default"`},
		"not an IP":               {[]string{"--service", "default/kubernetes=10.96.0.0/16"}, `flag -service: service default/kubernetes: ClusterIP "10.96.0.0/16" is not an IP address`},
		"two IPv4 ClusterIPs":     {[]string{"--service", "default/kubernetes=10.96.0.1,10.96.0.2"}, "flag -service: service default/kubernetes: at most one ClusterIP per IP family"},
		"a service twice":         {[]string{"--service", "default/kubernetes=10.96.0.1", "--service", "default/kubernetes=10.96.0.2"}, "flag -service: service default/kubernetes is given twice"},
		"one IP for two services": {[]string{"--service", "default/kubernetes=10.96.0.1", "--service", "kube-system/kube-dns=10.96.0.1"}, "flag -service: service kube-system/kube-dns: ClusterIP 10.96.0.1 is also service default/kubernetes's"},
		"not UDN-enabled": {[]string{"--service", "kube-system/metrics=10.96.0.5"},
			"udnctl plan: --service kube-system/metrics: not a UDN-enabled service (--udn-allowed-default-services=default/kubernetes,kube-system/kube-dns)"},
	} {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := planBlue(t, c.args...)
			if code != 2 || out != "" {
				t.Errorf("exit %d, stdout %q; want 2 and nothing printed", code, out)
			}
			if !strings.Contains(errOut, c.want) {
				t.Errorf("stderr %q lacks %q", errOut, c.want)
			}
		})
	}
}
