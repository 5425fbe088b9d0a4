package netconf

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
)

// Every example's NAD config, key by key, as upstream's renderer
// (RenderNetAttachDefManifest) writes it with its defaults: cniVersion
// 1.1.0, both default UDN join subnets on Primary networks, transit subnets
// per family in the subnets' order, the Localnet MTU, sorted keys.
func TestExamplesRenderAsUpstream(t *testing.T) {
	want := map[string]map[string]any{
		"ClusterUserDefinedNetwork/red-evpn": {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": "cluster_udn_red-evpn",
			"netAttachDefName": "NS/red-evpn", "topology": "layer2", "role": "primary", "subnets": "10.210.0.0/16,fd00:210::/64",
			"joinSubnet": "100.65.0.0/16,fd99::/64", "transitSubnet": "100.88.0.0/16,fd97::/64", "transport": "evpn",
			"evpn": map[string]any{"vtep": "vtep-default", "macVRF": map[string]any{"vni": 10210.0, "routeTarget": "65000:10210"},
				"ipVRF": map[string]any{"vni": 20210.0, "routeTarget": "65000:20210"}}},
		"ClusterUserDefinedNetwork/network-l2": {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": "cluster_udn_network-l2",
			"netAttachDefName": "NS/network-l2", "topology": "layer2", "role": "primary", "subnets": "192.168.100.0/24",
			"joinSubnet": "100.65.0.0/16,fd99::/64", "transitSubnet": "100.88.0.0/16"},
		"ClusterUserDefinedNetwork/backend-l3": {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": "cluster_udn_backend-l3",
			"netAttachDefName": "NS/backend-l3", "topology": "layer3", "role": "secondary", "mtu": 1400.0,
			"subnets": "10.150.0.0/16/24,fd00:150::/48/64"},
		"ClusterUserDefinedNetwork/physnet-ext": {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": "cluster_udn_physnet-ext",
			"netAttachDefName": "NS/physnet-ext", "topology": "localnet", "role": "secondary", "mtu": 1500.0, "subnets": "192.0.2.0/24",
			"excludeSubnets": "192.0.2.0/28", "physicalNetworkName": "physnet-ext", "vlanID": 200.0},
		"tenant-blue/UserDefinedNetwork/blue": {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": "tenant-blue_blue",
			"netAttachDefName": "tenant-blue/blue", "topology": "layer2", "role": "primary", "subnets": "10.100.0.0/16,fd00:100::/64",
			"joinSubnet": "100.65.0.0/16,fd99::/64", "transitSubnet": "100.88.0.0/16,fd97::/64", "allowPersistentIPs": true},
		"tenant-green/UserDefinedNetwork/green": {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": "tenant-green_green",
			"netAttachDefName": "tenant-green/green", "topology": "layer3", "role": "primary", "subnets": "10.200.0.0/16/24",
			"joinSubnet": "100.65.0.0/16,fd99::/64"},
		"tenant-green/UserDefinedNetwork/green (appended)": {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": "tenant-green_green",
			"netAttachDefName": "tenant-green/green", "topology": "layer3", "role": "primary", "subnets": "10.200.0.0/16/24,10.201.0.0/16/24",
			"joinSubnet": "100.65.0.0/16,fd99::/64"},
	}
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v", err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			var src NADSource
			ns := "NS"
			switch meta.Kind {
			case udnv1.KindUserDefinedNetwork:
				var u udnv1.UserDefinedNetwork
				if err := yaml.UnmarshalStrict(doc, &u); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				src, ns = NADSource{Kind: meta.Kind, Meta: u.ObjectMeta, Spec: u.Spec.Network()}, u.Namespace
			case udnv1.KindClusterUserDefinedNetwork:
				var c udnv1.ClusterUserDefinedNetwork
				if err := yaml.UnmarshalStrict(doc, &c); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				src = NADSource{Kind: meta.Kind, Meta: c.ObjectMeta, Spec: c.Spec.Network, Uplinks: c.Spec.Uplinks}
			default:
				continue
			}
			key := meta.Kind + "/" + src.Meta.Name
			if src.Meta.Namespace != "" {
				key = src.Meta.Namespace + "/" + key
			}
			if filepath.Base(f) == "udn-layer3-append.yaml" {
				key += " (appended)"
			}
			seen[key] = true
			t.Run(key, func(t *testing.T) {
				cluster := ovnk.DefaultClusterConfig()
				transit, err := TransitSubnetsFor(src.Spec, cluster)
				if err != nil {
					t.Fatal(err)
				}
				nad, err := NewNAD(src, ns, cluster, transit, ovnk.NetworkIDs{ID: 3})
				if err != nil {
					t.Fatal(err)
				}
				var got map[string]any
				if err := json.Unmarshal([]byte(nad.Spec.Config), &got); err != nil {
					t.Fatal(err)
				}
				w, ok := want[key]
				if !ok {
					t.Fatalf("no expected config for %s: %s", key, nad.Spec.Config)
				}
				for k, v := range w {
					if g, ok := got[k]; !ok || !jsonEqual(g, v) {
						t.Errorf("%s = %v, upstream writes %v", k, g, v)
					}
				}
				for k, v := range got {
					if _, ok := w[k]; !ok {
						t.Errorf("extra key %s = %v", k, v)
					}
				}
				// Upstream marshals a map: top-level keys sorted (the evpn
				// value is its struct, in field order, as here).
				if keys := topLevelKeys(t, nad.Spec.Config); !slices.IsSorted(keys) {
					t.Errorf("top-level keys are not sorted as upstream's marshalled map: %v", keys)
				}
				if nad.Annotations[ovnk.AnnotationNetworkName] != src.NetworkName() || nad.Labels[ovnk.LabelUserDefinedNetwork] != "" {
					t.Errorf("annotations %v, labels %v", nad.Annotations, nad.Labels)
				}
			})
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("example %s not found", k)
		}
	}
}

func topLevelKeys(t *testing.T, doc string) []string {
	dec := json.NewDecoder(strings.NewReader(doc))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
