package networkpolicy

import (
	"context"
	"maps"
	"slices"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/networkpolicy"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// read fills net's policies, pods and namespaces: for a Primary network
// the NetworkPolicies of the namespaces of its trusted NADs and their pods
// with an entry for the network, for a Secondary one the
// MultiNetworkPolicies for its NADs and every pod's entries for them
// (podsOf: each of a NAD named twice); then the namespaces Build reads
// (Network.NamespacesRead), each got by name, so that a network's reconcile
// does not grow with the cluster's namespaces. A network without policies
// has no rows: neither pods nor namespaces are read.
func (r *Reconciler) read(ctx context.Context, net *networkpolicy.Network, primary bool) error {
	nads, err := r.networkNADs(ctx, net.Name, primary)
	if err != nil {
		return err
	}
	keys := map[string]bool{}
	for _, nad := range nads {
		keys[nad.Namespace+"/"+nad.Name] = true
	}
	if primary {
		net.Policies, err = r.policies(ctx, nads)
	} else {
		net.Policies, err = r.multiPolicies(ctx, keys)
	}
	if err != nil || len(net.Policies) == 0 {
		return err
	}
	if err := r.readPods(ctx, net, nads, keys, primary); err != nil {
		return err
	}
	net.Namespaces, err = r.namespaces(ctx, net.NamespacesRead())
	return err
}

// policies are the NetworkPolicies of the NADs' namespaces.
func (r *Reconciler) policies(ctx context.Context, nads []*nadv1.NetworkAttachmentDefinition) ([]networkingv1.NetworkPolicy, error) {
	var out []networkingv1.NetworkPolicy
	for _, nad := range nads {
		var nps networkingv1.NetworkPolicyList
		if err := r.Client.List(ctx, &nps, client.InNamespace(nad.Namespace)); err != nil {
			return nil, err
		}
		out = append(out, nps.Items...)
	}
	return out, nil
}

// readPods fills net's pods: a Primary network's from its NADs'
// namespaces, a Secondary network's from every pod. The pods and nodes
// are the cache's own (not copied): only read, their labels shared with
// net.
func (r *Reconciler) readPods(ctx context.Context, net *networkpolicy.Network, nads []*nadv1.NetworkAttachmentDefinition,
	keys map[string]bool, primary bool) error {
	local, err := r.localNodes(ctx, net)
	if err != nil {
		return err
	}
	if !primary {
		var pods corev1.PodList
		if err := r.Client.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
			return err
		}
		nadKeys := sortedKeys(keys)
		for i := range pods.Items {
			net.Pods = append(net.Pods, podsOf(ctx, &pods.Items[i], nadKeys, true, local)...)
		}
		return nil
	}
	for _, nad := range nads {
		var pods corev1.PodList
		if err := r.Client.List(ctx, &pods, client.InNamespace(nad.Namespace), client.UnsafeDisableDeepCopy); err != nil {
			return err
		}
		nadKeys := []string{nad.Namespace + "/" + nad.Name}
		for i := range pods.Items {
			net.Pods = append(net.Pods, podsOf(ctx, &pods.Items[i], nadKeys, false, local)...)
		}
	}
	return nil
}

// namespaces are the named namespaces that exist, with their labels and
// decoded ACL logging (a namespace whose logging does not decode has
// none).
func (r *Reconciler) namespaces(ctx context.Context, names []string) ([]networkpolicy.Namespace, error) {
	out := make([]networkpolicy.Namespace, 0, len(names))
	for _, name := range names {
		var ns corev1.Namespace
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, &ns); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return nil, err
		}
		logging, err := ovnk.DecodeACLLogging(ns.Annotations)
		if err != nil {
			log.FromContext(ctx).Info("namespace's ACL logging disabled", "namespace", ns.Name, "reason", err.Error())
		}
		out = append(out, networkpolicy.Namespace{Name: ns.Name, Labels: ns.Labels, Logging: logging})
	}
	return out, nil
}

func sortedKeys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

// networkNADs are the network's live NADs that pass the ownership rule: a
// Primary network's from the index of them (zone.NADNetworkField), a
// Secondary network's, which that index does not hold, from the index of
// every network's (zone.AnyNetworkField).
func (r *Reconciler) networkNADs(ctx context.Context, network string, primary bool) ([]*nadv1.NetworkAttachmentDefinition, error) {
	if primary {
		return zone.TrustedNamingNADs(ctx, r.Client, r.guard(), network)
	}
	var list nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &list, client.HasLabels{ovnk.LabelUserDefinedNetwork}, client.MatchingFields{zone.AnyNetworkField: network}); err != nil {
		return nil, err
	}
	var out []*nadv1.NetworkAttachmentDefinition
	for i := range list.Items {
		nad := &list.Items[i]
		if n, ok := r.networkName(nad); !ok || n != network || zone.Deleted(nad) {
			continue
		}
		owner, trusted, err := r.guard().Trusted(ctx, nad)
		if err != nil {
			return nil, err
		}
		if trusted && owner.Network == network {
			out = append(out, nad)
		}
	}
	return out, nil
}

// podsOf are a pod's interfaces on the network through nadKeys, one per
// key podannotation.AttachedKeys gives of each NAD (a pod naming a
// Secondary NAD twice has two; on a Secondary network only those its
// k8s.v1.cni.cncf.io/networks still names), as upstream's getPodNADKeys
// gives the keys whose ports policies select and whose addresses
// (GetPodIPsOfNetwork) pod selector address sets hold: not of a finished
// pod, addresses from the key's entry and, on one of the zone's nodes
// where its port exists, the key's port (getNewLocalPolicyPorts). A pod
// whose pod-networks does not decode has none, one whose selection does
// not decode every entry of the NAD; an entry that does not parse is left
// out.
func podsOf(ctx context.Context, pod *corev1.Pod, nadKeys []string, secondary bool, local map[string]bool) []networkpolicy.Pod {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	all, err := podannotation.DecodePodNetworks(pod.Annotations)
	if err != nil {
		log.FromContext(ctx).Info("pod left out of network policies", "pod", pod.Namespace+"/"+pod.Name, "reason", err.Error())
		return nil
	}
	var out []networkpolicy.Pod
	for _, nadKey := range nadKeys {
		keys, err := podannotation.AttachedKeys(maps.Keys(all), pod.Annotations, pod.Namespace, nadKey, secondary)
		if err != nil {
			// The pod-port controller keeps the ports it last built for
			// a pod whose selection it cannot read: those stay members,
			// under their policies' default deny.
			log.FromContext(ctx).Info("pod's unreadable selection leaves every entry in network policies", "pod", pod.Namespace+"/"+pod.Name,
				"reason", err.Error())
			keys = podannotation.KeysOfNAD(maps.Keys(all), nadKey)
		}
		for _, key := range keys {
			a, err := all[key].Parse()
			if err != nil {
				log.FromContext(ctx).Info("pod's interface left out of network policies", "pod", pod.Namespace+"/"+pod.Name,
					"field", podannotation.PodNetworkField(key), "reason", err.Error())
				continue
			}
			p := networkpolicy.Pod{Namespace: pod.Namespace, Name: pod.Name, Labels: pod.Labels}
			for _, ip := range a.IPs {
				p.IPs = append(p.IPs, ip.Addr())
			}
			if local[pod.Spec.NodeName] && !pod.Spec.HostNetwork {
				p.Port = ovnk.PodPortName(key, pod.Namespace, pod.Name)
			}
			out = append(out, p)
		}
	}
	return out
}

// localNodes are the zone's nodes that hold the network's pod ports, as
// the pod-port controller writes them: with a chassis ID and, on Layer3,
// host subnets of the network.
func (r *Reconciler) localNodes(ctx context.Context, net *networkpolicy.Network) (map[string]bool, error) {
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	r.subnets.Retain(nodes.Items)
	out := map[string]bool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if r.Local != nil && !r.Local(n) {
			continue
		}
		if chassis, _, err := ovnk.DecodeNodeChassisID(n); err != nil || chassis == "" {
			continue
		}
		if net.Topology == base.TopologyLayer3 {
			if subnets, err := r.subnets.Of(n, net.Name); err != nil || len(subnets) == 0 {
				continue
			}
		}
		out[n.Name] = true
	}
	return out, nil
}
