package addresses

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
)

// AnnotationEncapIPMapping is the multi-VTEP design's test annotation,
// {"<network>": "<encap-ip>"}, that sets encap_ip in k8s.ovn.org/pod-networks.
const AnnotationEncapIPMapping = "test.k8s.ovn.org/pod-network-encap-ip-mapping"

// PodNetwork is one network's entry in k8s.ovn.org/pod-networks, in the
// OVN-Kubernetes format.
type PodNetwork struct {
	IPAddresses []string   `json:"ip_addresses"`
	MACAddress  string     `json:"mac_address"`
	GatewayIPs  []string   `json:"gateway_ips,omitempty"`
	Routes      []PodRoute `json:"routes,omitempty"`
	// IPAddress and GatewayIP repeat the single address of a single-stack pod.
	IPAddress string `json:"ip_address,omitempty"`
	GatewayIP string `json:"gateway_ip,omitempty"`
	Role      string `json:"role,omitempty"`
	EncapIP   string `json:"encap_ip,omitempty"`
}

// PodRoute is a route in a PodNetwork.
type PodRoute struct {
	Dest    string `json:"dest"`
	NextHop string `json:"nextHop"`
}

// RolePrimary is the role of a pod's primary network.
const RolePrimary = "primary"

// podNetworks decodes the pod's k8s.ovn.org/pod-networks annotation.
func podNetworks(pod *corev1.Pod) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	v, ok := pod.Annotations[udnv1.AnnotationPodNetworks]
	if !ok {
		return out, nil
	}
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", udnv1.AnnotationPodNetworks, err)
	}
	return out, nil
}

// podNetwork returns the pod's entry for key, if it has one.
func podNetwork(pod *corev1.Pod, key string) (*PodNetwork, error) {
	all, err := podNetworks(pod)
	if err != nil {
		return nil, err
	}
	raw, ok := all[key]
	if !ok {
		return nil, nil
	}
	var pn PodNetwork
	if err := json.Unmarshal(raw, &pn); err != nil {
		return nil, fmt.Errorf("annotation %s[%q]: %w", udnv1.AnnotationPodNetworks, key, err)
	}
	return &pn, nil
}

// allocation reads a PodNetwork back as an allocation.
func (pn *PodNetwork) allocation() (ipalloc.Allocation, error) {
	var a ipalloc.Allocation
	for _, s := range pn.IPAddresses {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return a, fmt.Errorf("ip_addresses: %w", err)
		}
		a.IPs = append(a.IPs, p)
	}
	hw, err := net.ParseMAC(pn.MACAddress)
	if err != nil {
		return a, fmt.Errorf("mac_address: %w", err)
	}
	a.MAC = hw
	return a, nil
}

// newPodNetwork renders an allocation for a primary network.
func newPodNetwork(a ipalloc.Allocation, gateways []netip.Addr, serviceCIDRs []netip.Prefix, encapIP string) PodNetwork {
	pn := PodNetwork{MACAddress: a.MAC.String(), Role: RolePrimary, EncapIP: encapIP}
	for i, ip := range a.IPs {
		pn.IPAddresses = append(pn.IPAddresses, ip.String())
		gw := gateways[i]
		pn.GatewayIPs = append(pn.GatewayIPs, gw.String())
		for _, svc := range serviceCIDRs {
			if svc.Addr().Is4() == gw.Is4() {
				pn.Routes = append(pn.Routes, PodRoute{Dest: svc.String(), NextHop: gw.String()})
			}
		}
	}
	if len(pn.IPAddresses) == 1 {
		pn.IPAddress, pn.GatewayIP = pn.IPAddresses[0], pn.GatewayIPs[0]
	}
	return pn
}

// withPodNetwork returns the annotation value with key set to pn, keeping
// the other networks' entries.
func withPodNetwork(pod *corev1.Pod, key string, pn PodNetwork) (string, error) {
	all, err := podNetworks(pod)
	if err != nil {
		return "", err
	}
	raw, err := json.Marshal(pn)
	if err != nil {
		return "", err
	}
	all[key] = raw
	out, err := json.Marshal(all)
	return string(out), err
}

// selectionElement parses v1.multus-cni.io/default-network, a single
// NetworkSelectionElement (a one-element list is accepted too).
func selectionElement(pod *corev1.Pod) (*nadv1.NetworkSelectionElement, error) {
	v, ok := pod.Annotations[udnv1.AnnotationDefaultNetwork]
	if !ok {
		return nil, nil
	}
	var nse nadv1.NetworkSelectionElement
	if err := json.Unmarshal([]byte(v), &nse); err != nil {
		var list []nadv1.NetworkSelectionElement
		if lerr := json.Unmarshal([]byte(v), &list); lerr != nil || len(list) != 1 {
			return nil, fmt.Errorf("annotation %s is not a NetworkSelectionElement: %v", udnv1.AnnotationDefaultNetwork, err)
		}
		nse = list[0]
	}
	return &nse, nil
}

// encapIP reads the test mapping for the network, by NAD key or network name.
func encapIP(pod *corev1.Pod, keys ...string) string {
	v, ok := pod.Annotations[AnnotationEncapIPMapping]
	if !ok {
		return ""
	}
	m := map[string]string{}
	if json.Unmarshal([]byte(v), &m) != nil {
		return ""
	}
	for _, k := range keys {
		if ip, ok := m[k]; ok {
			return ip
		}
	}
	return ""
}
