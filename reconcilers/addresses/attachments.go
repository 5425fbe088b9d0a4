package addresses

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
	"github.com/udnkit/udnkit/ovnk/netconf"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/reconcilers/addresses/attach"
	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
)

// Event reasons of the attachments besides Primary Layer2 (with
// ReasonInvalidSelectionElement, the ipalloc reasons and
// attach.ReasonHostSubnetMissing).
const (
	// ReasonDuplicateAttachment: the pod names one NAD twice in
	// k8s.v1.cni.cncf.io/networks; it gets no entry for that NAD.
	ReasonDuplicateAttachment = "DuplicateNetworkAttachment"
	// ReasonCrossNamespaceAttachment: the pod names a NAD of another
	// namespace; it gets no entry for it.
	ReasonCrossNamespaceAttachment = "CrossNamespaceNetworkAttachment"
)

// isPrimaryLayer3 selects a namespace's Primary Layer3 network.
func isPrimaryLayer3(spec udnv1.NetworkSpec) bool {
	return spec.Topology == udnv1.NetworkTopologyLayer3 && spec.IsPrimary()
}

// attachNetworks gives the pod its entries on its Primary Layer3 network
// and on the Secondary networks it names, restoring the entries it has and
// writing the new ones in one patch. A refused attachment (a Warning event)
// leaves the others alone; the Primary Layer2 phases follow either way.
func (r *Reconciler) attachNetworks(ctx context.Context, s *podScope) (reconcile.Result, error) {
	pod := &s.pod
	atts, err := r.attachmentsOf(ctx, pod)
	if err != nil {
		return reconcile.Result{}, err
	}
	var res reconcile.Result
	entries := map[string]podannotation.PodNetwork{}
	for _, att := range atts {
		pn, err := r.attachOne(ctx, pod, att)
		if err != nil {
			err = forNamespace(err, pod.Namespace)
			r.warn(pod, reasonOf(err), fmt.Sprintf("failed to allocate addresses on network %s: %v", att.Key, err))
			if reason := reasonOf(err); reason != ipalloc.ReasonInvalidRequest && reason != ReasonInvalidNetwork {
				res.RequeueAfter = retryConflicts
			}
			continue
		}
		if pn != nil {
			entries[att.Key] = *pn
		}
	}
	if len(entries) == 0 {
		return res, nil
	}
	return res, r.writeEntries(ctx, s, entries)
}

// reasonOf is ipalloc.ReasonOf, knowing attach's reasons too.
func reasonOf(err error) string {
	var e *ipalloc.Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ipalloc.ReasonInternalError
}

// attachOne restores the pod's entry on att's network or allocates one (nil:
// the pod has its entry already).
func (r *Reconciler) attachOne(ctx context.Context, pod *corev1.Pod, att attach.Attachment) (*podannotation.PodNetwork, error) {
	nn := client.ObjectKeyFromObject(pod)
	existing, err := podannotation.DecodePodNetwork(pod.Annotations, att.Key)
	if err != nil {
		return nil, &ipalloc.Error{Reason: ipalloc.ReasonInvalidRequest, Message: err.Error()}
	}
	if existing != nil && r.attach.Held(nn, pod.UID, att) {
		return nil, nil
	}
	fresh, err := r.attach.Ensure(att)
	if err != nil {
		return nil, err
	}
	if fresh {
		if err := r.rebuildPool(ctx, att); err != nil {
			return nil, err
		}
	}
	if existing != nil {
		if err := r.attach.Restore(nn, pod.UID, att, existing); err != nil {
			return nil, fmt.Errorf("pod annotation %s cannot be used: %w", podannotation.PodNetworkField(att.Key), err)
		}
		return nil, nil
	}
	pn, err := r.attach.Allocate(nn, pod.UID, att)
	if err != nil {
		return nil, err
	}
	return &pn, nil
}

// writeEntries adds entries to the pod's k8s.ovn.org/pod-networks under its
// resourceVersion, keeping every other network's entry (OVN-Kubernetes'
// "default" one included). A failed write keeps the allocations with the
// pod; the retry writes them again.
func (r *Reconciler) writeEntries(ctx context.Context, s *podScope, entries map[string]podannotation.PodNetwork) error {
	pod := &s.pod
	all, err := podannotation.DecodePodNetworks(pod.Annotations)
	if err != nil {
		return err
	}
	for k, pn := range entries {
		all[k] = pn
	}
	value, err := all.Encode()
	if err != nil {
		return err
	}
	patch := client.MergeFromWithOptions(pod.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[ovnk.AnnotationPodNetworks] = value
	if err := r.client.Patch(ctx, pod, patch); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(s.nn)
			return nil
		}
		return err
	}
	return nil
}

// attachmentsOf lists the pod's attachments besides Primary Layer2: its
// namespace's Primary Layer3 network, and each Secondary network its
// k8s.v1.cni.cncf.io/networks names through a NAD udnkit owns. What cannot
// be attached is reported in a Warning event and left out.
func (r *Reconciler) attachmentsOf(ctx context.Context, pod *corev1.Pod) ([]attach.Attachment, error) {
	var out []attach.Attachment
	primary, err := r.primaryLayer3Of(ctx, pod)
	if err != nil {
		return nil, err
	}
	if primary != nil {
		out = append(out, *primary)
	}
	v, ok := pod.Annotations[ovnk.AnnotationNetworks]
	if !ok {
		return out, nil
	}
	elems, err := podannotation.DecodeNetworkSelections(v, pod.Namespace)
	if err != nil {
		r.warn(pod, ReasonInvalidSelectionElement, fmt.Sprintf("annotation %s: %v", ovnk.AnnotationNetworks, err))
		return out, nil
	}
	count := map[string]int{}
	for _, e := range elems {
		count[e.Namespace+"/"+e.Name]++
	}
	for _, e := range elems {
		key := e.Namespace + "/" + e.Name
		switch {
		case count[key] > 1:
			// Upstream keys the second attachment "ns/name/1"
			// (GetIndexedNADKey), a key no port is built for here.
			r.warn(pod, ReasonDuplicateAttachment, fmt.Sprintf("annotation %s names NAD %s %d times; udnkit attaches a pod to a NAD once, so it gets no address on it", ovnk.AnnotationNetworks, key, count[key]))
			count[key] = 0 // one event
			continue
		case count[key] == 0:
			continue
		case e.Namespace != pod.Namespace:
			r.warn(pod, ReasonCrossNamespaceAttachment, fmt.Sprintf("annotation %s names NAD %s of another namespace; a pod attaches to its own namespace's NADs only", ovnk.AnnotationNetworks, key))
			continue
		}
		att, err := r.secondaryAttachment(ctx, pod, e)
		if err != nil {
			return nil, err
		}
		if att != nil {
			out = append(out, *att)
		}
	}
	return out, nil
}

// primaryLayer3Of is the pod's attachment to its namespace's Primary Layer3
// network, if it has one and udnkit has rendered its NAD there. A MAC the
// default-network NetworkSelectionElement requests is honoured, its IPs
// are not (upstream's overrideActiveNSEWithDefaultNSE keeps node-local IPAM
// on Layer3).
func (r *Reconciler) primaryLayer3Of(ctx context.Context, pod *corev1.Pod) (*attach.Attachment, error) {
	net, err := findSelected(ctx, r.client, pod.Namespace, isPrimaryLayer3)
	if err != nil || net == nil {
		return nil, err
	}
	att, err := r.attachmentThrough(ctx, pod, client.ObjectKey{Namespace: pod.Namespace, Name: net.ref.Name})
	if err != nil || att == nil {
		return nil, err
	}
	if r.cfg.PreconfiguredUDNAddresses {
		if v, ok := pod.Annotations[ovnk.AnnotationDefaultNetwork]; ok {
			e, _, err := podannotation.DecodeDefaultNetworkSelection(v, pod.Namespace)
			if err != nil {
				r.warn(pod, ReasonInvalidSelectionElement, fmt.Sprintf("annotation %s: %v", ovnk.AnnotationDefaultNetwork, err))
				return nil, nil
			}
			att.Request.MAC = e.MacRequest
		}
	}
	return att, nil
}

// secondaryAttachment is the pod's attachment through the NAD e names,
// nil when udnkit does not own that NAD (or it does not exist yet: its
// creation brings the pod back).
func (r *Reconciler) secondaryAttachment(ctx context.Context, pod *corev1.Pod, e *nadv1.NetworkSelectionElement) (*attach.Attachment, error) {
	att, err := r.attachmentThrough(ctx, pod, client.ObjectKey{Namespace: e.Namespace, Name: e.Name})
	if err != nil || att == nil {
		return nil, err
	}
	if att.Network.Primary {
		// Upstream: "unexpected primary network specified with a
		// NetworkSelectionElement" (getPodNADToNetworkMappingWithPredicate).
		r.warn(pod, ReasonInvalidSelectionElement, fmt.Sprintf("annotation %s names NAD %s of a Primary network; Primary networks attach without it", ovnk.AnnotationNetworks, att.Key))
		return nil, nil
	}
	att.Request = attach.Request{IPs: e.IPRequest, MAC: e.MacRequest}
	for _, gw := range e.GatewayRequest {
		if a, ok := netip.AddrFromSlice(gw); ok {
			att.Request.Gateways = append(att.Request.Gateways, a.Unmap())
		}
	}
	return att, nil
}

// attachmentThrough reads the NAD at key and, when udnkit owns it, the
// network its config describes, and on Layer3 the pod's node's host
// subnets of it.
func (r *Reconciler) attachmentThrough(ctx context.Context, pod *corev1.Pod, key client.ObjectKey) (*attach.Attachment, error) {
	var nad nadv1.NetworkAttachmentDefinition
	if err := r.client.Get(ctx, key, &nad); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	n, ok, err := r.networkOfNAD(ctx, &nad)
	if err != nil || !ok {
		return nil, err
	}
	att := &attach.Attachment{Key: key.Namespace + "/" + key.Name, Network: n, Node: pod.Spec.NodeName}
	if n.Topology == attach.TopologyLayer3 {
		var node corev1.Node
		if err := r.client.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, &node); err != nil {
			return nil, client.IgnoreNotFound(err) // a node that is gone takes its pods along
		}
		subnets, err := ovnk.DecodeNodeSubnets(&node)
		if err != nil {
			log.FromContext(ctx).Error(err, "node's host subnets unreadable", "node", node.Name)
		}
		att.HostSubnets = subnets[n.Name]
	}
	return att, nil
}

// networkOfNAD reads the network of a NAD udnkit owns (ok false: one it
// does not own, left alone).
func (r *Reconciler) networkOfNAD(ctx context.Context, nad *nadv1.NetworkAttachmentDefinition) (attach.Network, bool, error) {
	if _, labelled := nad.Labels[ovnk.LabelUserDefinedNetwork]; !labelled || nad.DeletionTimestamp != nil {
		return attach.Network{}, false, nil
	}
	if _, err := nadtrust.Verify(ctx, r.client, nad); err != nil {
		if _, untrusted := nadtrust.IsUntrusted(err); untrusted {
			return attach.Network{}, false, nil
		}
		return attach.Network{}, false, err
	}
	nc, err := netconf.Parse(nad.Spec.Config)
	if err != nil {
		return attach.Network{}, false, nil // Verify parsed it: unreachable
	}
	n := attach.Network{Name: nc.Name, Topology: nc.Topology, Primary: nc.Role == podannotation.RolePrimary}
	if n.Subnets, err = nc.SubnetPrefixes(); err != nil {
		return n, false, nil
	}
	if n.ExcludeSubnets, err = ovnk.ParsePrefixes(nc.ExcludeSubnets); err != nil {
		return n, false, nil
	}
	if n.Primary {
		if n.JoinSubnets, err = ovnk.ParsePrefixes(nc.JoinSubnet); err != nil || len(n.JoinSubnets) == 0 {
			n.JoinSubnets = r.cfg.UDNJoinSubnets
		}
	}
	return n, true, nil
}

// rebuildPool restores into att's new pool every entry already written on
// its network (on Layer3: by pods of its node), oldest pod first, so that
// nothing handed out before a restart is handed out again.
func (r *Reconciler) rebuildPool(ctx context.Context, att attach.Attachment) error {
	keys, err := r.nadKeysOf(ctx, att.Network.Name)
	if err != nil {
		return err
	}
	var opts []client.ListOption
	if att.Network.Topology == attach.TopologyLayer3 {
		opts = append(opts, client.MatchingFields{indexPodNode: att.Node})
	}
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, opts...); err != nil {
		return err
	}
	sortOldestFirst(pods.Items)
	for i := range pods.Items {
		pod := &pods.Items[i]
		if terminal(pod) || pod.Spec.NodeName == "" || pod.Spec.HostNetwork {
			continue
		}
		for _, key := range keys {
			pn, err := podannotation.DecodePodNetwork(pod.Annotations, key)
			if err != nil || pn == nil {
				continue
			}
			held := att
			held.Key = key
			if err := r.attach.Restore(client.ObjectKeyFromObject(pod), pod.UID, held, pn); err != nil {
				log.FromContext(ctx).Error(err, "rebuilding the address pool", "network", attach.PoolID(att), "pod", pod.Namespace+"/"+pod.Name)
			}
		}
	}
	return nil
}

// nadKeysOf are the keys of the NADs of network that udnkit owns.
func (r *Reconciler) nadKeysOf(ctx context.Context, network string) ([]string, error) {
	var list nadv1.NetworkAttachmentDefinitionList
	if err := r.client.List(ctx, &list, client.HasLabels{ovnk.LabelUserDefinedNetwork}); err != nil {
		return nil, err
	}
	var out []string
	for i := range list.Items {
		nad := &list.Items[i]
		if n, ok, err := r.networkOfNAD(ctx, nad); err != nil {
			return nil, err
		} else if ok && n.Name == network {
			out = append(out, nad.Namespace+"/"+nad.Name)
		}
	}
	return out, nil
}

// indexPodNode indexes pods by spec.nodeName: a node's new host subnets
// revisit its pods, and a Layer3 pool is rebuilt from its node's pods.
const indexPodNode = "addresses.pod.nodeName"

func podNode(o client.Object) []string {
	if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
		return []string{p.Spec.NodeName}
	}
	return nil
}

func (r *Reconciler) podsOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.MatchingFields{indexPodNode: o.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(pods.Items))
	for i := range pods.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pods.Items[i])}
	}
	return out
}

// ownedNAD: only NADs with udnkit's label can attach pods here.
func ownedNAD(o client.Object) bool {
	_, ok := o.GetLabels()[ovnk.LabelUserDefinedNetwork]
	return ok
}

// nodeSubnetsChanged passes node creations and the updates that change
// k8s.ovn.org/node-subnets, not the status heartbeats.
var nodeSubnetsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetAnnotations()[ovnk.AnnotationNodeSubnets] != e.ObjectNew.GetAnnotations()[ovnk.AnnotationNodeSubnets]
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}
