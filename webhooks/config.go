// Package webhooks holds udnkit's admission webhooks and what the admission
// component sets up beside them. The ValidatingAdmissionPolicies of
// charts/udnkit/files/policies check UDNs and CUDNs in the apiserver (the
// cluster's internal ranges, read from the ConfigMap WriteAdmissionParams
// writes; default gateways; OVN name collisions; the namespace label;
// warnings). The webhooks do what a policy cannot, or only at a cost that
// grows with the cluster: one primary network per namespace, called only for
// a new Primary UDN and for a Primary CUDN whose selector is new or changed
// (their match conditions), reading an indexed informer cache. The pod
// webhooks check predefined addresses (OKEP-5233). Everything a single
// object can check is CEL in the CRDs. The pure checks are exported so
// `udnctl validate` can run them offline; the policies give the same
// verdicts in the same words (TestPoliciesAgreeWithOfflineChecks).
package webhooks
