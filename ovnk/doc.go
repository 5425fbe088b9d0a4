// Package ovnk is udnkit's contract with OVN-Kubernetes: every wire format,
// name and default that udnkit shares with it has its one home here, and
// every stage (webhooks, reconcilers, dataplane) reads and writes them only
// through this package.
//
//   - The NetConf a NetworkAttachmentDefinition carries (netconf.go renders
//     it, netconf_parse.go parses it) and the one NAD renderer (nad.go).
//   - One codec per annotation (podnetworks.go, node.go, kubevirt.go,
//     annotations.go, encapmapping.go): a type with Encode/Decode and one
//     error per malformed shape.
//   - The ovn-kubernetes/default NAD stub's config (defaultnad.go) and the
//     IPAMClaim condition OVN-Kubernetes writes (ipamclaim.go); the
//     conditions of udnkit's own kinds live in apis/k8s.ovn.org/v1.
//   - OVN object names (names.go), MAC derivation (mac.go), IDs, tunnel keys
//     and transit subnets (ids.go), masquerade and gateway addresses
//     (masquerade.go, gateway.go), the default ranges (ranges.go).
//   - ClusterConfig (config.go): the cluster's facts, parsed once by the
//     manager and passed down.
//
// The package keeps no state of its own: the manager builds ClusterConfig
// once and passes it down.
package ovnk
