package ovnk

import (
	"encoding/json"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
)

// cudnNetworkPrefix starts every ClusterUserDefinedNetwork's network name
// (CUDNNetworkName).
const cudnNetworkPrefix = "cluster_udn_"

// PluginType is the OVN-Kubernetes CNI plugin for secondary and UDN networks.
const PluginType = "ovn-k8s-cni-overlay"

// NetworkOwner is the UserDefinedNetwork or ClusterUserDefinedNetwork whose
// OVN network a network name is.
type NetworkOwner struct {
	// Kind is udnv1.KindUserDefinedNetwork or udnv1.KindClusterUserDefinedNetwork.
	Kind string
	// Namespace is a UDN's namespace, "" for a CUDN.
	Namespace string
	Name      string
}

// String is "UserDefinedNetwork ns/name" or "ClusterUserDefinedNetwork name".
func (o NetworkOwner) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// OwnerOfNetworkName is the inverse of UDNNetworkName and CUDNNetworkName:
// the UDN or CUDN whose network the name is, or would be once that object
// exists. Every name under "cluster_udn_" is a CUDN's; "<namespace>_<name>"
// is a UDN's when namespace is a DNS-1123 label and name a DNS-1123
// subdomain (neither can hold "_", so the split is unique). Other names
// belong to no UDN or CUDN.
func OwnerOfNetworkName(network string) (NetworkOwner, bool) {
	if name, ok := strings.CutPrefix(network, cudnNetworkPrefix); ok {
		return NetworkOwner{Kind: udnv1.KindClusterUserDefinedNetwork, Name: name}, true
	}
	namespace, name, ok := strings.Cut(network, "_")
	if !ok || len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return NetworkOwner{}, false
	}
	return NetworkOwner{Kind: udnv1.KindUserDefinedNetwork, Namespace: namespace, Name: name}, true
}

// NetConfNetworkNames returns every network name a reader of the
// OVN-Kubernetes CNI config (a NAD's spec.config) could take from config,
// or nil when no reader would take it for an ovn-k8s-cni-overlay config.
// It errs on the side of more names: upstream's config.ParseNetConf reads a
// single config's "name" with encoding/json (keys match case-insensitively,
// the last duplicate wins) and a plugin list's top-level "name" with
// libcni (the exact key), so both are returned, and a list's plugins'
// names too; the config is OVN-Kubernetes' when its type or any plugin's
// is PluginType. Malformed JSON is nobody's network (upstream refuses it).
func NetConfNetworkNames(config string) []string {
	var loose struct {
		Name    string            `json:"name"`
		Type    string            `json:"type"`
		Plugins []json.RawMessage `json:"plugins"`
	}
	var exact map[string]any
	if json.Unmarshal([]byte(config), &loose) != nil || json.Unmarshal([]byte(config), &exact) != nil {
		return nil
	}
	ovn := loose.Type == PluginType
	names := []string{loose.Name}
	if name, ok := exact["name"].(string); ok {
		names = append(names, name)
	}
	for _, raw := range loose.Plugins {
		var plugin struct{ Name, Type string }
		if json.Unmarshal(raw, &plugin) == nil {
			ovn = ovn || plugin.Type == PluginType
			names = append(names, plugin.Name)
		}
	}
	if !ovn {
		return nil
	}
	var out []string
	for _, n := range names {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
