package controllers

import (
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/ovnk"
)

// uuidPattern matches the row UUIDs ovn-nbctl show prints.
var uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// topology is what ovn-nbctl shows of the Northbound, in an order that does
// not depend on row UUIDs: every router with its options, ports, routes,
// policies and NATs, every switch with its ports, every port's and address
// set's columns.
func (s *stack) topology() string {
	s.t.Helper()
	var out []string
	list := func(table, columns string) []string {
		lines := strings.Split(s.nbctl("--format=csv", "--data=bare", "--no-headings", "--columns="+columns, "list", table), "\n")
		sort.Strings(lines)
		return lines
	}
	for _, r := range list("Logical_Router", "name") {
		if r == "" {
			continue
		}
		out = append(out, "router "+r, s.nbctl("get", "Logical_Router", r, "options", "external_ids"), s.nbctl("lrp-list", r),
			s.nbctl("lr-route-list", r), s.nbctl("lr-policy-list", r), s.nbctl("lr-nat-list", r))
	}
	for _, sw := range list("Logical_Switch", "name") {
		if sw != "" {
			out = append(out, "switch "+sw, s.nbctl("get", "Logical_Switch", sw, "other_config", "external_ids"), s.nbctl("lsp-list", sw))
		}
	}
	out = append(out, list("Logical_Router_Port", "name,mac,networks,peer,options,external_ids")...)
	out = append(out, list("Logical_Switch_Port", "name,type,addresses,options,external_ids")...)
	out = append(out, list("Address_Set", "name,addresses,external_ids")...)
	return normalized(uuidPattern.ReplaceAllString(strings.Join(out, "\n"), "UUID"))
}

// The manager repairs, without a restart, a Northbound database emptied
// under it (ovsdb-server killed, its file recreated, served again on the
// same socket) within 10 s, and a transit router another client deleted.
func TestEmptiedNorthboundReprogrammedByTheControllers(t *testing.T) {
	s := newStack(t)
	northd, err := ovsdbserver.StartNorthd(s.dir, s.db.NB, s.db.SB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(northd.Stop)
	if _, err := Setup(s.ctx, s.mgr, s.opts()); err != nil {
		t.Fatal(err)
	}
	s.start()
	s.create(namespace("ns1"), namespace("ns2"),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", Annotations: map[string]string{ovnk.AnnotationNodeID: "2"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node2", Annotations: map[string]string{ovnk.AnnotationNodeID: "3"}}})
	nad := func(ns, name, id, keys, config string) *nadv1.NetworkAttachmentDefinition {
		return &nadv1.NetworkAttachmentDefinition{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{ovnk.LabelUserDefinedNetwork: ""},
				Annotations: map[string]string{ovnk.AnnotationNetworkID: id, ovnk.AnnotationTunnelKeys: keys}},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config},
		}
	}
	s.createNAD(nad("ns1", "tenant-blue", "1", "[16711685,16715780]", l2Config))
	s.createNAD(nad("ns2", "tenant-red", "2", "[16711686,16715781]", redConfig))
	const blue, red = "ns1_tenant.blue_transit_router", "ns2_tenant.red_transit_router"
	s.eventually("both networks programmed on both nodes", func() bool {
		show := s.nbctl("show")
		return strings.Count(show, "trtor-GR_ns1_tenant.blue_node") == 2 && strings.Count(show, "trtor-GR_ns2_tenant.red_node") == 2
	})
	// Programmed and settled: the same topology twice, a second apart.
	var want string
	for got := s.topology(); got != want; got = s.topology() {
		want = got
		time.Sleep(time.Second)
	}

	if err := s.db.NB.Recreate(s.ctx); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	for got := s.topology(); got != want; got = s.topology() {
		if time.Since(started) > 10*time.Second {
			t.Fatalf("the emptied database is not reprogrammed after 10 s:\n%s\nwant:\n%s", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("emptied Northbound reprogrammed in %v", time.Since(started).Round(10*time.Millisecond))

	s.nbctl("lr-del", red)
	started = time.Now()
	for got := s.topology(); got != want; got = s.topology() {
		if time.Since(started) > 5*time.Second {
			t.Fatalf("the deleted transit router %s is not back after 5 s:\n%s", red, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("deleted transit router repaired in %v", time.Since(started).Round(10*time.Millisecond))
	if !strings.Contains(want, blue) || !strings.Contains(want, red) {
		t.Fatalf("the topology lacks a transit router:\n%s", want)
	}
}
