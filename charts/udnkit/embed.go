// Package udnkitchart embeds the generated manifests of the udnkit Helm chart,
// so that binaries (udnctl, the local control plane) and tests can use the
// exact CRDs the chart installs without reading the checkout at run time.
package udnkitchart

import "embed"

// CRDs holds the generated k8s.ovn.org CRDs (files/crds) and the IPAMClaim and
// NetworkAttachmentDefinition CRDs copied from their Go modules
// (files/external-crds).
//
//go:embed files/crds/*.yaml files/external-crds/*.yaml
var CRDs embed.FS

// CRDDir and ExternalCRDDir are the directories of CRDs inside the chart and
// inside CRDs.
const (
	CRDDir         = "files/crds"
	ExternalCRDDir = "files/external-crds"
)
