// Package webhooks holds udnkit's admission webhooks and what the admission
// component sets up beside them. The ValidatingAdmissionPolicies of
// charts/udnkit/files/policies check every UDN request's own spec and the
// CUDNs' in the apiserver (the cluster's internal ranges, read from the
// ConfigMap WriteAdmissionParams writes; default gateways; the namespace
// label; warnings). What depends on the rest of the cluster is the
// webhooks', decided from the informer cache at a cost that does not grow
// with what a namespace holds: the UDN webhook is called for every new UDN
// (the per-namespace and cluster network limits, OVN name collisions, one
// primary network per namespace); the CUDN webhook for every new CUDN (the
// cluster's network IDs, name collisions) and a Primary CUDN whose selector
// is new or changed (every namespace it selects, which a policy could only
// check at a cost per namespace or CUDN). The pod webhooks check predefined
// addresses (OKEP-5233) and IPAMClaim references. The NAD webhook keeps a
// UDN's or CUDN's network name to that network's own NADs (the policy
// udnkit-nad-writers keeps who writes them). Everything a single object can
// check is CEL in the CRDs. The pure checks are exported so `udnctl
// validate` can run them offline; the policies give the same verdicts in the
// same words (TestPoliciesAgreeWithOfflineChecks).
//
// One package per admitted kind; this one registers them (SetupWithManager)
// and writes the policies' params:
//   - network: the UDN and CUDN validators, the network limits and the
//     offline checks of a NetworkSpec (udnctl validate, the policies' twin),
//     and the lookup of a namespace's primary network.
//   - pod: the pod validator and defaulter (the default-network annotation's
//     NetworkSelectionElement, requested addresses, IPAMClaims).
//   - nad: the NAD validator (a network name only in its own NADs).
//   - admit: what they share: bounded refusals, the admission answers and
//     their metric.
package webhooks
