// Package migration is the dataplane's KubeVirt live-migration controller:
// for primary Layer2 networks it applies the point-to-point routes, reroute
// policies and DHCP options that keep a migrated VM's addresses reachable on
// its new node (migration.LiveMigrationRoutes).
//
// It has no flags of its own; package zone holds what it shares with the
// other dataplane controllers.
package migration
