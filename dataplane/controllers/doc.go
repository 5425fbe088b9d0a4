// Package controllers wires the dataplane's controllers into a manager:
// Setup opens the OVN client (package dataplane), registers the Layer2,
// Layer3, multi-VTEP and live-migration controllers (packages layer2,
// layer3, multivtep, migration) and the pod-port controller (package
// pods), with what they share (package zone), and connects in the
// background before starting them. Options gathers the
// connection's, the zone's and each controller's options, and BindFlags
// binds them to the manager's flags.
//
// Its tests drive the controllers from API state through a real API server
// and real OVN databases.
package controllers
