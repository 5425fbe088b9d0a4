// Package zone is what the dataplane's controllers (layer2, layer3,
// multivtep, migration) share about the OVN zone they program: the zone's
// Options and flags (--zone, --dataplane-workers), the NAD ownership rule
// (trust.go), reading networks and nodes from NADs and Nodes (nad.go), the
// watches and their predicates (watch.go), the work queues (queue.go), the
// sweeps that remove deleted networks' rows (collect.go) and what each
// controller's name function said of each NAD version between two sweeps
// (names.go), the detection of
// networks OVN-Kubernetes already programs (upstream.go), the re-queueing of
// networks whose rows the database lost (resync.go), the skip report
// (skipped.go) and the runnable that connects to OVN before the controllers
// start (connect.go).
//
// It imports no controller; every controller imports it, and none imports
// another (layers_test.go enforces both).
package zone
