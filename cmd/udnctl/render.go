package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/cel"
	"github.com/udnkit/udnkit/dataplane/controllers/layer3"
	"github.com/udnkit/udnkit/dataplane/controllers/policy"
	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
)

// network is a valid UDN or CUDN from a file, with what the reconcilers
// derive from it.
type network struct {
	obj      *unstructured.Unstructured
	spec     udnv1.NetworkSpec
	name     string   // OVN network name
	nadName  string   // NAD name (the CR's)
	targets  []string // namespaces that get a NAD
	labels   map[string]string
	isPrimL2 bool
}

// loadNetworks reads FILE, refuses it unless every network in it is valid
// (as validate would judge it), and returns the networks in file order.
func loadNetworks(ctx context.Context, file string, namespaces []string, stderr io.Writer) ([]network, int) {
	objs, err := readObjects(file)
	if err != nil {
		fmt.Fprintf(stderr, "udnctl: %v\n", err)
		return nil, 2
	}
	v, err := cel.NewDefault()
	if err != nil {
		fmt.Fprintf(stderr, "udnctl: loading the CRDs: %v\n", err)
		return nil, 2
	}
	var out []network
	for _, obj := range objs {
		spec, _, ok := networkSpec(obj)
		if !ok {
			continue
		}
		res, err := v.Validate(ctx, obj, nil)
		if err != nil || !res.OK() {
			fmt.Fprintf(stderr, "udnctl: %s is invalid (see udnctl validate): %v %s\n", identity(obj), err, strings.Join(res.Violations(), "; "))
			return nil, 1
		}
		n := network{obj: obj, spec: spec, nadName: obj.GetName(), labels: obj.GetLabels(),
			isPrimL2: spec.Layer2 != nil && spec.IsPrimary()}
		if obj.GetKind() == "UserDefinedNetwork" {
			ns := obj.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			n.name, n.targets = ovnk.UDNNetworkName(ns, obj.GetName()), []string{ns}
		} else {
			n.name, n.targets = ovnk.CUDNNetworkName(obj.GetName()), namespaces
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		fmt.Fprintf(stderr, "udnctl: %s holds no UserDefinedNetwork or ClusterUserDefinedNetwork\n", file)
		return nil, 2
	}
	return out, 0
}

// nads renders the NetworkAttachmentDefinitions the nad reconciler would
// write for n (netconf.NewNAD, the reconciler's own renderer), without the
// network-id and tunnel-keys annotations only a cluster can assign.
func (n network) nads(cluster ovnk.ClusterConfig) ([]*nadv1.NetworkAttachmentDefinition, error) {
	transit, err := netconf.TransitSubnetsFor(n.spec, cluster)
	if err != nil {
		return nil, err
	}
	src := netconf.NADSource{Kind: n.obj.GetKind(), Spec: n.spec, Meta: metav1.ObjectMeta{
		Name: n.obj.GetName(), Namespace: n.obj.GetNamespace(), UID: n.obj.GetUID(),
		Labels: n.obj.GetLabels(), Annotations: n.obj.GetAnnotations()}}
	if src.Meta.Namespace == "" && src.Kind == udnv1.KindUserDefinedNetwork {
		src.Meta.Namespace = "default"
	}
	var out []*nadv1.NetworkAttachmentDefinition
	for _, ns := range n.targets {
		nad, err := netconf.NewNAD(src, ns, cluster, transit, ovnk.NetworkIDs{})
		if err != nil {
			return nil, err
		}
		delete(nad.Annotations, ovnk.AnnotationNetworkID)
		delete(nad.Annotations, ovnk.AnnotationTunnelKeys)
		out = append(out, nad)
	}
	return out, nil
}

func render(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "manifest with UserDefinedNetworks and ClusterUserDefinedNetworks")
	namespaces := fs.String("namespaces", "NAMESPACE", "comma-separated namespaces a CUDN's selector matches (no cluster to ask)")
	cfg := ovnk.DefaultClusterConfig()
	cfg.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *file == "" {
		fmt.Fprintln(stderr, "udnctl render: -f FILE is required")
		return 2
	}
	nets, code := loadNetworks(ctx, *file, strings.Split(*namespaces, ","), stderr)
	if code != 0 {
		return code
	}
	for _, n := range nets {
		nads, err := n.nads(cfg)
		if err != nil {
			fmt.Fprintf(stderr, "udnctl render: %s: %v\n", identity(n.obj), err)
			return 1
		}
		for _, nad := range nads {
			data, err := yaml.Marshal(nad)
			if err != nil {
				fmt.Fprintf(stderr, "udnctl render: %v\n", err)
				return 1
			}
			fmt.Fprintf(stdout, "---\n# %s (network %s; k8s.ovn.org/network-id and k8s.ovn.org/tunnel-keys are assigned by the cluster)\n%s", identity(n.obj), n.name, data)
		}
	}
	return 0
}

func plan(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "manifest with UserDefinedNetworks and ClusterUserDefinedNetworks")
	nodes := fs.Int("nodes", 3, "number of nodes (node-1 ... node-N, node IDs from 2, all in this OVN zone)")
	var services serviceFlag
	fs.Var(&services, flagService, "a UDN-enabled service as it exists in the cluster, NS/NAME=CLUSTERIP[,CLUSTERIP] (repeatable): "+
		"Primary Layer2 networks route its ClusterIPs to their management port; a service of --"+ovnk.FlagUDNAllowedDefaultServices+" not given is planned as absent")
	cfg := ovnk.DefaultClusterConfig()
	cfg.BindFlags(fs)
	var egress policy.Options
	egress.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *file == "" || *nodes < 1 || *nodes > ovnk.MaxNodeID-ovnk.FirstNodeID {
		fmt.Fprintln(stderr, "udnctl plan: -f FILE and --nodes N (1 or more) are required")
		return 2
	}
	enabled, absent, err := services.enabled(cfg.UDNAllowedDefaultServices, fs.Lookup(ovnk.FlagUDNAllowedDefaultServices).Value.String())
	if err != nil {
		fmt.Fprintf(stderr, "udnctl plan: %v\n", err)
		return 2
	}
	nets, code := loadNetworks(ctx, *file, []string{"NAMESPACE"}, stderr)
	if code != 0 {
		return code
	}
	nodeObjs, err := planNodes(*nodes, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "udnctl plan: %v\n", err)
		return 1
	}
	var l2Nodes []topology.Layer2Node
	for _, node := range nodeObjs {
		n, _, err := zone.Layer2NodeFromNode(node)
		if err != nil {
			fmt.Fprintf(stderr, "udnctl plan: %v\n", err)
			return 1
		}
		n.Local = true
		l2Nodes = append(l2Nodes, n)
	}
	l3 := &layer3.Reconciler{Cluster: cfg, EgressIP: egress.EgressIP, Topology: true}
	// Network IDs and tunnel keys as a fresh cluster would allocate them,
	// network by network (OKEP-5094 option 3: the switch keeps the legacy key).
	nextID, nextKey := 1, ovnk.FirstAllocatedTunnelKey
	notedAbsent := false
	for _, n := range nets {
		var desired *rows.Desired
		switch {
		case n.isPrimL2:
			nads, err := n.nads(cfg)
			if err != nil {
				fmt.Fprintf(stderr, "udnctl plan: %s: %v\n", identity(n.obj), err)
				return 1
			}
			legacy, err := ovnk.LegacyTransitSwitchKey(nextID)
			if err != nil {
				fmt.Fprintf(stderr, "udnctl plan: %s: %v\n", identity(n.obj), err)
				return 1
			}
			keys, _ := json.Marshal([]int{legacy, nextKey})
			nad := nads[0]
			nad.Annotations = map[string]string{ovnk.AnnotationTunnelKeys: string(keys), ovnk.AnnotationNetworkID: strconv.Itoa(nextID)}
			nextID, nextKey = nextID+1, nextKey+1
			net, _, err := zone.Layer2NetworkFromNAD(nad)
			if err == nil {
				err = zone.ClusterFacts(cfg, nad, &net)
			}
			if err == nil {
				net.Services, net.EgressIP = enabled, egress.EgressIP
				desired, err = topology.Layer2Topology(net, l2Nodes)
			}
			if err != nil {
				fmt.Fprintf(stderr, "udnctl plan: %s: %v\n", identity(n.obj), err)
				return 1
			}
		case n.spec.Layer3 != nil && n.spec.IsPrimary():
			ds, err := layer3Plan(n, l3, nodeObjs, nextID, enabled)
			if err != nil {
				fmt.Fprintf(stderr, "udnctl plan: %s: %v\n", identity(n.obj), err)
				return 1
			}
			nextID++
			if !egress.EgressIP {
				fmt.Fprintf(stdout, "# %s (network %s): no subnet policies without --enable-egress-ip (upstream writes them only with EgressIP)\n",
					identity(n.obj), n.name)
			}
			for _, d := range ds[:len(ds)-1] {
				fmt.Fprintf(stdout, "# %s\n", identity(n.obj))
				d.Describe(stdout)
			}
			desired = ds[len(ds)-1]
		default:
			d, ok, err := podlessSwitch(n, cfg, nextID)
			if err != nil {
				fmt.Fprintf(stderr, "udnctl plan: %s: %v\n", identity(n.obj), err)
				return 1
			}
			if !ok {
				fmt.Fprintf(stdout, "# %s (network %s): udnkit programs no OVN rows for %s %s networks before their pods attach\n",
					identity(n.obj), n.name, n.spec.Role(), n.spec.Topology)
				continue
			}
			if n.spec.Topology == udnv1.NetworkTopologyLayer2 {
				nextID++
			}
			desired = d
		}
		if n.isPrimL2 && len(absent) > 0 && !notedAbsent {
			notedAbsent = true
			fmt.Fprintf(stdout, "# UDN-enabled services without --%s, planned as absent (no routes): %s\n", flagService, strings.Join(absent, ","))
		}
		fmt.Fprintf(stdout, "# %s\n", identity(n.obj))
		desired.Describe(stdout)
	}
	return 0
}
