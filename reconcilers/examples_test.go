package reconcilers_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/reconcilers/internal/rtest"
)

// applyExample server-side applies every object of an examples/ manifest,
// as `kubectl apply --server-side -f` would.
func applyExample(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(filepath.Join(envtest.RepoRoot(), "examples", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatal(err)
		}
		if len(u.Object) == 0 {
			continue
		}
		err := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("kubectl"), client.ForceOwnership)
		if err != nil {
			t.Fatalf("%s: applying %s %s: %v", file, u.GetKind(), u.GetName(), err)
		}
		out = append(out, u)
	}
}

// TestExamples applies the quickstart's manifests (what `make run` prints)
// and checks the NADs and node annotations the reconcilers produce.
func TestExamples(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	var created []*unstructured.Unstructured
	for _, f := range []string{"udn-layer2-primary.yaml", "udn-layer3-primary.yaml", "cudn-layer2-predefined-addresses.yaml", "cudn-localnet.yaml"} {
		created = append(created, applyExample(t, f)...)
	}
	// The nodes make run creates (cmd/udnkit-local): node-b has three VTEPs.
	createNodes(t, "node-a", "node-b")
	setNodeAnnotation(t, "node-b", ovnk.AnnotationNodeEncapIPs, `["172.18.0.3","172.18.0.4","172.18.0.5"]`)
	t.Cleanup(func() {
		for _, u := range created {
			if u.GetKind() != "Namespace" {
				_ = k8s.Delete(ctx, u)
			}
		}
	})
	for _, nad := range [][2]string{
		{"tenant-blue", "blue"}, {"tenant-green", "green"}, {"migrated-apps", "network-l2"},
		{"tenant-blue", "physnet-ext"}, {"tenant-green", "physnet-ext"},
	} {
		g.Eventually(func(g Gomega) { getNAD(g, nad[0], nad[1]) }).WithTimeout(timeout).Should(Succeed(), "NAD %s/%s", nad[0], nad[1])
	}
	for _, key := range []client.Object{
		&udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-blue", Name: "blue"}},
		&udnv1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-green", Name: "green"}},
		&udnv1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: "network-l2"}},
		&udnv1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: "physnet-ext"}},
	} {
		expectCondition(t, key, metav1.ConditionTrue, udnv1.ReasonNADCreated)
	}
	g.Expect(nadConfig(g, "tenant-green", "green")).To(HaveKeyWithValue("subnets", "10.200.0.0/16/24"))
	g.Expect(nadConfig(g, "tenant-blue", "physnet-ext")).To(HaveKeyWithValue("vlanID", 200.0))

	// Nodes: IDs, node-b's three tunnel IDs, green's host subnets.
	g.Eventually(func(g Gomega) {
		g.Expect(tunnelIDs(g, "node-b")).To(HaveLen(3))
		g.Expect(tunnelIDs(g, "node-b")[0]).To(Equal(nodeID(g, "node-b")))
		g.Expect(nodeID(g, "node-a")).NotTo(BeElementOf(tunnelIDs(g, "node-b")))
		g.Expect(hostSubnets(g, "node-a", "tenant-green_green")).To(HaveLen(1))
		g.Expect(hostSubnets(g, "node-b", "tenant-green_green")).To(HaveLen(1))
	}).WithTimeout(timeout).Should(Succeed())
	a, b := hostSubnets(g, "node-a", "tenant-green_green")[0], hostSubnets(g, "node-b", "tenant-green_green")[0]
	g.Expect(a).NotTo(Equal(b))

	// The append example grows green in place; the nodes keep their subnets.
	applyExample(t, "udn-layer3-append.yaml")
	g.Eventually(func(g Gomega) string {
		return nadConfig(g, "tenant-green", "green")["subnets"].(string)
	}).WithTimeout(timeout).Should(HavePrefix("10.200.0.0/16/24,"))
	g.Expect(hostSubnets(g, "node-a", "tenant-green_green")[0]).To(Equal(a))
	g.Expect(hostSubnets(g, "node-b", "tenant-green_green")[0]).To(Equal(b))
}
