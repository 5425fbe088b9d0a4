package podannotation

import (
	"encoding/json"
	"errors"
	"fmt"
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
