// Package ovnk is udnkit's contract with OVN-Kubernetes: every wire format,
// name and default that udnkit shares with it has its one home here, and
// every stage (webhooks, reconcilers, dataplane) reads and writes them only
// through this package and its sub-packages.
//
//   - The NetConf a NetworkAttachmentDefinition carries, the one NAD
//     renderer and the ovn-kubernetes/default NAD stub's config: ovnk/netconf.
//   - One codec per annotation (node.go, network.go, encapmapping.go; the
//     pods' in ovnk/podannotation), the keys in annotations.go: a type with
//     Encode/Decode and one error per malformed shape. KubeVirt's labels and
//     annotations, and a VM's current pod: ovnk/kubevirt.
//   - The IPAMClaim condition OVN-Kubernetes writes (ipamclaim.go); the
//     conditions of udnkit's own kinds live in apis/k8s.ovn.org/v1.
//   - Which NADs may carry a network (ovnk/nadtrust) and which namespaces a
//     selector may match (ovnk/nsselect).
//   - OVN object names (names.go), MAC derivation (mac.go), IDs, tunnel keys
//     and transit subnets (ids.go), masquerade and gateway addresses
//     (masquerade.go, gateway.go), the default ranges (ranges.go).
//   - ClusterConfig (config.go): the cluster's facts, parsed once by the
//     manager and passed down.
//
// The package keeps no state of its own: the manager builds ClusterConfig
// once and passes it down.
package ovnk
