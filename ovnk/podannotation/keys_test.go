package podannotation

import (
	"slices"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/ovnk"
)

func TestDecodePodNetworkKeys(t *testing.T) {
	// An entry udnkit cannot decode as a PodNetwork still names its network.
	ann := map[string]string{ovnk.AnnotationPodNetworks: `{"default":{"role":"infrastructure-locked","tunnel_id":"x"},"blue/blue":{"role":"primary"}}`}
	keys, err := DecodePodNetworkKeys(ann)
	slices.Sort(keys)
	if err != nil || !slices.Equal(keys, []string{"blue/blue", "default"}) {
		t.Errorf("keys = %v, %v", keys, err)
	}
	if keys, err := DecodePodNetworkKeys(nil); err != nil || keys != nil {
		t.Errorf("no annotation: %v, %v", keys, err)
	}
	if _, err := DecodePodNetworkKeys(map[string]string{ovnk.AnnotationPodNetworks: "not json"}); err == nil || !strings.Contains(err.Error(), ovnk.AnnotationPodNetworks) {
		t.Errorf("not JSON: err = %v, want one naming the annotation", err)
	}
}
