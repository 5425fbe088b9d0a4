// Package reconcilers turns admitted UserDefinedNetworks and
// ClusterUserDefinedNetworks into the state OVN-Kubernetes nodes and the
// dataplane consume: NetworkAttachmentDefinitions with the CNI NetConf,
// cluster-unique network IDs and tunnel keys, transit subnets, node IDs,
// multi-VTEP tunnel IDs and Layer3 host subnets. Every allocator rebuilds its
// state from the cluster's annotations before it allocates, and every write
// of an allocation is guarded by the object's resourceVersion.
package reconcilers

import (
	"flag"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/udnkit/udnkit/ovnk"
)

// Controller names for Config.Controllers.
const (
	ControllerUDN  = "udn"
	ControllerCUDN = "cudn"
	ControllerNode = "node"
)

// Config configures the reconcilers.
type Config struct {
	// DefaultJoinSubnets are the join subnets of Primary networks that set
	// none, comma-separated, at most one per IP family.
	DefaultJoinSubnets string
	// DefaultTransitSubnets are where the transit subnet search of Primary
	// Layer2 networks starts (OKEP-5094 option 4).
	DefaultTransitSubnets string
	// PreconfiguredUDNAddresses enables OKEP-5233's reservedSubnets,
	// infrastructureSubnets and defaultGatewayIPs in the NetConf.
	PreconfiguredUDNAddresses bool
	// Controllers lists the controllers to run: udn, cudn, node.
	Controllers []string
	// MaxNetworkID bounds network IDs (1..MaxNetworkID); 4095 in production.
	MaxNetworkID int
	// TunnelKeyFirst and TunnelKeyLast bound the centrally allocated tunnel
	// keys (default: above the 4096 legacy keys, up to 2^24 − 1).
	TunnelKeyFirst, TunnelKeyLast int
	// MaxConcurrentReconciles per controller.
	MaxConcurrentReconciles int
}

// DefaultConfig is the production configuration.
func DefaultConfig() Config {
	return Config{
		DefaultJoinSubnets:      "100.65.0.0/16,fd99::/64",
		DefaultTransitSubnets:   ovnk.DefaultTransitSubnetV4.String() + "," + ovnk.DefaultTransitSubnetV6.String(),
		Controllers:             []string{ControllerUDN, ControllerCUDN, ControllerNode},
		MaxNetworkID:            ovnk.MaxNetworkID,
		TunnelKeyFirst:          ovnk.FirstAllocatedTunnelKey,
		TunnelKeyLast:           ovnk.LastInterconnectKey,
		MaxConcurrentReconciles: 2,
	}
}

// BindFlags registers the configuration's flags on fs. Which controllers run
// is the manager's --controllers (cmd/udnkit/app), so Controllers has no flag.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.DefaultJoinSubnets, "udn-join-subnets", c.DefaultJoinSubnets, "default join subnets of Primary networks, comma-separated, one per IP family")
	fs.StringVar(&c.DefaultTransitSubnets, "udn-transit-subnets", c.DefaultTransitSubnets, "default transit subnets of Primary Layer2 networks, comma-separated, one per IP family")
	fs.BoolVar(&c.PreconfiguredUDNAddresses, "preconfigured-udn-addresses-enable", c.PreconfiguredUDNAddresses, "render reservedSubnets, infrastructureSubnets and defaultGatewayIPs of Primary Layer2 networks (OKEP-5233)")
	fs.IntVar(&c.MaxConcurrentReconciles, "reconciler-workers", c.MaxConcurrentReconciles, "workers per reconciler (udn, cudn, node)")
}

// parsed is a validated Config.
type parsed struct {
	Config
	joinSubnets, transitSubnets []netip.Prefix
}

func parseFamilies(field, s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	seen := map[bool]bool{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a CIDR: %w", field, p, err)
		}
		if pfx.Masked() != pfx {
			return nil, fmt.Errorf("%s: %q has host bits set", field, p)
		}
		if seen[pfx.Addr().Is4()] {
			return nil, fmt.Errorf("%s: at most one CIDR per IP family, got %q", field, s)
		}
		seen[pfx.Addr().Is4()] = true
		out = append(out, pfx)
	}
	return out, nil
}

func (c Config) parse() (*parsed, error) {
	p := &parsed{Config: c}
	var err error
	if p.joinSubnets, err = parseFamilies("udn-join-subnets", c.DefaultJoinSubnets); err != nil {
		return nil, err
	}
	if p.transitSubnets, err = parseFamilies("udn-transit-subnets", c.DefaultTransitSubnets); err != nil {
		return nil, err
	}
	if c.MaxNetworkID < 1 || c.MaxNetworkID > ovnk.MaxNetworkID {
		return nil, fmt.Errorf("max network ID %d is outside [1, %d]", c.MaxNetworkID, ovnk.MaxNetworkID)
	}
	if c.TunnelKeyFirst < ovnk.FirstAllocatedTunnelKey || c.TunnelKeyLast > ovnk.LastInterconnectKey || c.TunnelKeyFirst > c.TunnelKeyLast {
		return nil, fmt.Errorf("tunnel key range [%d, %d] is not inside [%d, %d]", c.TunnelKeyFirst, c.TunnelKeyLast, ovnk.FirstAllocatedTunnelKey, ovnk.LastInterconnectKey)
	}
	for _, name := range c.Controllers {
		switch name {
		case ControllerUDN, ControllerCUDN, ControllerNode:
		default:
			return nil, fmt.Errorf("controllers: unknown controller %q (want udn, cudn or node)", name)
		}
	}
	if p.MaxConcurrentReconciles < 1 {
		p.MaxConcurrentReconciles = 1
	}
	return p, nil
}

func (c Config) runs(name string) bool {
	for _, n := range c.Controllers {
		if n == name {
			return true
		}
	}
	return false
}

// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks;clusteruserdefinednetworks,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks/status;clusteruserdefinednetworks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks/finalizers;clusteruserdefinednetworks/finalizers,verbs=update
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=network-attachment-definitions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces;pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// managerState is what the controllers of one manager share, however many
// SetupWithManager calls register them: the UDN and CUDN controllers must
// draw network IDs and tunnel keys from one allocator.
type managerState struct {
	ids      *networkAllocators
	indexErr error
}

var (
	statesMu sync.Mutex
	states   = map[ctrl.Manager]*managerState{}
)

func stateFor(mgr ctrl.Manager, p *parsed) *managerState {
	statesMu.Lock()
	defer statesMu.Unlock()
	st, ok := states[mgr]
	if !ok {
		st = &managerState{ids: newNetworkAllocators(mgr.GetAPIReader(), p)}
		st.indexErr = setupIndexes(mgr)
		states[mgr] = st
	}
	return st
}

// SetupWithManager registers the controllers cfg.Controllers names with mgr
// (all when empty). It may be called once per controller: the calls for one
// manager share one set of allocators (the first call's limits apply). Run
// it before mgr.Start. The allocators are per process, so several replicas
// need the manager's leader election.
func SetupWithManager(mgr ctrl.Manager, cfg Config) error {
	if len(cfg.Controllers) == 0 {
		cfg.Controllers = DefaultConfig().Controllers
	}
	p, err := cfg.parse()
	if err != nil {
		return fmt.Errorf("reconcilers: %w", err)
	}
	st := stateFor(mgr, p)
	if st.indexErr != nil {
		return st.indexErr
	}
	ids := st.ids
	if p.runs(ControllerUDN) {
		if err := (&udnReconciler{networkReconciler: newNetworkReconciler(mgr, p, ids, "udnkit-udn-controller")}).setup(mgr); err != nil {
			return err
		}
	}
	if p.runs(ControllerCUDN) {
		if err := (&cudnReconciler{networkReconciler: newNetworkReconciler(mgr, p, ids, "udnkit-cudn-controller")}).setup(mgr); err != nil {
			return err
		}
	}
	if p.runs(ControllerNode) {
		if err := newNodeReconciler(mgr, p).setup(mgr); err != nil {
			return err
		}
	}
	return nil
}
