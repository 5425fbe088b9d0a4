package podannotation

import (
	"maps"
	"slices"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	"github.com/udnkit/udnkit/ovnk"
)

func TestDecodeDefaultNetworkSelection(t *testing.T) {
	cases := []struct {
		value, name, namespace, claim, iface string
		ips                                  []string
		warn                                 bool
		err                                  string
	}{
		// OKEP-5233's example, a single object: read, with a warning.
		{value: `{"name": "default", "namespace": "ovn-kubernetes", "ips": ["192.168.100.205"], "mac": "00:1A:2B:3C:4D:5E", "ipam-claim-reference": "my-claim"}`,
			name: "default", namespace: "ovn-kubernetes", claim: "my-claim", ips: []string{"192.168.100.205"}, warn: true},
		{value: `[{"name":"default","namespace":"ovn-kubernetes","ips":["192.168.100.205/24"]}]`, name: "default", namespace: "ovn-kubernetes", ips: []string{"192.168.100.205/24"}},
		// The short form, as the NAD client library reads it: the pod's
		// namespace by default, an optional @interface.
		{value: "ovn-kubernetes/default", name: "default", namespace: "ovn-kubernetes"},
		{value: " default ", name: "default", namespace: "tenant"},
		{value: "ovn-kubernetes/default@eth0", name: "default", namespace: "ovn-kubernetes", iface: "eth0"},
		{value: `[{"name":"default"}]`, name: "default", namespace: "tenant"},
		{value: `{"name": "default",`, err: "unexpected end of JSON input"},
		{value: `{"name": 5}`, err: "cannot unmarshal number"},
		{value: `{"namespace": "x"}`, err: "name is required"},
		{value: `[]`, err: "exactly one network, this value selects 0"},
		{value: `[{"name":"a"},{"name":"b"}]`, err: "this value selects 2"},
		{value: "a,b", err: "this value selects 2"},
		{value: "", err: "empty"},
		{value: "a/b/c", err: "parsePodNetworkAnnotation"},
	}
	for _, tc := range cases {
		nse, warnings, err := DecodeDefaultNetworkSelection(tc.value, "tenant")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want %q", tc.value, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.value, err)
			continue
		}
		if nse.Name != tc.name || nse.Namespace != tc.namespace || nse.IPAMClaimReference != tc.claim || nse.InterfaceRequest != tc.iface ||
			strings.Join(nse.IPRequest, ",") != strings.Join(tc.ips, ",") {
			t.Errorf("%q: parsed %+v", tc.value, nse)
		}
		if got := len(warnings) == 1 && warnings[0] == WarningObjectSelection; got != tc.warn {
			t.Errorf("%q: warnings = %q", tc.value, warnings)
		}
	}
}

// The list form with the NAD client's field names, as OVN-Kubernetes' own
// parser reads it; decoding it gives the element back.
func TestEncodeDefaultNetworkSelectionGolden(t *testing.T) {
	in := nadv1.NetworkSelectionElement{Name: ovnk.DefaultNetworkName, Namespace: ovnk.DefaultNetworkNamespace, IPAMClaimReference: "vm-a"}
	const want = `[{"name":"default","namespace":"ovn-kubernetes","ipam-claim-reference":"vm-a"}]`
	got := EncodeDefaultNetworkSelection(in)
	if got != want {
		t.Fatalf("encoded\n%s\nwant\n%s", got, want)
	}
	back, warnings, err := DecodeDefaultNetworkSelection(got, "tenant")
	if err != nil || len(warnings) != 0 || back.Name != in.Name || back.Namespace != in.Namespace || back.IPAMClaimReference != in.IPAMClaimReference {
		t.Errorf("decoded %+v, %v, %v", back, warnings, err)
	}
}

// A pod naming one NAD twice gets two pod-networks keys, "ns/nad" and
// "ns/nad/1", in the order of its elements, as upstream's
// getPodNADToNetworkMappingWithPredicate and GetIndexedNADKey
// (pkg/util/multi_network.go; its test "Attaching to a secondary network
// twice" expects GetNADName(ns, name) and GetIndexedNADKey(.., 1)) key
// them; NADOfKey reads the NAD back as GetNadFromIndexedNADKey does and
// refuses other shapes.
func TestSelectionKeysIndexARepeatedNAD(t *testing.T) {
	elems, err := DecodeNetworkSelections("red,blue,red,other/red,red", "ns")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ns/red", "ns/blue", "ns/red/1", "other/red", "ns/red/2"}
	if got := SelectionKeys(elems); !slices.Equal(got, want) {
		t.Errorf("SelectionKeys = %v, want %v", got, want)
	}
	for key, nad := range map[string]string{"ns/red": "ns/red", "ns/red/1": "ns/red", "ns/red/12": "ns/red"} {
		if got, ok := NADOfKey(key); !ok || got != nad {
			t.Errorf("NADOfKey(%q) = %q, %v, want %q", key, got, ok, nad)
		}
	}
	for _, key := range []string{"default", "ns/red/0", "ns/red/x", "ns/red/01", "ns/red/-1", "/red", "ns/", "a/b/1/2"} {
		if got, ok := NADOfKey(key); ok {
			t.Errorf("NADOfKey(%q) = %q, want refused", key, got)
		}
	}
}

// A NAD's keys among a pod's pod-networks keys are its plain key and its
// indexed repeats, in index order ("ns/red/10" after "ns/red/2"), as
// upstream's PodNADKeys (pkg/util/pod_annotation.go) gives a network's
// keys of the pod; another NAD's keys, a key sharing only a prefix and the
// default network's are not among them.
func TestKeysOfNAD(t *testing.T) {
	keys := []string{"ns/red/10", "default", "ns/redder", "ns/red/1", "other/red/1", "ns/blue", "ns/red", "ns/red/2", "ns/red/x"}
	want := []string{"ns/red", "ns/red/1", "ns/red/2", "ns/red/10"}
	if got := KeysOfNAD(slices.Values(keys), "ns/red"); !slices.Equal(got, want) {
		t.Errorf("KeysOfNAD = %v, want %v", got, want)
	}
	if got := KeysOfNAD(slices.Values(keys), "ns/green"); len(got) != 0 {
		t.Errorf("KeysOfNAD of a NAD the pod does not name = %v", got)
	}
}

// A pod's wired keys of a NAD: on a Secondary network those of its
// pod-networks entries that its k8s.v1.cni.cncf.io/networks still names, as
// upstream's PodNADKeys (pkg/util/pod_annotation.go) reads a Secondary
// network's keys from the selection; on a Primary one every entry of the
// NAD. "red,red" made "red" leaves the "ns/red/1" entry unwired; an
// unreadable selection is an error, not "no keys".
func TestAttachedKeys(t *testing.T) {
	pn := map[string]string{ovnk.AnnotationPodNetworks: `{"default":{"role":"infrastructure-locked"},"ns/red":{"role":"secondary"},` +
		`"ns/red/1":{"role":"secondary"},"ns/blue":{"role":"secondary"}}`}
	keys, err := DecodePodNetworkKeys(pn)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		networks  string
		secondary bool
		want      []string
	}{
		{"red,red", true, []string{"ns/red", "ns/red/1"}},
		{"red", true, []string{"ns/red"}},
		{`[{"name":"red"},{"name":"blue"}]`, true, []string{"ns/red"}},
		{`[{"name":"red","namespace":"ns","interface":"net1"},{"name":"red","interface":"net2"}]`, true, []string{"ns/red", "ns/red/1"}},
		{"blue", true, nil},
		{"", true, nil},
		{"red,red,red", true, []string{"ns/red", "ns/red/1"}},
		{"other/red,red", true, []string{"ns/red"}},
		{"", false, []string{"ns/red", "ns/red/1"}},
		{"blue", false, []string{"ns/red", "ns/red/1"}},
	} {
		ann := maps.Clone(pn)
		if c.networks != "" {
			ann[ovnk.AnnotationNetworks] = c.networks
		}
		got, err := AttachedKeys(slices.Values(keys), ann, "ns", "ns/red", c.secondary)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("networks %q secondary %v: AttachedKeys = %v, %v, want %v", c.networks, c.secondary, got, err, c.want)
		}
	}
	bad := maps.Clone(pn)
	bad[ovnk.AnnotationNetworks] = `[{"name":`
	if got, err := AttachedKeys(slices.Values(keys), bad, "ns", "ns/red", true); err == nil || !strings.Contains(err.Error(), ovnk.AnnotationNetworks) {
		t.Errorf("an unreadable selection: AttachedKeys = %v, %v, want an error naming %s", got, err, ovnk.AnnotationNetworks)
	}
	// A Primary network's keys do not read the selection at all.
	if got, err := AttachedKeys(slices.Values(keys), bad, "ns", "ns/red", false); err != nil || len(got) != 2 {
		t.Errorf("a Primary network with an unreadable selection: AttachedKeys = %v, %v, want both keys", got, err)
	}
}
