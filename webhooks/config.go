// Package webhooks holds udnkit's admission webhooks and what the admission
// component sets up beside them. UserDefinedNetworks have no webhook: the
// ValidatingAdmissionPolicies of charts/udnkit/files/policies check them in
// the apiserver (the cluster's internal ranges, read from the ConfigMap
// WriteAdmissionParams writes; default gateways; one primary network per
// namespace; OVN name collisions; the namespace label; warnings), and
// ClusterUserDefinedNetworks likewise, but for what needs every namespace:
// the CUDN webhook, called only for a Primary CUDN whose selector is new or
// changed. The pod webhooks check predefined addresses (OKEP-5233).
// Everything a single object can check is CEL in the CRDs. The pure checks
// are exported so `udnctl validate` can run them offline; the policies give
// the same verdicts in the same words (TestPoliciesAgreeWithOfflineChecks).
package webhooks
