package pod

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

func TestPodAddressKeys(t *testing.T) {
	pn, err := podannotation.PodNetworks{
		"a/net":       {IPAddresses: []string{"10.0.0.5/24", "fd00::5/64"}, MACAddress: "0A:58:0A:00:00:05", Role: podannotation.RolePrimary},
		"a/secondary": {IPAddresses: []string{"10.9.0.5/24"}, MACAddress: "02:00:00:00:00:09", Role: podannotation.RoleSecondary},
	}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: testobj.PodNetworkAnnotations(pn)}}
	got := podAddressKeys(pod)
	slices.Sort(got)
	want := []string{"ip/10.0.0.5", "ip/fd00::5", "mac/0a:58:0a:00:00:05"}
	if !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v (the primary network's only, canonical)", got, want)
	}
	if !holds(pod, "mac/0a:58:0a:00:00:05") || holds(pod, "ip/10.9.0.5") {
		t.Error("holds disagrees with the keys")
	}
	for _, bad := range []string{"", "{", `{"a/net": {"ip_addresses": ["bogus"], "mac_address": "x", "role": "primary"}}`} {
		if keys := podAddressKeys(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{ovnk.AnnotationPodNetworks: bad}}}); len(keys) != 0 {
			t.Errorf("%q: keys %v, want none", bad, keys)
		}
	}
}
