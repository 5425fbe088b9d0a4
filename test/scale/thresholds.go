package main

import (
	_ "embed"
	"os"

	"github.com/udnkit/udnkit/test/scale/internal/report"
)

// defaultThresholds is thresholds.yaml, the targets make scale judges.
//
//go:embed thresholds.yaml
var defaultThresholds []byte

// defaultThresholdsName names the embedded file in messages.
const defaultThresholdsName = "test/scale/thresholds.yaml"

// loadThresholds reads the targets from path ("" is the embedded
// thresholds.yaml) and checks that each names a figure of the report and
// bounds it.
func loadThresholds(path string) (report.Thresholds, error) {
	data, source := defaultThresholds, defaultThresholdsName
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return report.Thresholds{}, err
		}
		source = path
	}
	return report.ParseThresholds(source, data)
}
