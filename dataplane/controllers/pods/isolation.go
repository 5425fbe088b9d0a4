package pods

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/udnkit/udnkit/dataplane/controllers/zone"
	"github.com/udnkit/udnkit/dataplane/topology/policy"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// ReasonOpenPortsInvalid is the Warning Event of a Primary-UDN pod whose
// ovnk.AnnotationOpenDefaultPorts cannot be read: none of its ports open.
const ReasonOpenPortsInvalid = "OpenDefaultPortsInvalid"

// IsolationPorts are the default network's ports of the zone's pods whose
// primary network is a user-defined one, sorted: the members of the
// zone's isolation port group (the policy controller's IsolationPorts).
// Upstream's default network controller adds such a pod's port to the
// group in the transaction that creates it (pods.go addLogicalPort, when
// the pod's default network role is infrastructure-locked); OVN-Kubernetes
// writes those ports, so udnkit names them ("<namespace>_<pod>") from what
// OVN-Kubernetes recorded on the pod: its k8s.ovn.org/pod-networks entry
// of the default network with role RoleInfrastructureLocked. A pod counts while
// it has ports (wired) on one of the zone's nodes; one whose annotation
// cannot be read is left out and logged (making a port a member cuts its
// default-network traffic, which must not rest on a guess). The pods are
// read by node through zone.PodNodeField. Each member carries the ports
// its pod opens (ovnk.AnnotationOpenDefaultPorts); a pod whose annotation
// is malformed stays a member with every port closed and gets a
// ReasonOpenPortsInvalid Event saying why (upstream removes the pod's
// open-port ACLs and records the error on the pod), once per malformed
// value: every network's reconcile lists the members.
func (r *Reconciler) IsolationPorts(ctx context.Context) ([]policy.IsolationMember, error) {
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []policy.IsolationMember
	malformed := map[string]string{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if r.Local != nil && !r.Local(n) {
			continue
		}
		var list corev1.PodList
		if err := r.Client.List(ctx, &list, client.MatchingFields{zone.PodNodeField: n.Name}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for j := range list.Items {
			pod := &list.Items[j]
			if !wired(pod) {
				continue
			}
			pn, err := podannotation.DecodePodNetwork(pod.Annotations, podannotation.DefaultNetworkKey)
			if err != nil {
				log.FromContext(ctx).Error(err, "pod's default network port left out of the isolation port group", "pod", pod.Namespace+"/"+pod.Name)
				continue
			}
			if pn == nil || pn.Role != podannotation.RoleInfrastructureLocked {
				continue
			}
			out = append(out, policy.IsolationMember{Port: ovnk.DefaultNetworkPodPortName(pod.Namespace, pod.Name),
				Pod: pod.Namespace + "/" + pod.Name, OpenPorts: r.openPorts(pod, malformed)})
		}
	}
	r.mu.Lock()
	r.openPortsWarned = malformed
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b policy.IsolationMember) int { return strings.Compare(a.Port, b.Port) })
	return out, nil
}

// openPorts are the ports pod opens; a malformed annotation opens none and
// is recorded in malformed, and warned of unless it was last time.
func (r *Reconciler) openPorts(pod *corev1.Pod, malformed map[string]string) []ovnk.OpenPort {
	open, err := ovnk.DecodeOpenPorts(pod.Annotations)
	if err == nil {
		return open
	}
	key, v := pod.Namespace+"/"+pod.Name, pod.Annotations[ovnk.AnnotationOpenDefaultPorts]
	malformed[key] = v
	r.mu.Lock()
	warned, ok := r.openPortsWarned[key]
	r.mu.Unlock()
	if (!ok || warned != v) && r.Recorder != nil {
		r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonOpenPortsInvalid, "OpenDefaultPorts",
			"%v: every default-network port stays closed", err)
	}
	return nil
}
