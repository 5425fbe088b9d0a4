package pods

import (
	"context"
	"fmt"
	"slices"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/pods"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/kubevirt"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// nodeInfo is what a port reads of its pod's node.
type nodeInfo struct {
	chassis          string
	local, multiVTEP bool
	node             *corev1.Node
}

// portsOf reads the port input of every pod attached to n through one of
// its trusted NADs: scheduled, not host-network, not finished, with an
// entry for the NAD, on a node with a chassis ID (and, on Layer3, host
// subnets of the network). A pod whose entry cannot be read keeps its last
// good input.
func (r *Reconciler) portsOf(ctx context.Context, n network) ([]pods.Pod, error) {
	nads, err := r.networkNADs(ctx, n.Name)
	if err != nil {
		return nil, err
	}
	nodes, err := r.nodes(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := r.lastGood[n.Name]
	good := map[string]pods.Pod{}
	var out []pods.Pod
	for _, nad := range nads {
		var list corev1.PodList
		if err := r.Client.List(ctx, &list, client.InNamespace(nad.Namespace), client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		enabled := map[string]bool{}
		if n.Topology == base.TopologyLayer2 || n.Topology == ovnk.TopologyLocalnet {
			enabled = kubevirt.PortsEnabled(list.Items)
		}
		nadKey := nad.Namespace + "/" + nad.Name
		secondary := n.conf.Role != podannotation.RolePrimary
		for i := range list.Items {
			for _, key := range entryKeys(&list.Items[i], nadKey, secondary, prev) {
				p, ok := r.portOf(ctx, n, key, &list.Items[i], nodes, enabled, prev)
				if ok {
					out = append(out, p)
					good[p.PortName()] = p
				}
			}
		}
	}
	if r.lastGood == nil {
		r.lastGood = map[string]map[string]pods.Pod{}
	}
	r.lastGood[n.Name] = good
	return out, nil
}

// entryKeys are the pod's k8s.ovn.org/pod-networks keys through the NAD
// (podannotation.AttachedKeys): its key, and "<key>/1", "<key>/2", ... for
// each time the pod names the NAD again (one port each, as upstream's
// addLogicalPortToNetworkForNAD runs per key of
// getPodNADToNetworkMappingWithPredicate); on a Secondary network only
// those its k8s.v1.cni.cncf.io/networks still names. An unreadable
// annotation yields the keys of the ports last built for the pod through
// the NAD, which portOf keeps.
func entryKeys(pod *corev1.Pod, nadKey string, secondary bool, prev map[string]pods.Pod) []string {
	all, err := podannotation.DecodePodNetworkKeys(pod.Annotations)
	var keys []string
	if err == nil {
		keys, err = podannotation.AttachedKeys(slices.Values(all), pod.Annotations, pod.Namespace, nadKey, secondary)
	}
	if err != nil {
		out := []string{nadKey}
		for _, p := range prev {
			if nad, _ := podannotation.NADOfKey(p.NAD); nad == nadKey && p.NAD != nadKey && p.Namespace == pod.Namespace && p.Name == pod.Name {
				out = append(out, p.NAD)
			}
		}
		return out
	}
	return keys
}

// portOf is one pod's port input (ok false: the pod has no port).
func (r *Reconciler) portOf(ctx context.Context, n network, nadKey string, pod *corev1.Pod, nodes map[string]nodeInfo,
	enabled map[string]bool, prev map[string]pods.Pod) (pods.Pod, bool) {
	if !wired(pod) {
		return pods.Pod{}, false
	}
	p := pods.Pod{NAD: nadKey, Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), Node: pod.Spec.NodeName,
		VM: pod.Labels[kubevirt.LabelVMName]}
	logger := log.FromContext(ctx).WithValues("pod", pod.Namespace+"/"+pod.Name, "network", n.Name)
	pn, err := podannotation.DecodePodNetwork(pod.Annotations, nadKey)
	if err == nil && pn == nil {
		return pods.Pod{}, false
	}
	var a podannotation.PodAddresses
	if err == nil {
		a, err = pn.Parse()
	}
	if err != nil {
		last, ok := prev[p.PortName()]
		logger.Error(err, "pod's port kept as last built", "field", podannotation.PodNetworkField(nadKey), "kept", ok)
		r.warn(pod, "no port for the pod on network %s: annotation %s: %v", n.Name, podannotation.PodNetworkField(nadKey), err)
		return last, ok
	}
	node, ok := nodes[p.Node]
	if !ok || node.chassis == "" {
		logger.Info("pod's port waits for its node's chassis ID", "node", p.Node)
		return pods.Pod{}, false
	}
	if n.Topology == base.TopologyLayer3 && node.local {
		// The node's switch exists once the node has host subnets of the
		// network (upstream waits for it: waitForNodeLogicalSwitch).
		if subnets, err := zone.NodeSubnetsFromNode(node.node, n.Name); err != nil || len(subnets) == 0 {
			logger.Info("pod's port waits for its node's host subnets", "node", p.Node, "reason", fmt.Sprint(err))
			return pods.Pod{}, false
		}
	}
	p.Chassis, p.Local, p.MultiVTEP = node.chassis, node.local, node.multiVTEP
	p.MAC, p.IPs, p.TunnelID, p.Gateways = a.MAC, a.IPs, a.TunnelID, a.Gateways
	if e, ok := enabled[pod.Name]; ok {
		p.Enabled = &e
	}
	if _, err := pods.Port(n.Network, p); err != nil {
		logger.Error(err, "pod has no port")
		r.warn(pod, "no port for the pod on network %s: %v", n.Name, err)
		return pods.Pod{}, false
	}
	return p, true
}

// wired says whether a pod has ports at all: scheduled, not host-network
// and not finished (upstream deletes a completed pod's ports).
func wired(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && !pod.Spec.HostNetwork && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// nodes reads every node's chassis ID, zone and number of VTEPs.
func (r *Reconciler) nodes(ctx context.Context) (map[string]nodeInfo, error) {
	var list corev1.NodeList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make(map[string]nodeInfo, len(list.Items))
	for i := range list.Items {
		n := &list.Items[i]
		chassis, _, err := ovnk.DecodeNodeChassisID(n)
		if err != nil {
			log.FromContext(ctx).Error(err, "node's pods wait for a valid chassis ID", "node", n.Name)
		}
		// A malformed encap IPs annotation is the multi-VTEP controller's to
		// report; the node's pods keep single-VTEP ports meanwhile.
		encaps, _ := ovnk.DecodeNodeEncapIPs(n)
		out[n.Name] = nodeInfo{chassis: chassis, local: r.Local == nil || r.Local(n), multiVTEP: len(encaps) > 1, node: n}
	}
	return out, nil
}

// networkNADs are udnkit's live NADs of the network that pass the
// ownership rule, read through the index of NADs by network
// (zone.AnyNetworkField, which names the networks NetworkName does): a
// list of every NAD, each config parsed, made each network's reconcile
// grow with the number of networks.
func (r *Reconciler) networkNADs(ctx context.Context, name string) ([]*nadv1.NetworkAttachmentDefinition, error) {
	var list nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &list, client.HasLabels{ovnk.LabelUserDefinedNetwork}, client.MatchingFields{zone.AnyNetworkField: name},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []*nadv1.NetworkAttachmentDefinition
	for i := range list.Items {
		nad := &list.Items[i]
		if got, ok := NetworkName(nad); !ok || got != name || !nad.DeletionTimestamp.IsZero() {
			continue
		}
		owner, trusted, err := r.guard().Trusted(ctx, nad)
		if err != nil {
			return nil, err
		}
		if trusted && owner.Network == name {
			out = append(out, nad)
		}
	}
	return out, nil
}

func (r *Reconciler) warn(pod *corev1.Pod, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonPodPortFailed, "ProgramPodPort", format, args...)
	}
}
