package netconf

import (
	"encoding/json"
	"testing"

	"github.com/udnkit/udnkit/ovnk"
)

// The stub's config is compared byte for byte by the stub controller, so
// its bytes are the contract: OKEP-5233's example, spacing included.
func TestDefaultNADConfigGolden(t *testing.T) {
	const want = `{"cniVersion": "0.4.0", "name": "ovn-kubernetes", "type": "ovn-k8s-cni-overlay"}`
	if DefaultNADConfig != want {
		t.Fatalf("DefaultNADConfig =\n%s\nwant\n%s", DefaultNADConfig, want)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(DefaultNADConfig), &m); err != nil || m["name"] != ovnk.DefaultNetworkNamespace || m["type"] != "ovn-k8s-cni-overlay" {
		t.Errorf("decoded %v, %v", m, err)
	}
}
