// Package layer3 is the dataplane's Layer3 controller: it reads each primary
// Layer3 network's NetworkAttachmentDefinition and applies the OKEP-5377
// subnet policies (topology.Layer3SubnetPolicies) on the network's cluster
// router, in the form Options chooses.
//
// Package zone holds what it shares with the other dataplane controllers.
package layer3
