package endpointslicemirror

import (
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestGenerateName: upstream's getGenerateName
// (pkg/clustermanager/endpointslicemirror/endpointslice_mirror_controller.go):
// "<network>-<source generateName, else name>" when that is a valid
// generateName, else the source's own; its test "should create mirrored
// EndpointSlices for long endpointslice and network names" covers the
// fallback for a 253-character name.
func TestGenerateName(t *testing.T) {
	long := strings.Repeat("a", 253)
	for _, c := range []struct {
		generateName, name, network, want string
	}{
		{"web-", "web-x7k2p", "tenant-blue_blue", "web-"},
		{"web-", "web-x7k2p", "cluster_udn_green", "web-"},
		{"web-", "web-x7k2p", "l3-network", "l3-network-web-"},
		{"", "web", "l3-network", "l3-network-web"},
		{"", long, "network" + long, long},
	} {
		src := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{GenerateName: c.generateName, Name: c.name}}
		if got := generateName(src, c.network); got != c.want {
			t.Errorf("generateName(%q, %q, %q) = %q, want %q", c.generateName, c.name, c.network, got, c.want)
		}
	}
}
