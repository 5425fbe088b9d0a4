// Package addresses gives pods of Primary Layer2 networks their addresses
// (OKEP-5233 predefined addresses, IPAMClaims, and the KubeVirt
// live-migration design): it writes k8s.ovn.org/pod-networks, or a Warning
// event when the requested addresses conflict, keeps IPAMClaim status, and
// ensures the ovn-kubernetes/default NAD stub.
package addresses

import (
	"flag"
	"fmt"
	"net/netip"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Config configures the address controllers.
type Config struct {
	// PreconfiguredUDNAddresses is OVN-Kubernetes'
	// preconfigured-udn-addresses-enable: honour the v1.multus-cni.io/default-network
	// NetworkSelectionElement (ips, mac, ipam-claim-reference) and keep the
	// ovn-kubernetes/default NAD stub.
	PreconfiguredUDNAddresses bool
	// ServiceCIDRs get a route via the network's gateway in each pod's
	// annotation, per IP family.
	ServiceCIDRs []netip.Prefix
}

// DefaultConfig is the feature off, as upstream, and Kubernetes' default
// service ranges.
func DefaultConfig() Config {
	return Config{ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16"), netip.MustParsePrefix("fd00:10:96::/112")}}
}

// BindFlags registers --preconfigured-udn-addresses-enable and --k8s-service-cidrs.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.PreconfiguredUDNAddresses, "preconfigured-udn-addresses-enable", c.PreconfiguredUDNAddresses,
		"honour requested IPs, MACs and IPAMClaim references in v1.multus-cni.io/default-network on Primary Layer2 networks, and keep the ovn-kubernetes/default NAD")
	fs.Func("k8s-service-cidrs", "comma-separated service CIDRs routed via the pod's gateway (default "+prefixes(c.ServiceCIDRs)+")", func(s string) error {
		var out []netip.Prefix
		for _, f := range strings.Split(s, ",") {
			p, err := netip.ParsePrefix(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("k8s-service-cidrs: %w", err)
			}
			out = append(out, p)
		}
		c.ServiceCIDRs = out
		return nil
	})
}

func prefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update
// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks;clusteruserdefinednetworks,verbs=get;list;watch
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=ipamclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=ipamclaims/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=network-attachment-definitions,verbs=get;list;watch;create;update;patch

// SetupWithManager registers the pod address controller and, when the
// feature is on, the default NAD stub controller.
func SetupWithManager(mgr ctrl.Manager, cfg Config) error {
	_, err := Setup(mgr, cfg)
	return err
}

// Setup is SetupWithManager that also returns the pod reconciler, whose
// MigratedVMs the dataplane reads.
func Setup(mgr ctrl.Manager, cfg Config) (*Reconciler, error) {
	r := NewReconciler(mgr.GetClient(), mgr.GetEventRecorder("udnkit-addresses"), cfg)
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if cfg.PreconfiguredUDNAddresses {
		if err := setupDefaultNAD(mgr); err != nil {
			return nil, err
		}
	}
	return r, nil
}
