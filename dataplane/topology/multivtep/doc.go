// Package multivtep builds the rows of OKEP-5535 (multiple VTEPs per node):
// MultiVTEPPorts and MultiVTEPPortsDual give a Layer3 network's transit
// switch one port per remote encap IP with the routes that use it, and
// Layer2MultiVTEPPorts the same for a Layer2 network's remote pod ports,
// with the Southbound encap each port binds to (PortEncap). Pure: plain
// inputs to a rows.Desired.
package multivtep
