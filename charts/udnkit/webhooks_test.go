package udnkitchart_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/udnkit/udnkit/envtest"
)

// TestChartInstallsEveryWebhook: every webhook make manifests generates
// (files/webhook) is in the chart's configurations, on its path, with its
// rules and match conditions as generated.
func TestChartInstallsEveryWebhook(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(envtest.WebhookDir(), "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	rendered := map[string]admissionregistrationv1.ValidatingWebhook{}
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		var cfg admissionregistrationv1.ValidatingWebhookConfiguration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(find(objs, kind, "").Object, &cfg); err != nil {
			t.Fatal(err)
		}
		for _, w := range cfg.Webhooks {
			rendered[w.Name] = w
		}
	}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	n := 0
	for {
		var cfg admissionregistrationv1.ValidatingWebhookConfiguration
		if err := dec.Decode(&cfg); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		for _, want := range cfg.Webhooks {
			n++
			got, ok := rendered[want.Name]
			if !ok {
				t.Errorf("the chart installs no webhook %s", want.Name)
				continue
			}
			if got.ClientConfig.Service == nil || *got.ClientConfig.Service.Path != *want.ClientConfig.Service.Path ||
				!equality.Semantic.DeepEqual(got.Rules, want.Rules) || !equality.Semantic.DeepEqual(got.MatchConditions, want.MatchConditions) {
				t.Errorf("webhook %s differs from the generated one:\nchart:     %+v\ngenerated: %+v", want.Name, got, want)
			}
		}
	}
	if n == 0 || n != len(rendered) {
		t.Errorf("%d generated webhooks, %d in the chart", n, len(rendered))
	}
	if _, ok := rendered["network-attachment-definitions.udnkit.k8s.ovn.org"]; !ok {
		t.Error("the chart installs no NetworkAttachmentDefinition webhook")
	}
}
