package addresses

import (
	"context"
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nsselect"
	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
	"github.com/udnkit/udnkit/reconcilers/internal/primarynet"
)

// networkRef names a Primary Layer2 network: a UDN (Namespace set) or a CUDN.
type networkRef struct {
	Namespace string
	Name      string
}

// ID is unique across UDNs and CUDNs.
func (n networkRef) ID() string {
	if n.Namespace != "" {
		return "udn/" + n.Namespace + "/" + n.Name
	}
	return "cudn/" + n.Name
}

// Key is the network's key in a pod's k8s.ovn.org/pod-networks: the name of
// its NAD in the pod's namespace.
func (n networkRef) Key(podNamespace string) string { return podNamespace + "/" + n.Name }

// NetworkName is the network's name in its NAD config, as IPAMClaims' spec.network
// carries it: "<namespace>_<name>" for a UDN, "cluster_udn_<name>" for a CUDN.
func (n networkRef) NetworkName() string {
	if n.Namespace != "" {
		return ovnk.UDNNetworkName(n.Namespace, n.Name)
	}
	return ovnk.CUDNNetworkName(n.Name)
}

// primaryLayer2 is the Primary network a namespace's pods get addresses
// from: Layer2 here, Layer3 through package attach (attachments.go).
type primaryLayer2 struct {
	ref      networkRef
	spec     udnv1.NetworkSpec
	selector labels.Selector // CUDN only
}

func eligible(spec udnv1.NetworkSpec) bool {
	return spec.Layer2 != nil && spec.IsPrimary() && len(spec.Layer2.Subnets) > 0 &&
		(spec.Layer2.IPAM == nil || spec.Layer2.IPAM.Mode != udnv1.IPAMDisabled)
}

// indexCUDNNamespaces indexes CUDNs by the namespaces their selector names
// (nsselect.IndexKeys): every pod's reconcile looks its network up, and
// listing every CUDN for it made the addresses cost grow with pods times
// CUDNs.
const indexCUDNNamespaces = "addresses.cudn.selectedNamespaces"

// findSelected returns the namespace's network that ok accepts: its UDN,
// else the first CUDN (by name) whose namespaceSelector matches.
func findSelected(ctx context.Context, c client.Reader, namespace string, ok func(udnv1.NetworkSpec) bool) (*primaryLayer2, error) {
	n, err := primarynet.Find(ctx, c, indexCUDNNamespaces, namespace, ok)
	if err != nil || n == nil {
		return nil, err
	}
	return &primaryLayer2{ref: networkRef{Namespace: n.Namespace, Name: n.Name}, spec: n.Spec, selector: n.Selector}, nil
}

// namespaces lists the namespaces the network spans.
func (n *primaryLayer2) namespaces(ctx context.Context, c client.Reader) ([]string, error) {
	if n.ref.Namespace != "" {
		return []string{n.ref.Namespace}, nil
	}
	list, err := nsselect.Namespaces(ctx, c, n.selector)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list))
	for _, ns := range list {
		out = append(out, ns.Name)
	}
	return out, nil
}

// poolConfig turns a Layer2 spec into the allocator's configuration. With
// preconfigured-udn-addresses-enable off OVN-Kubernetes ignores
// reservedSubnets, infrastructureSubnets and defaultGatewayIPs (they are not
// in the NetConf), so the pool does too: the gateway, the management port
// and every pod address then agree with the NAD and OVN.
func poolConfig(spec udnv1.NetworkSpec, predefined bool) (ipalloc.Config, error) {
	l2 := spec.Layer2
	var cfg ipalloc.Config
	parse := func(field string, in []string) ([]netip.Prefix, error) {
		var out []netip.Prefix
		for i, s := range in {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("spec.layer2.%s[%d]: %w", field, i, err)
			}
			out = append(out, p)
		}
		return out, nil
	}
	var err error
	if cfg.Subnets, err = parse("subnets", spec.SubnetCIDRs()); err != nil {
		return cfg, err
	}
	if !predefined {
		return cfg, nil
	}
	if cfg.InfrastructureSubnets, err = parse("infrastructureSubnets", strs(l2.InfrastructureSubnets)); err != nil {
		return cfg, err
	}
	if cfg.ReservedSubnets, err = parse("reservedSubnets", strs(l2.ReservedSubnets)); err != nil {
		return cfg, err
	}
	for i, g := range l2.DefaultGatewayIPs {
		a, err := netip.ParseAddr(string(g))
		if err != nil {
			return cfg, fmt.Errorf("spec.layer2.defaultGatewayIPs[%d]: %w", i, err)
		}
		cfg.DefaultGatewayIPs = append(cfg.DefaultGatewayIPs, a)
	}
	return cfg, nil
}

func strs[S ~string](in []S) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = string(s)
	}
	return out
}
