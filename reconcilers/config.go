// Package reconcilers turns admitted UserDefinedNetworks and
// ClusterUserDefinedNetworks into the state OVN-Kubernetes nodes and the
// dataplane consume: NetworkAttachmentDefinitions with the CNI NetConf,
// cluster-unique network IDs and tunnel keys, and transit subnets (the UDN
// and CUDN controllers). Its subpackages are the other controllers and
// their libraries: nodes (node IDs, multi-VTEP tunnel IDs, Layer3 host
// subnets), addresses (pod addresses of Primary Layer2 networks), idalloc
// (the integer ID and subnet allocators) and networkids (the network IDs and
// tunnel keys held in one process over idalloc). Every allocator rebuilds its state from
// the cluster's annotations before it allocates, and every write of an
// allocation is guarded by the object's resourceVersion.
package reconcilers

import (
	"flag"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/endpointslicemirror"
	"github.com/udnkit/udnkit/reconcilers/networkids"
	"github.com/udnkit/udnkit/reconcilers/nodes"
)

// Controller names for Config.Controllers.
const (
	ControllerUDN  = "udn"
	ControllerCUDN = "cudn"
	ControllerNode = "node"
	// ControllerEndpointSliceMirror mirrors the EndpointSlices of Services
	// in namespaces with a Primary user-defined network
	// (endpointslicemirror.SetupWithManager).
	ControllerEndpointSliceMirror = "endpointslicemirror"
)

// Config configures the reconcilers.
type Config struct {
	// Cluster are the cluster's facts (join and transit subnets, MTU,
	// OKEP-5233), shared with every component.
	Cluster ovnk.ClusterConfig
	// Controllers lists the controllers to run: udn, cudn, node,
	// endpointslicemirror.
	Controllers []string
	// MaxNetworkID bounds network IDs (1..MaxNetworkID); 4095 in production.
	MaxNetworkID int
	// TunnelKeyFirst and TunnelKeyLast bound the centrally allocated tunnel
	// keys (default: above the 4096 legacy keys, up to 2^24 − 1).
	TunnelKeyFirst, TunnelKeyLast int
	// MaxConcurrentReconciles per controller.
	MaxConcurrentReconciles int
	// FairQueue gives the UDN controller a queue that serves namespaces in
	// turn (fairqueue.ByNamespace), so a flood in one namespace does not hold up
	// another's networks; off, controller-runtime's default queue (FIFO
	// among equal priorities).
	FairQueue bool
	// SingleWriter says this manager is the only writer of IDs and host
	// subnets (it runs under leader election): the check after each write,
	// a consistent read of every network or node straight from the
	// apiserver that lets a second writer's clash be found and yielded, is
	// skipped. It costs O(networks) per new network, so O(networks²) to
	// create a cluster's networks. Without leader election it must be false.
	SingleWriter bool
	// NodeListPage is how many nodes one LIST returns when the node
	// controller reads every node straight from the apiserver (0: 100).
	NodeListPage int64
	// NodeIDSource says who writes the nodes' k8s.ovn.org/node-id: the node
	// controller (allocate) or OVN-Kubernetes' cluster manager (read: the
	// node controller only reads them, profile udn-controllers).
	NodeIDSource nodes.NodeIDSource
}

// DefaultConfig is the production configuration.
func DefaultConfig() Config {
	return Config{
		Cluster:        ovnk.DefaultClusterConfig(),
		Controllers:    []string{ControllerUDN, ControllerCUDN, ControllerNode, ControllerEndpointSliceMirror},
		MaxNetworkID:   ovnk.MaxNetworkID,
		TunnelKeyFirst: ovnk.FirstAllocatedTunnelKey,
		TunnelKeyLast:  ovnk.LastInterconnectKey,
		// A reconcile mostly waits for the apiserver (a deletion's three
		// requests, a creation's ID and NAD writes): four workers keep a
		// burst of deletions from queueing behind two.
		MaxConcurrentReconciles: 4,
		FairQueue:               true,
		NodeIDSource:            nodes.NodeIDsAllocate,
	}
}

// BindFlags registers the reconcilers' own flags on fs (the cluster's facts
// are bound once by the composition root; which controllers run is the
// manager's --controllers).
func (c *Config) BindFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.MaxConcurrentReconciles, "reconciler-workers", c.MaxConcurrentReconciles, "workers per reconciler (udn, cudn, node, endpointslicemirror)")
	fs.Var(&c.NodeIDSource, "node-id-source",
		"who writes the nodes' k8s.ovn.org/node-id: allocate (the node controller) or read (OVN-Kubernetes' cluster manager, with k8s.ovn.org/node-transit-switch-port-ifaddr; a node without them gets no tunnel IDs or host subnets until it has them)")
}

// validate checks the configuration and fills defaults.
func (c *Config) validate() error {
	if err := c.Cluster.Validate(); err != nil {
		return err
	}
	if c.MaxNetworkID < 1 || c.MaxNetworkID > ovnk.MaxNetworkID {
		return fmt.Errorf("max network ID %d is outside [1, %d]", c.MaxNetworkID, ovnk.MaxNetworkID)
	}
	if c.TunnelKeyFirst < ovnk.FirstAllocatedTunnelKey || c.TunnelKeyLast > ovnk.LastInterconnectKey || c.TunnelKeyFirst > c.TunnelKeyLast {
		return fmt.Errorf("tunnel key range [%d, %d] is not inside [%d, %d]", c.TunnelKeyFirst, c.TunnelKeyLast, ovnk.FirstAllocatedTunnelKey, ovnk.LastInterconnectKey)
	}
	for _, name := range c.Controllers {
		switch name {
		case ControllerUDN, ControllerCUDN, ControllerNode, ControllerEndpointSliceMirror:
		default:
			return fmt.Errorf("controllers: unknown controller %q (want udn, cudn, node or endpointslicemirror)", name)
		}
	}
	if c.NodeIDSource == "" {
		c.NodeIDSource = nodes.NodeIDsAllocate
	}
	if err := c.NodeIDSource.Validate(); err != nil {
		return fmt.Errorf("--node-id-source: %w", err)
	}
	if c.MaxConcurrentReconciles < 1 {
		c.MaxConcurrentReconciles = 1
	}
	return nil
}

// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks;clusteruserdefinednetworks,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks/status;clusteruserdefinednetworks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=k8s.ovn.org,resources=userdefinednetworks/finalizers;clusteruserdefinednetworks/finalizers,verbs=update
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=network-attachment-definitions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces;pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controllers cfg.Controllers names (all
// when empty) with mgr; call it once per manager. The UDN and CUDN
// controllers draw network IDs and tunnel keys from one set of allocators,
// built here. The allocators are per process, so several replicas need the
// manager's leader election. node is the node controller
// (nodes.SetupWithManager), for managers that run every controller.
func SetupWithManager(mgr ctrl.Manager, cfg Config) error {
	if len(cfg.Controllers) == 0 {
		cfg.Controllers = DefaultConfig().Controllers
	}
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("reconcilers: %w", err)
	}
	var ids *networkids.Allocators
	for _, name := range cfg.Controllers {
		if ids == nil && (name == ControllerUDN || name == ControllerCUDN) {
			if err := setupIndexes(mgr); err != nil {
				return err
			}
			ids = networkids.New(mgr.GetAPIReader(), cfg.networkIDOptions(), mgr.GetEventRecorder("udnkit-network-ids"))
		}
		var err error
		switch name {
		case ControllerUDN:
			err = (&udnReconciler{networkReconciler: newNetworkReconciler(mgr, &cfg, ids, "udnkit-udn-controller")}).setup(mgr)
		case ControllerCUDN:
			err = (&cudnReconciler{networkReconciler: newNetworkReconciler(mgr, &cfg, ids, "udnkit-cudn-controller")}).setup(mgr)
		case ControllerNode:
			err = nodes.SetupWithManager(mgr, cfg.NodeOptions())
		case ControllerEndpointSliceMirror:
			err = endpointslicemirror.SetupWithManager(mgr, endpointslicemirror.Options{MaxConcurrentReconciles: cfg.MaxConcurrentReconciles, FIFO: !cfg.FairQueue})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// networkIDOptions are the network ID allocators' options from cfg.
func (c *Config) networkIDOptions() networkids.Options {
	return networkids.Options{MaxNetworkID: c.MaxNetworkID, TunnelKeyFirst: c.TunnelKeyFirst, TunnelKeyLast: c.TunnelKeyLast, SingleWriter: c.SingleWriter}
}

// NodeOptions are the node controller's options from cfg.
func (c *Config) NodeOptions() nodes.Options {
	return nodes.Options{MaxConcurrentReconciles: c.MaxConcurrentReconciles, SingleWriter: c.SingleWriter, ListPage: c.NodeListPage, NodeIDs: c.NodeIDSource}
}
