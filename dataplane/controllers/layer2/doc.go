// Package layer2 is the dataplane's Layer2 controller: it reads each primary
// Layer2 network's NetworkAttachmentDefinition (its OVN-Kubernetes network
// config and the network ID and tunnel keys the reconcilers allocate), the
// Nodes (node IDs, chassis, topology version) and the UDN-enabled services,
// and applies the OKEP-5094 transit-router topology (topology.Layer2Topology)
// of this zone to OVN. A network OVN-Kubernetes already programs is left to
// it (zone.UpstreamRows); a zone whose local node still runs pods on the old
// topology waits until it drains.
//
// Its flags are Options'; package zone holds what it shares with the other
// dataplane controllers (trust, watches, sweeps, resync).
package layer2
