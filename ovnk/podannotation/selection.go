package podannotation

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	nadutils "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/utils"

	"github.com/udnkit/udnkit/ovnk"
)

// WarningObjectSelection is returned by DecodeDefaultNetworkSelection for the
// single-object form: OKEP-5233 shows it, udnkit honours it, but upstream
// OVN-Kubernetes parses the annotation with the NAD client's
// ParseNetworkAnnotation, which reads only a JSON list or the short form.
const WarningObjectSelection = "a single JSON object in " + ovnk.AnnotationDefaultNetwork +
	" is read by udnkit but not by OVN-Kubernetes' own parser; write it as a one-element list [{...}] to work with both"

// DecodeDefaultNetworkSelection reads a v1.multus-cni.io/default-network
// value as OVN-Kubernetes does (util.GetK8sPodDefaultNetworkSelection: the NAD
// client's ParseNetworkAnnotation, a JSON list or the short form
// "namespace/name[@ifname]" with the pod's namespace as default, and at most
// one element), and also the single JSON object OKEP-5233 shows, for which
// it returns WarningObjectSelection.
func DecodeDefaultNetworkSelection(value, podNamespace string) (*nadv1.NetworkSelectionElement, []string, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return nil, nil, errors.New("the value is empty")
	}
	if strings.HasPrefix(v, "{") {
		var nse nadv1.NetworkSelectionElement
		if err := json.Unmarshal([]byte(v), &nse); err != nil {
			return nil, nil, err
		}
		if nse.Namespace == "" {
			nse.Namespace = podNamespace
		}
		if nse.Name == "" {
			return nil, nil, errors.New("name is required")
		}
		return &nse, []string{WarningObjectSelection}, nil
	}
	list, err := nadutils.ParseNetworkAnnotation(v, podNamespace)
	if err != nil {
		return nil, nil, err
	}
	if len(list) != 1 {
		return nil, nil, fmt.Errorf("must select exactly one network, this value selects %d", len(list))
	}
	if list[0].Name == "" {
		return nil, nil, errors.New("name is required")
	}
	return list[0], nil, nil
}

// EncodeDefaultNetworkSelection writes nse as a v1.multus-cni.io/default-network
// value in the list form, the one both DecodeDefaultNetworkSelection and
// OVN-Kubernetes' parser read.
func EncodeDefaultNetworkSelection(nse nadv1.NetworkSelectionElement) string {
	b, _ := json.Marshal([]nadv1.NetworkSelectionElement{nse}) // a struct of strings, lists and maps of strings always marshals
	return string(b)
}

// DecodeNetworkSelections reads a k8s.v1.cni.cncf.io/networks value as
// OVN-Kubernetes does (util.GetK8sPodAllNetworkSelections: the NAD client's
// ParseNetworkAnnotation): a JSON list of NetworkSelectionElements (name,
// namespace, interface, ips, mac, default-route, ...) or a comma list of
// "[namespace/]name[@interface]"; an element without namespace is in the
// pod's. An empty value selects nothing.
func DecodeNetworkSelections(value, podNamespace string) ([]*nadv1.NetworkSelectionElement, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	list, err := nadutils.ParseNetworkAnnotation(value, podNamespace)
	if err != nil {
		return nil, err
	}
	for i, e := range list {
		if e == nil || e.Name == "" {
			return nil, fmt.Errorf("element %d: name is required", i)
		}
	}
	return list, nil
}

// IndexedNADKey is the k8s.ovn.org/pod-networks key of a pod's n-th
// attachment (from 0) through one NAD, as upstream's GetIndexedNADKey
// (pkg/util/multi_network.go) writes it: the NAD key for the first,
// "<namespace>/<name>/<n>" for the others. The key also names the port
// (ovnk.PodPortName) and is its k8s.ovn.org/nad external ID.
func IndexedNADKey(nadKey string, n int) string {
	if n == 0 {
		return nadKey
	}
	return nadKey + "/" + strconv.Itoa(n)
}

// NADOfKey is the NAD key ("<namespace>/<name>") a pod-networks key names,
// with or without IndexedNADKey's index (upstream's
// GetNadFromIndexedNADKey); ok is false for a key of another shape (the
// default network's "default").
func NADOfKey(key string) (nadKey string, ok bool) {
	parts := strings.Split(key, "/")
	switch {
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return key, true
	case len(parts) == 3 && parts[0] != "" && parts[1] != "":
		if n, err := strconv.Atoi(parts[2]); err == nil && n > 0 && strconv.Itoa(n) == parts[2] {
			return parts[0] + "/" + parts[1], true
		}
	}
	return "", false
}

// KeysOfNAD are the keys, among a pod's k8s.ovn.org/pod-networks keys, of
// its attachments through one NAD: nadKey and its IndexedNADKey repeats,
// in index order. It is upstream's PodNADKeys (pkg/util/pod_annotation.go)
// for one NAD of a network: each is an interface, with its own port and
// addresses, that a reader of the NAD's entries takes in.
func KeysOfNAD(keys iter.Seq[string], nadKey string) []string {
	var out []string
	for k := range keys {
		if nad, ok := NADOfKey(k); ok && nad == nadKey {
			out = append(out, k)
		}
	}
	// One NAD's keys differ only in their index suffix: the shorter key
	// has the lower index.
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b)) })
	return out
}

// AttachedKeys are the keys of a pod's attachments through the NAD nadKey
// that its readers wire (ports, policy members): upstream's PodNADKeys
// (pkg/util/pod_annotation.go) for one NAD. keys are the pod's
// k8s.ovn.org/pod-networks keys (DecodePodNetworkKeys, or those of
// DecodePodNetworks), annotations the pod's annotations. They are the NAD's
// keys among keys (KeysOfNAD) and, on a Secondary network, only those the
// pod's k8s.v1.cni.cncf.io/networks still names (SelectionKeys), as
// upstream reads a Secondary network's keys from the selection: an entry
// left by an element since removed ("red,red" made "red"; the allocator
// only adds entries) is not wired, nor is one the selection never named. A
// selection that does not decode is an error.
func AttachedKeys(keys iter.Seq[string], annotations map[string]string, podNamespace, nadKey string, secondary bool) ([]string, error) {
	out := KeysOfNAD(keys, nadKey)
	if !secondary || len(out) == 0 {
		return out, nil
	}
	elems, err := DecodeNetworkSelections(annotations[ovnk.AnnotationNetworks], podNamespace)
	if err != nil {
		return nil, fmt.Errorf("annotation %s: %w", ovnk.AnnotationNetworks, err)
	}
	named := SelectionKeys(elems)
	return slices.DeleteFunc(out, func(k string) bool { return !slices.Contains(named, k) }), nil
}

// SelectionKeys are the pod-networks keys of a pod's
// k8s.v1.cni.cncf.io/networks elements (DecodeNetworkSelections), one per
// element in order: a NAD named again gets the next IndexedNADKey, as
// upstream's getPodNADToNetworkMappingWithPredicate counts them.
func SelectionKeys(elems []*nadv1.NetworkSelectionElement) []string {
	seen := map[string]int{}
	out := make([]string, len(elems))
	for i, e := range elems {
		key := e.Namespace + "/" + e.Name
		out[i] = IndexedNADKey(key, seen[key])
		seen[key]++
	}
	return out
}
