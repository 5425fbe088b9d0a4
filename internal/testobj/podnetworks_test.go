package testobj

import (
	"maps"
	"slices"
	"testing"

	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// PodNetworkAnnotations' selection names exactly the Secondary entries of
// the value (each of a NAD named twice): its elements' keys, as
// podannotation.SelectionKeys numbers them, are those entries' keys;
// Primary and default-network entries stay out of it, and a value that
// does not decode comes alone.
func TestPodNetworkAnnotations(t *testing.T) {
	const value = `{"default":{"role":"infrastructure-locked"},"ns/blue":{"role":"primary"},"ns/red":{"role":"secondary"},` +
		`"ns/red/1":{"role":"secondary"},"ns/phys":{"role":"secondary"},"other/x":{}}`
	ann := MakePod("ns", "p").PodNetworks(value).Obj().Annotations
	if ann[ovnk.AnnotationPodNetworks] != value {
		t.Errorf("pod-networks %q, want the value unchanged", ann[ovnk.AnnotationPodNetworks])
	}
	elems, err := podannotation.DecodeNetworkSelections(ann[ovnk.AnnotationNetworks], "ns")
	if err != nil {
		t.Fatal(err)
	}
	got := podannotation.SelectionKeys(elems)
	slices.Sort(got)
	if want := []string{"ns/phys", "ns/red", "ns/red/1", "other/x"}; !slices.Equal(got, want) {
		t.Errorf("selection %q names keys %q, want %q", ann[ovnk.AnnotationNetworks], got, want)
	}
	for _, v := range []string{`{"ns/blue":{"role":"primary"}}`, `{"default":{"role":"primary"}}`, `nope`, `{}`} {
		if got := PodNetworkAnnotations(v); !maps.Equal(got, map[string]string{ovnk.AnnotationPodNetworks: v}) {
			t.Errorf("%s: annotations %v, want pod-networks alone", v, got)
		}
	}
}
