// Package webhooks holds udnkit's admission webhooks and what the admission
// component sets up beside them. The ValidatingAdmissionPolicies of
// charts/udnkit/files/policies check UDNs and CUDNs in the apiserver (the
// cluster's internal ranges, read from the ConfigMap WriteAdmissionParams
// writes; default gateways; OVN name collisions; warnings), except a new
// Primary UDN: the apiserver calls the UDN webhook for it anyway (one
// primary network per namespace, which a policy could only check at a cost
// per CUDN), so the webhook makes every check of that request (the same
// checks, the namespace label, a collision through an indexed informer
// cache) and the policies' match conditions skip it. The CUDN webhook is
// called for a Primary CUDN whose selector is new or changed. The pod
// webhooks check predefined addresses (OKEP-5233). Everything a single
// object can check is CEL in the CRDs. The pure checks are exported so
// `udnctl validate` can run them offline; the policies and the UDN webhook
// give the same verdicts in the same words
// (TestPoliciesAgreeWithOfflineChecks).
package webhooks
