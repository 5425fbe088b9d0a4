// Package layer3 is the dataplane's Layer3 controller: it reads each primary
// Layer3 network's NetworkAttachmentDefinition and applies two pieces: the
// OKEP-5377 subnet policies (topology.Layer3SubnetPoliciesForm) on the
// network's cluster router, in the form Options chooses, and the network's
// whole topology in this zone (topology.Layer3Topology) from the Nodes'
// annotations. Both share the cluster router: whichever piece creates it
// owns it, and the topology's rows are collected before the policies', so
// the router goes with the last of them. Beside OVN-Kubernetes programming
// the network (its join switch exists), the topology stands aside and
// reports it, as the Layer2 controller does; the policies still go on its
// router.
//
// Package zone holds what it shares with the other dataplane controllers.
package layer3
