package pod

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/webhooks/network"
)

// IndexPodAddresses is the field index of pods by the addresses of their
// primary network (k8s.ovn.org/pod-networks' entry with role primary):
// "ip/<address>" and "mac/<MAC>". The pod webhook reads it to name the pod
// that already holds a requested IP or MAC: one index look-up per requested
// address, whatever the network holds.
const IndexPodAddresses = "udnkit.webhooks.podAddresses"

// IndexFields registers IndexPodAddresses with indexer (a manager's
// GetFieldIndexer(), before the manager starts). Validator's Client must
// be a cache with it and with network.IndexFields' indexes.
func IndexFields(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Pod{}, IndexPodAddresses, func(o client.Object) []string {
		return podAddressKeys(o.(*corev1.Pod))
	}); err != nil {
		return fmt.Errorf("indexing pods: %w", err)
	}
	return nil
}

// podAddressKeys are pod's IndexPodAddresses values.
func podAddressKeys(pod *corev1.Pod) []string {
	if _, ok := pod.Annotations[ovnk.AnnotationPodNetworks]; !ok {
		return nil
	}
	networks, err := podannotation.DecodePodNetworks(pod.Annotations)
	if err != nil {
		return nil
	}
	var out []string
	for _, pn := range networks {
		if pn.Role != podannotation.RolePrimary {
			continue
		}
		a, err := pn.Parse()
		if err != nil {
			continue
		}
		for _, ip := range a.IPs {
			out = append(out, ipKey(ip.Addr()))
		}
		out = append(out, macKey(a.MAC))
	}
	return out
}

func ipKey(a netip.Addr) string        { return "ip/" + a.Unmap().String() }
func macKey(m net.HardwareAddr) string { return "mac/" + m.String() }

// addressHolders refuses each address nse requests that another live pod of
// the pod's primary network (ref, as network.CachedPrimaryNetwork names it) already
// holds, naming that pod; the address allocator refuses the same in the
// reconciler, also for a holder the cache does not show yet. A holder that
// shares the pod's IPAMClaim (a VM's other pod, during a live migration)
// or has finished holds nothing against it. A holder is confirmed against
// the apiserver when APIReader is set.
func (v *Validator) addressHolders(ctx context.Context, pod *corev1.Pod, nse *nadv1.NetworkSelectionElement, ref string) (field.ErrorList, error) {
	var errs field.ErrorList
	check := func(p *field.Path, raw, key, what string) error {
		holder, err := v.holder(ctx, pod, nse, ref, key)
		if err != nil || holder == "" {
			return err
		}
		errs = append(errs, field.Invalid(p, raw, fmt.Sprintf(
			"%s is already in use by pod %s of this network; request another, or delete that pod first.", what, holder)))
		return nil
	}
	for i, raw := range nse.IPRequest {
		ip, err := parseRequestedIP(raw)
		if err != nil {
			continue
		}
		if err := check(defaultNetworkPath.Child("ips").Index(i), raw, ipKey(ip), "IP address "+ip.Unmap().String()); err != nil {
			return nil, err
		}
	}
	if mac, err := net.ParseMAC(nse.MacRequest); err == nil && nse.MacRequest != "" {
		if err := check(defaultNetworkPath.Child("mac"), nse.MacRequest, macKey(mac), "MAC address "+mac.String()); err != nil {
			return nil, err
		}
	}
	return errs, nil
}

// holder returns "namespace/name" of a live pod other than pod, on the
// network ref, whose primary network holds key, or "".
func (v *Validator) holder(ctx context.Context, pod *corev1.Pod, nse *nadv1.NetworkSelectionElement, ref, key string) (string, error) {
	var pods corev1.PodList
	if err := v.Client.List(ctx, &pods, client.MatchingFields{IndexPodAddresses: key}); err != nil {
		return "", fmt.Errorf("listing pods by address: %w", err)
	}
	for i := range pods.Items {
		h := &pods.Items[i]
		if h.Namespace == pod.Namespace && h.Name == pod.Name || h.Status.Phase == corev1.PodSucceeded || h.Status.Phase == corev1.PodFailed {
			continue
		}
		if claim := nse.IPAMClaimReference; claim != "" && h.Namespace == pod.Namespace && claimOf(h) == claim {
			continue
		}
		_, hRef, err := network.CachedPrimaryNetwork(ctx, v.Client, nil, h.Namespace)
		if err != nil && !apierrors.IsNotFound(err) {
			return "", err
		}
		if hRef != ref {
			continue
		}
		if v.APIReader != nil {
			var live corev1.Pod
			err := v.APIReader.Get(ctx, client.ObjectKeyFromObject(h), &live)
			if apierrors.IsNotFound(err) || err == nil && !holds(&live, key) {
				continue
			}
			if err != nil {
				return "", fmt.Errorf("reading pod %s/%s: %w", h.Namespace, h.Name, err)
			}
		}
		return h.Namespace + "/" + h.Name, nil
	}
	return "", nil
}

func holds(pod *corev1.Pod, key string) bool {
	for _, k := range podAddressKeys(pod) {
		if k == key {
			return true
		}
	}
	return false
}

// claimOf is the IPAMClaim a pod's default-network element references, or "".
func claimOf(pod *corev1.Pod) string {
	value, ok := pod.Annotations[ovnk.AnnotationDefaultNetwork]
	if !ok {
		return ""
	}
	nse, _, err := podannotation.DecodeDefaultNetworkSelection(value, pod.Namespace)
	if err != nil {
		return ""
	}
	return nse.IPAMClaimReference
}
