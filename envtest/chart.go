package envtest

import (
	"fmt"
	"path/filepath"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/udnkit/udnkit/internal/chartrender"
)

// ReleaseName is the Helm release name RenderChart renders as.
const ReleaseName = "udnkit"

// ChartDir is udnkit's Helm chart in this checkout.
func ChartDir() string { return filepath.Join(RepoRoot(), "charts", "udnkit") }

// LoadChart loads the chart of ChartDir.
func LoadChart() (*chart.Chart, error) { return loader.Load(ChartDir()) }

// RenderChart renders c as `helm template udnkit --namespace namespace`
// does with user values vals, for the envtest Kubernetes version, and
// returns the objects of its YAML files in file-name order. The chart's
// tests and the harness's policies (PolicyObjects) both render through it.
func RenderChart(c *chart.Chart, vals map[string]any, namespace string) ([]*unstructured.Unstructured, error) {
	version, err := KubernetesVersion()
	if err != nil {
		return nil, err
	}
	files, err := chartrender.Render(c, vals, chartrender.Release{Name: ReleaseName, Namespace: namespace, KubeVersion: "v" + version})
	if err != nil {
		return nil, err
	}
	return chartrender.Decode(files)
}

// PolicyObjects are the ValidatingAdmissionPolicies and bindings the chart
// installs (templates/policies.yaml) in release namespace paramsNamespace,
// trusting writers (policies.ovnAnnotationWriters) and the release's
// manager ServiceAccount (writers.ServiceAccount).
func PolicyObjects(writers AnnotationWriters, paramsNamespace string) ([]*unstructured.Unstructured, error) {
	c, err := LoadChart()
	if err != nil {
		return nil, err
	}
	list := func(ss []string) []any {
		out := []any{}
		for _, s := range ss {
			out = append(out, s)
		}
		return out
	}
	vals := map[string]any{"policies": map[string]any{"enabled": true, "ovnAnnotationWriters": map[string]any{
		"users": list(writers.Users), "groups": list(writers.Groups), "nodeGroup": writers.NodeGroup}}}
	if writers.ServiceAccount != "" {
		vals["serviceAccount"] = map[string]any{"name": writers.ServiceAccount}
	}
	objs, err := RenderChart(c, vals, paramsNamespace)
	if err != nil {
		return nil, fmt.Errorf("rendering the chart's policies: %w", err)
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if k := o.GetKind(); k == "ValidatingAdmissionPolicy" || k == "ValidatingAdmissionPolicyBinding" {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the chart renders no policies")
	}
	return out, nil
}
