// Package primarynet finds the Primary user-defined network of a namespace
// from a reconciler's cache: a UserDefinedNetwork in the namespace, else the
// first ClusterUserDefinedNetwork (by name) whose namespaceSelector matches
// it. Networks being deleted are skipped. The controllers that act on a
// namespace's pods (their addresses, their Services' EndpointSlices) ask it
// the same question and must get the same answer.
package primarynet

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nsselect"
)

// Network is a namespace's Primary network: a UDN (Namespace set) or a CUDN.
type Network struct {
	// Namespace is the UDN's namespace; empty for a CUDN.
	Namespace string
	// Name is the UDN's or CUDN's name, and the name of its NAD in every
	// namespace it spans.
	Name string
	Spec udnv1.NetworkSpec
	// Selector is a CUDN's parsed namespaceSelector; nil for a UDN.
	Selector labels.Selector
}

// NetworkName is the network's name in its NAD config:
// "<namespace>_<name>" for a UDN, "cluster_udn_<name>" for a CUDN.
func (n *Network) NetworkName() string {
	if n.Namespace != "" {
		return ovnk.UDNNetworkName(n.Namespace, n.Name)
	}
	return ovnk.CUDNNetworkName(n.Name)
}

// NADKey is the network's key in a pod's k8s.ovn.org/pod-networks: the
// name of its NAD in the pod's namespace.
func (n *Network) NADKey(podNamespace string) string { return podNamespace + "/" + n.Name }

// Find returns the namespace's Primary network whose spec keep accepts, or
// nil. cudnIndex is a cache index of CUDNs built with nsselect.IndexKeys.
// The UDNs and CUDNs are read without copies; the returned spec is the
// caller's.
func Find(ctx context.Context, c client.Reader, cudnIndex, namespace string, keep func(udnv1.NetworkSpec) bool) (*Network, error) {
	var udns udnv1.UserDefinedNetworkList
	if err := c.List(ctx, &udns, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for _, u := range udns.Items {
		if spec := u.Spec.Network(); u.DeletionTimestamp == nil && keep(spec) {
			return &Network{Namespace: namespace, Name: u.Name, Spec: *spec.DeepCopy()}, nil
		}
	}
	var ns corev1.Namespace
	// Callers ask for namespaces that exist; not finding it means the cache
	// lags, and the error makes the request come back.
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil {
		return nil, fmt.Errorf("namespace %s: %w", namespace, err)
	}
	selecting, err := nsselect.Selecting(ctx, c, cudnIndex, &ns, func(cu *udnv1.ClusterUserDefinedNetwork) bool {
		return cu.DeletionTimestamp == nil && keep(cu.Spec.Network)
	})
	if err != nil || len(selecting) == 0 {
		return nil, err
	}
	cu := selecting[0]
	return &Network{Name: cu.Name, Spec: *cu.Spec.Network.DeepCopy(), Selector: cu.Selector}, nil
}
