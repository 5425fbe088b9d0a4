package attach

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	ipamclaimsv1alpha1 "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/nadtrust"
	"github.com/udnkit/udnkit/ovnk/netconf"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// Reasons of the Warning events on a pod whose attachment is refused,
// besides ipalloc's and ReasonHostSubnetMissing.
const (
	// ReasonInvalidSelectionElement: a NetworkSelectionElement annotation
	// cannot be read, or names what cannot be attached that way.
	ReasonInvalidSelectionElement = "InvalidNetworkSelectionElement"
	// ReasonCrossNamespaceAttachment: the pod names a NAD of another
	// namespace; it gets no entry for it.
	ReasonCrossNamespaceAttachment = "CrossNamespaceNetworkAttachment"
)

// Refusal is an attachment the pod asks for and does not get: the reason
// and message of a Warning event on it.
type Refusal struct{ Reason, Message string }

// Resolver reads pods' attachments: NADs, their owners and nodes, through a
// cache.
type Resolver struct {
	Reader client.Reader
	// DefaultJoinSubnets are a Primary network's join subnets when its
	// NAD's config names none.
	DefaultJoinSubnets []netip.Prefix
	// PodNodeIndex is the cache's index of pods by spec.nodeName.
	PodNodeIndex string
}

// Secondaries are the attachments of the Secondary networks the pod names
// in k8s.v1.cni.cncf.io/networks (both forms), through NADs of its own
// namespace that udnkit owns; a NAD udnkit does not own, or that does not
// exist yet (its creation brings the pod back), is left alone. A NAD named
// again is another attachment (another interface) with its own entry,
// keyed "ns/name/1", "ns/name/2", ... (podannotation.SelectionKeys, as
// upstream's getPodNADToNetworkMappingWithPredicate keys them). A refusal
// is reported once per NAD, however often the pod names it.
func (r Resolver) Secondaries(ctx context.Context, pod *corev1.Pod) ([]Attachment, []Refusal, error) {
	v, ok := pod.Annotations[ovnk.AnnotationNetworks]
	if !ok {
		return nil, nil, nil
	}
	elems, err := podannotation.DecodeNetworkSelections(v, pod.Namespace)
	if err != nil {
		return nil, []Refusal{{ReasonInvalidSelectionElement, fmt.Sprintf("annotation %s: %v", ovnk.AnnotationNetworks, err)}}, nil
	}
	var out []Attachment
	var refused []Refusal
	for i, entryKey := range podannotation.SelectionKeys(elems) {
		e := elems[i]
		key := e.Namespace + "/" + e.Name
		first := entryKey == key
		if e.Namespace != pod.Namespace {
			if first {
				refused = append(refused, Refusal{ReasonCrossNamespaceAttachment, fmt.Sprintf(
					"annotation %s names NAD %s of another namespace; a pod attaches to its own namespace's NADs only", ovnk.AnnotationNetworks, key)})
			}
			continue
		}
		att, err := r.Through(ctx, pod, client.ObjectKey{Namespace: e.Namespace, Name: e.Name})
		if err != nil {
			return nil, nil, err
		}
		if att == nil {
			continue
		}
		if att.Network.Primary {
			// Upstream: "unexpected primary network specified with a
			// NetworkSelectionElement" (getPodNADToNetworkMappingWithPredicate).
			if first {
				refused = append(refused, Refusal{ReasonInvalidSelectionElement, fmt.Sprintf(
					"annotation %s names NAD %s of a Primary network; Primary networks attach without it", ovnk.AnnotationNetworks, key)})
			}
			continue
		}
		att.Key = entryKey
		att.Request = requestOf(e)
		if att.Request.Claim != "" && !att.Network.HonoursClaims() {
			// Upstream logs "referencing an IPAMClaim on network %q which
			// does not honor it" and allocates as without it
			// (pkg/allocator/pod/pod_annotation.go).
			log.FromContext(ctx).Info("ignoring an IPAMClaim reference on a network without persistent IPs",
				"pod", pod.Namespace+"/"+pod.Name, "nad", entryKey, "claim", att.Request.Claim)
			att.Request.Claim = ""
		}
		out = append(out, *att)
	}
	return out, refused, nil
}

func requestOf(e *nadv1.NetworkSelectionElement) Request {
	req := Request{IPs: e.IPRequest, MAC: e.MacRequest, Claim: e.IPAMClaimReference}
	for _, gw := range e.GatewayRequest {
		if a, ok := netip.AddrFromSlice(gw); ok {
			req.Gateways = append(req.Gateways, a.Unmap())
		}
	}
	return req
}

// Through reads the NAD at key and, when udnkit owns it, returns the pod's
// attachment through it (nil: no such NAD, or not udnkit's), with on
// Layer3 the pod's node's host subnets of the network.
func (r Resolver) Through(ctx context.Context, pod *corev1.Pod, key client.ObjectKey) (*Attachment, error) {
	var nad nadv1.NetworkAttachmentDefinition
	if err := r.Reader.Get(ctx, key, &nad); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	n, ok, err := r.NetworkOfNAD(ctx, &nad)
	if err != nil || !ok {
		return nil, err
	}
	att := &Attachment{Key: key.Namespace + "/" + key.Name, Network: n, Node: pod.Spec.NodeName}
	if n.Topology == TopologyLayer3 {
		var node corev1.Node
		if err := r.Reader.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, &node); err != nil {
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

// NetworkOfNAD reads the network of a NAD udnkit owns (nadtrust's rule);
// ok is false for one it does not own, which is left alone.
func (r Resolver) NetworkOfNAD(ctx context.Context, nad *nadv1.NetworkAttachmentDefinition) (Network, bool, error) {
	if _, labelled := nad.Labels[ovnk.LabelUserDefinedNetwork]; !labelled || nad.DeletionTimestamp != nil {
		return Network{}, false, nil
	}
	if _, err := nadtrust.Verify(ctx, r.Reader, nad); err != nil {
		if _, untrusted := nadtrust.IsUntrusted(err); untrusted {
			return Network{}, false, nil
		}
		return Network{}, false, err
	}
	nc, err := netconf.Parse(nad.Spec.Config)
	if err != nil {
		return Network{}, false, nil // Verify parsed it: unreachable
	}
	n := Network{Name: nc.Name, Topology: nc.Topology, Primary: nc.Role == podannotation.RolePrimary, PersistentIPs: nc.AllowPersistentIPs}
	if n.Subnets, err = nc.SubnetPrefixes(); err != nil {
		return n, false, nil
	}
	if n.ExcludeSubnets, err = ovnk.ParsePrefixes(nc.ExcludeSubnets); err != nil {
		return n, false, nil
	}
	if n.Primary {
		if n.JoinSubnets, err = ovnk.ParsePrefixes(nc.JoinSubnet); err != nil || len(n.JoinSubnets) == 0 {
			n.JoinSubnets = r.DefaultJoinSubnets
		}
	}
	return n, true, nil
}

// nadKeys are the keys of the NADs of network that udnkit owns.
func (r Resolver) nadKeys(ctx context.Context, network string) (map[string]bool, error) {
	var list nadv1.NetworkAttachmentDefinitionList
	if err := r.Reader.List(ctx, &list, client.HasLabels{ovnk.LabelUserDefinedNetwork}); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for i := range list.Items {
		nad := &list.Items[i]
		if n, ok, err := r.NetworkOfNAD(ctx, nad); err != nil {
			return nil, err
		} else if ok && n.Name == network {
			out[nad.Namespace+"/"+nad.Name] = true
		}
	}
	return out, nil
}

// Rebuild restores into att's new pool (Ensure said fresh) every entry
// already written on its network (on Layer3: by pods of its node), so that
// nothing handed out before a restart is handed out again. pods are in the
// order their entries win a conflict (oldest first); an entry that cannot
// be restored is logged, and its pod's reconcile reports it.
func (a *Allocator) Rebuild(ctx context.Context, r Resolver, att Attachment, order func([]corev1.Pod)) error {
	keys, err := r.nadKeys(ctx, att.Network.Name)
	if err != nil {
		return err
	}
	var opts []client.ListOption
	if att.Network.Topology == TopologyLayer3 {
		opts = append(opts, client.MatchingFields{r.PodNodeIndex: att.Node})
	}
	var pods corev1.PodList
	if err := r.Reader.List(ctx, &pods, opts...); err != nil {
		return err
	}
	order(pods.Items)
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Spec.NodeName == "" || pod.Spec.HostNetwork || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		var claims map[string]string
		if att.Network.HonoursClaims() {
			claims = claimsOf(pod)
		}
		entries, err := podannotation.DecodePodNetworks(pod.Annotations)
		if err != nil {
			continue
		}
		// Sorted, so that a pod's first attachment through a NAD is
		// restored before those it names again.
		for _, key := range slices.Sorted(maps.Keys(entries)) {
			if nad, ok := podannotation.NADOfKey(key); !ok || !keys[nad] {
				continue
			}
			pn := entries[key]
			held := att
			held.Key = key
			held.Request = Request{Claim: claims[key]}
			if err := a.Restore(client.ObjectKeyFromObject(pod), pod.UID, held, &pn); err != nil {
				log.FromContext(ctx).Error(err, "rebuilding the address pool", "network", PoolID(att), "pod", pod.Namespace+"/"+pod.Name)
			}
		}
	}
	return a.rebuildClaims(ctx, r, att)
}

// rebuildClaims restores the addresses of the network's IPAMClaims that no
// pod holds (a stopped VM's), as upstream's IPAMClaimReconciler.Sync marks
// them allocated (pkg/persistentips/allocator.go).
func (a *Allocator) rebuildClaims(ctx context.Context, r Resolver, att Attachment) error {
	if !att.Network.HonoursClaims() {
		return nil
	}
	var claims ipamclaimsv1alpha1.IPAMClaimList
	if err := r.Reader.List(ctx, &claims); err != nil {
		if meta.IsNoMatchError(err) {
			return nil
		}
		return err
	}
	for i := range claims.Items {
		c := &claims.Items[i]
		if c.Spec.Network != att.Network.Name || len(c.Status.IPs) == 0 {
			continue
		}
		if err := a.RestoreClaim(att, ClaimOwner(c.Namespace, c.Name), c.Status.IPs); err != nil {
			log.FromContext(ctx).Error(err, "rebuilding the address pool", "network", PoolID(att), "ipamclaim", c.Namespace+"/"+c.Name)
		}
	}
	return nil
}

// claimsOf maps the pod-networks keys of the pod's
// k8s.v1.cni.cncf.io/networks elements (podannotation.SelectionKeys) to the
// IPAMClaim each element references.
func claimsOf(pod *corev1.Pod) map[string]string {
	elems, err := podannotation.DecodeNetworkSelections(pod.Annotations[ovnk.AnnotationNetworks], pod.Namespace)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for i, key := range podannotation.SelectionKeys(elems) {
		if c := elems[i].IPAMClaimReference; c != "" {
			out[key] = c
		}
	}
	return out
}
