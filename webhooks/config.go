// Package webhooks holds udnkit's admission webhooks: the validating webhooks
// of UserDefinedNetwork and ClusterUserDefinedNetwork (overlap with the
// cluster's internal ranges, one primary network per namespace, the
// namespace label, Layer3 append-only), and the pod webhooks for predefined
// addresses (OKEP-5233). Everything a single object can check is CEL in the
// CRDs; this package does what needs configuration, other objects or a
// warning. The pure checks are exported so `udnctl validate` can run them
// offline.
package webhooks
