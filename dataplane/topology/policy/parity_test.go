package policy

import (
	"encoding/json"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// testdata/upstream-live.json holds the rows upstream's ovnkube-controller
// (the cluster manager and the controller of zone node-a, EgressIP on,
// shared gateway mode) wrote for the reference case of
// ../shared/upstream-live: a dual-stack Primary Layer2 UDN tenant-blue/blue
// and a dual-stack Primary Layer3 UDN tenant-green/green on three nodes,
// no pods. They are the rows of this package's kinds: the UDNs' port groups
// and their ACLs (base_network_controller.go setupClusterPortGroups,
// base_network_controller_policy.go addHairpinAllowACL, addAllowACLFromNode),
// the zone's isolation port group and ACLs (udn_isolation.go setupUDNACLs),
// EgressIP's policies, address sets and QoS rules of the UDNs (egressip.go,
// egressip_ops.go) and the acl-logging meter
// (controllermanager/controller_manager.go createACLLoggingMeter).
// References are by name (ports), by k8s.ovn.org/id (a group's ACLs) and
// by parent table and name (an ACL's, QoS rule's or policy's holder).

var (
	pfx  = netip.MustParsePrefix
	addr = netip.MustParseAddr
)

// refCluster is the reference case's cluster: dual-stack, kind's
// masquerade and join subnets.
var refCluster = Cluster{IPv4: true, IPv6: true,
	MasqueradeSubnets: []netip.Prefix{pfx("169.254.0.0/17"), pfx("fd69::/112")},
	JoinSubnets:       []netip.Prefix{pfx("100.64.0.0/16"), pfx("fd98::/64")}}

func refBlue() Network {
	return Network{Name: "tenant-blue_blue", Topology: base.TopologyLayer2,
		Subnets: []netip.Prefix{pfx("10.100.0.0/16"), pfx("2001:db8:100::/60")},
		Nodes: []Node{{Name: "node-a", Switch: "tenant.blue_blue_ovn_layer2_switch", ManagementPort: "k8s-tenant.blue_blue_node-a",
			ManagementIPs: []netip.Addr{addr("10.100.0.2"), addr("2001:db8:100::2")}}}}
}

func refGreen() Network {
	return Network{Name: "tenant-green_green", Topology: base.TopologyLayer3,
		Subnets: []netip.Prefix{pfx("10.200.0.0/16"), pfx("2001:db8:200::/48")},
		Nodes: []Node{{Name: "node-a", Switch: "tenant.green_green_node-a", ManagementPort: "k8s-tenant.green_green_node-a",
			ManagementIPs: []netip.Addr{addr("10.200.1.2"), addr("2001:db8:200:2::2")}}}}
}

// refDefaultNode is node-a with its default network management IPs.
var refDefaultNode = Node{Name: "node-a", ManagementIPs: []netip.Addr{addr("10.244.2.2"), addr("fd00:10:244:3::2")}}

// refDesired are every piece of the reference case.
func refDesired(t *testing.T) []*rows.Desired {
	t.Helper()
	var out []*rows.Desired
	add := func(d *rows.Desired, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	for _, net := range []Network{refBlue(), refGreen()} {
		add(NetpolDefaults(net, refCluster))
		add(EgressIPDefaults(net, refCluster))
	}
	add(UDNIsolation([]Node{refDefaultNode}, nil))
	add(EgressIPShared(refCluster, []netip.Addr{addr("10.96.0.1"), addr("10.96.0.10"), addr("fd00:10:96::a")}))
	add(EgressIPDefaultNetworkSets(refCluster,
		[]netip.Addr{addr("192.0.2.2"), addr("2001:db8::2"), addr("192.0.2.3"), addr("2001:db8::3"), addr("192.0.2.4"), addr("2001:db8::4")}))
	return out
}

// TestUpstreamLiveParity: every row udnkit builds for the reference case
// is one of upstream's with the same values, and upstream's rows it does
// not build are exactly the Pod-To-Pod and reply-traffic policies the
// networks' topologies write.
func TestUpstreamLiveParity(t *testing.T) {
	want := loadUpstream(t)
	got := map[string]map[string]any{}
	for _, d := range refDesired(t) {
		for _, r := range flatten(d) {
			k := rowKey(r)
			// The zone's meter is in every piece with ACLs (rows.ZoneMeter).
			if prev, dup := got[k]; dup && (r["table"] != "Meter" || !reflect.DeepEqual(prev, r)) {
				t.Errorf("row %s built twice", k)
			}
			got[k] = r
		}
	}
	for k, g := range got {
		w, ok := want[k]
		if !ok {
			t.Errorf("udnkit builds %s, which upstream does not write", k)
			continue
		}
		if !reflect.DeepEqual(g, w) {
			gj, _ := json.Marshal(g)
			wj, _ := json.Marshal(w)
			t.Errorf("%s differs:\n udnkit:   %s\n upstream: %s", k, gj, wj)
		}
	}
	var left []string
	for k, w := range want {
		if _, ok := got[k]; ok {
			continue
		}
		name := w["external_ids"].(map[string]any)["k8s.ovn.org/name"]
		if w["table"] == "Logical_Router_Policy" && (name == ovnk.EgressIPNoReroutePodToPod || name == ovnk.EgressIPNoRerouteReplyTraffic) {
			left = append(left, k)
			continue
		}
		t.Errorf("upstream writes %s, which udnkit does not build", k)
	}
	// Pod-To-Pod of each family and the reply-traffic policy, per network.
	if len(left) != 6 {
		t.Errorf("upstream's rows left to the topologies: %d, want 6: %v", len(left), left)
	}
	if len(got) != len(want)-6 {
		t.Errorf("udnkit builds %d rows, upstream writes %d (6 left to the topologies)", len(got), len(want))
	}
}

func loadUpstream(t *testing.T) map[string]map[string]any {
	t.Helper()
	b, err := os.ReadFile("testdata/upstream-live.json")
	if err != nil {
		t.Fatal(err)
	}
	var rs []map[string]any
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, r := range rs {
		out[rowKey(r)] = r
	}
	return out
}

// rowKey names a row: its table, upstream's primary ID or name, and the
// match of a policy (the Pod-To-Join policies of several subnets share
// their IDs).
func rowKey(r map[string]any) string {
	k := r["table"].(string)
	if ids, ok := r["external_ids"].(map[string]any); ok && ids["k8s.ovn.org/id"] != nil {
		k += " " + ids["k8s.ovn.org/id"].(string)
	} else {
		k += " " + r["name"].(string)
	}
	if r["table"] == "Logical_Router_Policy" {
		k += " " + r["match"].(string)
	}
	return k
}

// flatten renders a Desired's rows as testdata does (through JSON, so
// both compare alike).
func flatten(d *rows.Desired) []map[string]any {
	var out []map[string]any
	for _, pg := range d.PortGroups {
		var acls []string
		for _, a := range pg.ACLs {
			acls = append(acls, a.ExternalIDs["k8s.ovn.org/id"])
			out = append(out, aclRow(a, "Port_Group", pg.Row.Name))
		}
		sort.Strings(acls)
		out = append(out, jsonRow(map[string]any{"table": "Port_Group", "name": pg.Row.Name, "external_ids": pg.Row.ExternalIDs,
			"ports": orEmpty(slices.Sorted(slices.Values(pg.Ports))), "acls": orEmpty(acls)}))
	}
	for _, s := range d.Switches {
		for _, a := range s.ACLs {
			out = append(out, aclRow(a, "Logical_Switch", s.Row.Name))
		}
		for _, q := range s.QoS {
			out = append(out, jsonRow(map[string]any{"table": "QoS", "action": q.Action, "bandwidth": orEmptyMap(q.Bandwidth),
				"direction": q.Direction, "external_ids": q.ExternalIDs, "match": q.Match, "priority": q.Priority,
				"parent": []string{"Logical_Switch", s.Row.Name}}))
		}
	}
	for _, r := range d.Routers {
		for _, p := range r.Policies {
			out = append(out, jsonRow(map[string]any{"table": "Logical_Router_Policy", "action": p.Action, "external_ids": p.ExternalIDs,
				"match": p.Match, "options": orEmptyMap(p.Options), "priority": p.Priority, "nexthops": orEmpty(p.Nexthops),
				"parent": []string{"Logical_Router", r.Row.Name}}))
		}
	}
	for _, a := range d.AddressSets {
		out = append(out, jsonRow(map[string]any{"table": "Address_Set", "name": a.Name, "external_ids": a.ExternalIDs,
			"addresses": orEmpty(a.Addresses)}))
	}
	for _, m := range d.Meters {
		if slices.ContainsFunc(out, func(r map[string]any) bool { return r["table"] == "Meter" }) {
			continue
		}
		out = append(out, jsonRow(map[string]any{"table": "Meter", "name": m.Row.Name, "fair": *m.Row.Fair, "unit": m.Row.Unit,
			"external_ids": orEmptyMap(m.Row.ExternalIDs),
			"band":         map[string]any{"action": m.Band.Action, "rate": m.Band.Rate, "burst_size": m.Band.BurstSize}}))
	}
	return out
}

func aclRow(a nbdb.ACL, parentTable, parent string) map[string]any {
	return jsonRow(map[string]any{"table": "ACL", "action": a.Action, "direction": a.Direction, "external_ids": a.ExternalIDs,
		"log": a.Log, "match": a.Match, "meter": optional(a.Meter), "name": optional(a.Name), "options": orEmptyMap(a.Options),
		"priority": a.Priority, "severity": optional(a.Severity), "tier": a.Tier, "label": a.Label,
		"parent": []string{parentTable, parent}})
}

// optional is an optional column as the dump shows it: its value, or an
// empty set.
func optional(s *string) any {
	if s == nil {
		return []string{}
	}
	return *s
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func orEmptyMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

// jsonRow round-trips a row through JSON, as testdata is read.
func jsonRow(r map[string]any) map[string]any {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// A deliberately wrong value is caught: the parity check is not vacuous.
func TestUpstreamLiveParityCatchesADifference(t *testing.T) {
	want := loadUpstream(t)
	d, err := NetpolDefaults(refBlue(), Cluster{IPv4: true, IPv6: true,
		MasqueradeSubnets: []netip.Prefix{pfx("169.254.169.0/29"), pfx("fd69::/112")}, JoinSubnets: refCluster.JoinSubnets})
	if err != nil {
		t.Fatal(err)
	}
	diff := 0
	for _, r := range flatten(d) {
		if w := want[rowKey(r)]; !reflect.DeepEqual(r, w) {
			diff++
			if !strings.Contains(r["match"].(string), "169.254.169.5") {
				t.Errorf("%s differs but not by its hairpin IP: %v", rowKey(r), r["match"])
			}
		}
	}
	if diff != 2 {
		t.Errorf("another masquerade subnet changes %d rows, want the 2 hairpin ACLs", diff)
	}
}

// The IDs this package gives EgressIP's policies are those the topologies
// give the Pod-To-Pod and reply-traffic policies (one rule, two writers).
func TestPolicyIDsAreOVNKs(t *testing.T) {
	for _, c := range []struct {
		name, family string
	}{{ovnk.EgressIPNoReroutePodToPod, "ip4"}, {ovnk.EgressIPNoRerouteReplyTraffic, ovnk.EgressIPFamilyBoth}, {NoReroutePodToJoin, "ip6"}} {
		got := policyIDs("tenant-blue_blue", c.name, c.family, NoReroutePriority).externalIDs()
		if want := ovnk.EgressIPNoRerouteIDs("tenant-blue_blue", c.name, NoReroutePriority, c.family); !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s: %v, ovnk's %v", c.name, c.family, got, want)
		}
	}
}
