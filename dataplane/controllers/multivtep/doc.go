// Package multivtep is the dataplane's multi-VTEP controller (OKEP-5535):
// for Layer2 and Layer3 networks on nodes with several encapsulation IPs it
// applies the per-VTEP transit switch ports and routes
// (multivtep.MultiVTEPPorts, multivtep.Layer2MultiVTEPPorts) and points each
// remote pod port's Southbound binding at its pod's encap
// (dataplane.Client.SetPortEncaps; a binding that loses it, to another
// client or a replaced Southbound, makes the client resync the network).
// The router and switches its ports go
// on are the network's topology's (udnkit's or OVN-Kubernetes'), which it
// only references: while one is missing it waits (zone.TopologyWait).
//
// It has no flags of its own; package zone holds what it shares with the
// other dataplane controllers.
package multivtep
