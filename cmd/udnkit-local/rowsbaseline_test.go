package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	ovsdbclient "github.com/ovn-kubernetes/libovsdb/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/pods"
	"github.com/udnkit/udnkit/dataplane/topology/policy"
	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// rowsNetworkIDBase offsets the network IDs of the udnkit-rows samples:
// udnkit's allocator hands out IDs from 1, one per network, so IDs from
// here (and the tunnel keys and masquerade IPs derived from them) never
// meet one of udnkit's in a run.
const rowsNetworkIDBase = 3000

// rowsPod is one pod of a udnkit-rows sample: its node and its
// k8s.ovn.org/pod-networks entry.
type rowsPod struct {
	name, uid string
	node      *datapath.Node
	entry     podannotation.PodNetwork
	addrs     podannotation.PodAddresses
	dp        *datapath.Pod
}

// rowsNetwork is one udnkit-rows sample's network: its NAD as udnkit's
// NAD reconciler renders it and its two pods.
type rowsNetwork struct {
	namespace string
	nad       *nadv1.NetworkAttachmentDefinition
	conf      *netconf.NetConf
	pods      []*rowsPod
}

func (n *rowsNetwork) key() string { return n.namespace + "/" + n.nad.Name }

// newRowsNetwork is sample k's network: the admitted UDN of ref (a udnkit
// sample) as namespace/udn with network ID rowsNetworkIDBase+k and its
// tunnel keys (the legacy switch key, as udnkit's allocator keeps it, and
// a key of the allocated range), rendered by the NAD reconciler's
// renderer; and ref's pods' entries (the addresses, MAC, gateways and
// tunnel IDs udnkit's allocator gave a fresh network's first two pods).
func newRowsNetwork(ctx context.Context, c client.Reader, cfg ovnk.ClusterConfig, cluster *datapath.Cluster, ref, namespace, udn string, k int) (*rowsNetwork, error) {
	var obj udnv1.UserDefinedNetwork
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref, Name: udn}, &obj); err != nil {
		return nil, err
	}
	id := rowsNetworkIDBase + k
	legacy, err := ovnk.LegacyTransitSwitchKey(id)
	if err != nil {
		return nil, err
	}
	spec := obj.Spec.Network()
	transit, err := netconf.TransitSubnetsFor(spec, cfg)
	if err != nil {
		return nil, err
	}
	src := netconf.NADSource{Kind: udnv1.KindUserDefinedNetwork, Spec: spec,
		Meta: metav1.ObjectMeta{Name: udn, Namespace: namespace, UID: uuid.NewUUID()}}
	nad, err := netconf.NewNAD(src, namespace, cfg, transit,
		ovnk.NetworkIDs{ID: id, HasID: true, TunnelKeys: []int{legacy, ovnk.FirstAllocatedTunnelKey + id}})
	if err != nil {
		return nil, err
	}
	n := &rowsNetwork{namespace: namespace, nad: nad}
	if n.conf, err = netconf.Parse(nad.Spec.Config); err != nil {
		return nil, err
	}
	for i, name := range []string{"pod-a", "pod-b"} {
		var pod corev1.Pod
		if err := c.Get(ctx, client.ObjectKey{Namespace: ref, Name: name}, &pod); err != nil {
			return nil, err
		}
		entry, err := podannotation.DecodePodNetwork(pod.Annotations, ref+"/"+udn)
		if err == nil && entry == nil {
			err = fmt.Errorf("pod %s/%s has no entry for %s/%s", ref, name, ref, udn)
		}
		if err != nil {
			return nil, err
		}
		p := &rowsPod{name: name, uid: string(uuid.NewUUID()), node: cluster.Nodes[i%len(cluster.Nodes)], entry: *entry}
		if p.addrs, err = entry.Parse(); err != nil {
			return nil, err
		}
		n.pods = append(n.pods, p)
	}
	return n, nil
}

// spec is the pod's namespace as its CNI configures it from its
// k8s.ovn.org/pod-networks entry (demoPod.install's).
func (n *rowsNetwork) spec(p *rowsPod) (datapath.PodSpec, error) {
	v, err := podannotation.PodNetworks{n.key(): p.entry}.Encode()
	return datapath.PodSpec{Namespace: n.namespace, Name: p.name, Annotations: map[string]string{ovnk.AnnotationPodNetworks: v},
		NAD: n.key(), Port: ovnk.PodPortName(n.key(), n.namespace, p.name), UID: p.uid, MTU: int(n.conf.MTU)}, err
}

// zoneDesired builds with udnkit's own builders the per-network pieces
// its zone controllers apply in zoneName for n, from the cluster's nodes
// as they are: the Layer2 topology (layer2.Reconciler), the pods' ports
// (pods.Reconciler) and the network-policy and EgressIP defaults
// (policy.Reconciler).
func (n *rowsNetwork) zoneDesired(ctx context.Context, c client.Reader, cfg ovnk.ClusterConfig, nodes []corev1.Node, zoneName string) ([]*rows.Desired, error) {
	local := zone.InZone(zoneName)
	topo, err := n.layer2(ctx, c, cfg, nodes, local)
	if err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	ports, err := n.ports(nodes, local)
	if err != nil {
		return nil, fmt.Errorf("pods: %w", err)
	}
	netpol, eip, err := n.policy(cfg, nodes, local)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return []*rows.Desired{topo, ports, netpol, eip}, nil
}

// layer2 is the network's Layer2 topology in the zone, its facts gathered
// as layer2.Reconciler's readNetwork, clusterFacts and apply gather them
// (shared gateway mode, EgressIP on, the zone managers' flags).
func (n *rowsNetwork) layer2(ctx context.Context, c client.Reader, cfg ovnk.ClusterConfig, nodes []corev1.Node, local func(*corev1.Node) bool) (*rows.Desired, error) {
	net, ok, err := zone.Layer2NetworkFromNAD(n.nad)
	if err == nil && !ok {
		err = errors.New("not a primary Layer2 NAD with tunnel keys")
	}
	if err == nil {
		err = zone.ClusterFacts(cfg, n.nad, &net)
	}
	if err != nil {
		return nil, err
	}
	net.EgressIP = true
	ids, err := ovnk.DecodeNetworkIDs(n.nad.Annotations)
	if err != nil {
		return nil, err
	}
	for _, v6 := range net.JoinFamilies() {
		if masq, ok := ovnk.FamilyOf(cfg.MasqueradeSubnets, v6); ok {
			gr, _, err := ovnk.UDNMasqueradeIPs(masq, ids.ID)
			if err != nil {
				return nil, err
			}
			net.MasqueradeSubnets = append(net.MasqueradeSubnets, masq)
			net.GatewayMasqueradeIPs = append(net.GatewayMasqueradeIPs, gr)
		}
	}
	if net.Services, err = zone.EnabledServices(ctx, c, cfg.UDNAllowedDefaultServices); err != nil {
		return nil, err
	}
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b corev1.Node) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	objs := map[string]*corev1.Node{}
	var all []topology.Layer2Node
	for i := range sorted {
		l2, ok, err := zone.Layer2NodeFromNode(&sorted[i])
		if err != nil || !ok {
			return nil, fmt.Errorf("node %s: ID %v: %w", sorted[i].Name, ok, err)
		}
		objs[l2.Name] = &sorted[i]
		all = append(all, l2)
	}
	usable, skipped := topology.Layer2UsableNodes(net, all)
	if len(skipped) > 0 {
		return nil, fmt.Errorf("nodes left out: %v", skipped)
	}
	for i := range usable {
		node := objs[usable[i].Name]
		if usable[i].Local = local(node); usable[i].Local {
			usable[i].Gateway = zone.NodeGateway(ctx, nil, node)
		}
		// A node the Layer2 reconciler has not moved yet runs no pod of
		// a primary Layer2 network here: it would move it first.
		usable[i].TopologyVersion = ovnk.Layer2TopologyVersionTransitRouter
	}
	return topology.Layer2Topology(net, usable)
}

// ports is the pods' ports in the zone, read as pods.Reconciler's portOf
// reads them.
func (n *rowsNetwork) ports(nodes []corev1.Node, local func(*corev1.Node) bool) (*rows.Desired, error) {
	byName := map[string]*corev1.Node{}
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	var in []pods.Pod
	for _, p := range n.pods {
		node := byName[p.node.Name]
		if node == nil {
			return nil, fmt.Errorf("no node %s", p.node.Name)
		}
		chassis, _, err := ovnk.DecodeNodeChassisID(node)
		if err != nil {
			return nil, err
		}
		encaps, _ := ovnk.DecodeNodeEncapIPs(node)
		in = append(in, pods.Pod{NAD: n.key(), Namespace: n.namespace, Name: p.name, UID: p.uid, Node: node.Name,
			Chassis: chassis, Local: local(node), MultiVTEP: len(encaps) > 1,
			MAC: p.addrs.MAC, IPs: p.addrs.IPs, TunnelID: p.addrs.TunnelID, Gateways: p.addrs.Gateways})
	}
	return pods.Ports(pods.Network{Name: n.conf.Name, Topology: base.TopologyLayer2}, in)
}

// policy is the network's network-policy and EgressIP defaults in the
// zone, read as policy.Reconciler's network and cluster read them.
func (n *rowsNetwork) policy(cfg ovnk.ClusterConfig, nodes []corev1.Node, local func(*corev1.Node) bool) (netpol, eip *rows.Desired, err error) {
	l2, _, err := zone.Layer2NetworkFromNAD(n.nad)
	if err != nil {
		return nil, nil, err
	}
	_, mgmt, err := ovnk.Layer2GatewayAndManagement(l2.Subnets, l2.InfrastructureSubnets, l2.DefaultGatewayIPs)
	if err != nil {
		return nil, nil, err
	}
	names := ovnk.NamesFor(l2.Name)
	net := policy.Network{Name: l2.Name, Topology: base.TopologyLayer2, Subnets: l2.Subnets}
	for _, node := range nodes {
		if local(&node) {
			net.Nodes = append(net.Nodes, policy.Node{Name: node.Name, Switch: names.Switch(),
				ManagementPort: names.ManagementPort(node.Name), ManagementIPs: mgmt})
		}
	}
	slices.SortFunc(net.Nodes, func(a, b policy.Node) int { return strings.Compare(a.Name, b.Name) })
	c := policy.Cluster{MasqueradeSubnets: cfg.MasqueradeSubnets, JoinSubnets: cfg.JoinSubnets}
	c.IPv4, c.IPv6 = cfg.IPModes()
	if netpol, err = policy.NetpolDefaults(net, c); err != nil {
		return nil, nil, err
	}
	eip, err = policy.EgressIPDefaults(net, c)
	return netpol, eip, err
}

// mergeDesired is the pieces' rows as one piece of owner, so that one
// Apply writes them in one transaction: a router, switch, port group or
// load balancer group several pieces hold (one owns it, the others refer
// to it) is one, with every piece's children; the root rows are every
// piece's. Every row then carries owner's external_ids (the network's,
// as the pieces' do, with owner's piece).
func mergeDesired(owner rows.Owner, ds ...*rows.Desired) *rows.Desired {
	out := &rows.Desired{Owner: owner}
	at := map[string]int{}
	meters := map[string]bool{}
	for _, d := range ds {
		for _, r := range d.Routers {
			mergeNamed(&out.Routers, at, "router/"+r.Row.Name, r, func(m *rows.Router) {
				if m.Ref && !r.Ref {
					m.Row, m.Ref, m.Shared, m.Copp = r.Row, r.Ref, r.Shared, r.Copp
				}
				m.Ports, m.Routes = slices.Concat(m.Ports, r.Ports), slices.Concat(m.Routes, r.Routes)
				m.Policies, m.NATs = slices.Concat(m.Policies, r.Policies), slices.Concat(m.NATs, r.NATs)
				m.LoadBalancerGroups = slices.Concat(m.LoadBalancerGroups, r.LoadBalancerGroups)
				m.LoadBalancers = slices.Concat(m.LoadBalancers, r.LoadBalancers)
				m.GatewayChassis = mergeMaps(m.GatewayChassis, r.GatewayChassis)
			})
		}
		for _, s := range d.Switches {
			mergeNamed(&out.Switches, at, "switch/"+s.Row.Name, s, func(m *rows.Switch) {
				if m.Ref && !s.Ref {
					m.Row, m.Ref, m.Shared = s.Row, s.Ref, s.Shared
				}
				m.Ports, m.ACLs, m.QoS = slices.Concat(m.Ports, s.Ports), slices.Concat(m.ACLs, s.ACLs), slices.Concat(m.QoS, s.QoS)
				m.LoadBalancerGroups = slices.Concat(m.LoadBalancerGroups, s.LoadBalancerGroups)
				m.LoadBalancers = slices.Concat(m.LoadBalancers, s.LoadBalancers)
				m.PortDHCP = mergeMaps(m.PortDHCP, s.PortDHCP)
			})
		}
		for _, g := range d.PortGroups {
			mergeNamed(&out.PortGroups, at, "port-group/"+g.Row.Name, g, func(m *rows.PortGroup) {
				if m.Ref && !g.Ref {
					m.Row, m.Ref, m.Shared = g.Row, g.Ref, g.Shared
				}
				m.Ports, m.ACLs = slices.Concat(m.Ports, g.Ports), slices.Concat(m.ACLs, g.ACLs)
			})
		}
		for _, g := range d.LoadBalancerGroups {
			mergeNamed(&out.LoadBalancerGroups, at, "lb-group/"+g.Row.Name, g, func(m *rows.LoadBalancerGroup) {
				if m.Ref && !g.Ref {
					m.Row, m.Ref, m.Shared = g.Row, g.Ref, g.Shared
				}
				m.LoadBalancers = slices.Concat(m.LoadBalancers, g.LoadBalancers)
			})
		}
		out.DHCPOptions = append(out.DHCPOptions, d.DHCPOptions...)
		out.AddressSets = append(out.AddressSets, d.AddressSets...)
		out.LoadBalancers = append(out.LoadBalancers, d.LoadBalancers...)
		out.StaticMACBindings = append(out.StaticMACBindings, d.StaticMACBindings...)
		for _, m := range d.Meters {
			if !meters[m.Row.Name] {
				meters[m.Row.Name] = true
				out.Meters = append(out.Meters, m)
			}
		}
	}
	return out
}

// mergeNamed appends item to *out under key, unless an earlier item has
// that key: then merge adds item's rows to that one.
func mergeNamed[T any](out *[]T, at map[string]int, key string, item T, merge func(*T)) {
	if i, ok := at[key]; ok {
		merge(&(*out)[i])
		return
	}
	at[key] = len(*out)
	*out = append(*out, item)
}

// mergeMaps is a copy of a with b's entries added (a itself when b is
// empty).
func mergeMaps[V any](a, b map[string]V) map[string]V {
	if len(b) == 0 {
		return a
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]V{}
	}
	maps.Copy(out, b)
	return out
}

// rowCounts counts a network's rows in a zone's Northbound database: by
// table, by table and piece ("table/piece"), and the elements of their
// set and map columns but external_ids ("table.column": a switch's ports,
// a port group's ports, a router's policies, a port's options, ...).
type rowCounts struct {
	tables, pieces, columns map[string]int
}

// String lists the tables' counts, sorted by table.
func (c rowCounts) String() string { return formatCounts(c.tables) }

func formatCounts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// diffCounts lists the tables whose counts differ, as table=a/b.
func diffCounts(a, b map[string]int) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(mergeMaps(a, b))) {
		if a[k] != b[k] {
			out = append(out, fmt.Sprintf("%s=%d/%d", k, a[k], b[k]))
		}
	}
	return strings.Join(out, " ")
}

// networkRows counts the rows of every Northbound table at addr whose
// external_ids name network (k8s.ovn.org/network).
func networkRows(ctx context.Context, addr, network string) (rowCounts, error) {
	m, err := nbdb.FullDatabaseModel()
	if err != nil {
		return rowCounts{}, err
	}
	c, err := ovsdbclient.NewOVSDBClient(m, ovsdbclient.WithEndpoint(addr))
	if err != nil {
		return rowCounts{}, err
	}
	if err := c.Connect(ctx); err != nil {
		return rowCounts{}, err
	}
	defer c.Close()
	if _, err := c.MonitorAll(ctx); err != nil {
		return rowCounts{}, err
	}
	out := rowCounts{tables: map[string]int{}, pieces: map[string]int{}, columns: map[string]int{}}
	for _, table := range c.Cache().Tables() {
		for _, row := range c.Cache().Table(table).Rows() {
			v := reflect.ValueOf(row).Elem()
			f := v.FieldByName("ExternalIDs")
			if !f.IsValid() {
				continue
			}
			ids, _ := f.Interface().(map[string]string)
			if ids[ovnk.ExternalIDNetwork] != network {
				continue
			}
			out.tables[table]++
			out.pieces[table+"/"+ids[ovnk.ExternalIDPiece]]++
			for i := range v.NumField() {
				col := v.Type().Field(i).Tag.Get("ovsdb")
				if k := v.Field(i).Kind(); col != "external_ids" && (k == reflect.Slice || k == reflect.Map) {
					out.columns[table+"."+col] += v.Field(i).Len()
				}
			}
		}
	}
	return out, nil
}

// settledRows is networkRows once two readings a second apart agree (the
// controllers that write after the first packet have written), or the
// last reading after 15 s.
func settledRows(ctx context.Context, addr, network string) (rowCounts, error) {
	var last rowCounts
	for deadline := time.Now().Add(15 * time.Second); ; {
		cur, err := networkRows(ctx, addr, network)
		if err != nil {
			return cur, err
		}
		if last.tables != nil && maps.Equal(cur.pieces, last.pieces) || time.Now().After(deadline) {
			return cur, nil
		}
		last = cur
		time.Sleep(time.Second)
	}
}

// benchClusterConfig is the cluster facts of the benchmark's managers:
// udnkit's defaults with startManager's --service-cidrs and
// --preconfigured-udn-addresses-enable.
func benchClusterConfig() (ovnk.ClusterConfig, error) {
	cfg := ovnk.DefaultClusterConfig()
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	cfg.BindFlags(fs)
	for name, value := range map[string]string{ovnk.FlagServiceCIDRs: serviceCIDRs, "preconfigured-udn-addresses-enable": "true"} {
		if err := fs.Set(name, value); err != nil {
			return cfg, fmt.Errorf("--%s: %w", name, err)
		}
	}
	return cfg, cfg.Validate()
}

// durations are a sub-benchmark's samples.
type durations []time.Duration

// median is the samples' median (the mean of the two middle ones when
// even).
func (d durations) median() time.Duration {
	s := slices.Sorted(slices.Values(d))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// String is the median and the range, in ms.
func (d durations) String() string {
	if len(d) == 0 {
		return "no samples"
	}
	return fmt.Sprintf("median %d ms, range %d–%d ms (n=%d)", d.median().Milliseconds(),
		slices.Min(d).Milliseconds(), slices.Max(d).Milliseconds(), len(d))
}
