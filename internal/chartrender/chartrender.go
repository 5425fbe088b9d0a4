// Package chartrender renders udnkit's Helm chart as `helm template` does,
// for the tests that check what the chart installs and for `make run`, which
// installs some of the chart's objects into its local control plane.
package chartrender

import (
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/udnkit/udnkit/cel"
)

// Release names the release a render is for: `helm template <Name> -n <Namespace>`.
type Release struct {
	Name, Namespace string
	// KubeVersion is the cluster's version, "v1.37.2" (.Capabilities.KubeVersion).
	KubeVersion string
}

// Render renders chart c with user values vals as `helm template` would
// for release r, and returns each rendered file's text by its name
// ("udnkit/templates/access.yaml").
func Render(c *chart.Chart, vals map[string]any, r Release) (map[string]string, error) {
	kv, err := chartutil.ParseKubeVersion(r.KubeVersion)
	if err != nil {
		return nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	values, err := chartutil.ToRenderValues(c, vals, chartutil.ReleaseOptions{Name: r.Name, Namespace: r.Namespace, IsInstall: true}, caps)
	if err != nil {
		return nil, err
	}
	return engine.Render(c, values)
}

// Objects loads the chart in dir, renders it (Render) and returns the
// objects of the rendered templates whose file name ends in one of
// templates (every template when none is given), in file-name order.
func Objects(dir string, vals map[string]any, r Release, templates ...string) ([]*unstructured.Unstructured, error) {
	c, err := loader.Load(dir)
	if err != nil {
		return nil, err
	}
	files, err := Render(c, vals, r)
	if err != nil {
		return nil, err
	}
	return Decode(files, templates...)
}

// Decode returns the objects of the rendered files whose name ends in one
// of templates (every YAML file when none is given), in file-name order.
func Decode(files map[string]string, templates ...string) ([]*unstructured.Unstructured, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		if strings.HasSuffix(name, ".yaml") && (len(templates) == 0 || hasSuffix(name, templates)) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []*unstructured.Unstructured
	for _, name := range names {
		objs, err := cel.DecodeObjects([]byte(files[name]))
		if err != nil {
			return nil, fmt.Errorf("%s does not parse: %w\n%s", name, err, files[name])
		}
		out = append(out, objs...)
	}
	return out, nil
}

func hasSuffix(name string, suffixes []string) bool {
	for _, s := range suffixes {
		if strings.HasSuffix(name, "/"+s) {
			return true
		}
	}
	return false
}
