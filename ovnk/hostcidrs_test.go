package ovnk

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDecodeNodeHostCIDRs(t *testing.T) {
	node := func(v string, set bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
		if set {
			n.Annotations = map[string]string{AnnotationHostCIDRs: v}
		}
		return n
	}
	got, ok, err := DecodeNodeHostCIDRs(node(`["192.0.2.2/24", "2001:db8::2/64"]`, true))
	want := []netip.Prefix{netip.MustParsePrefix("192.0.2.2/24"), netip.MustParsePrefix("2001:db8::2/64")}
	if err != nil || !ok || !slices.Equal(got, want) {
		t.Errorf("got %v %v %v, want %v", got, ok, err, want)
	}
	if _, ok, err := DecodeNodeHostCIDRs(node("", false)); ok || err != nil {
		t.Errorf("absent: ok %v err %v", ok, err)
	}
	for v, msg := range map[string]string{`{"a":1}`: "not a JSON list of CIDRs", `["192.0.2.2"]`: `"192.0.2.2" is not a CIDR`} {
		if _, _, err := DecodeNodeHostCIDRs(node(v, true)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: err %v, want %q", v, err, msg)
		}
	}
}
