// Package migration builds the rows of the KubeVirt live-migration design
// (kubevirt-live-migration-point-to-point.md) for a Primary Layer2 network:
// LiveMigrationRoutes gives each VM that runs away from the node owning its
// address the point-to-point static routes and reroute policies that keep
// that address reachable, and the per-VM DHCP options. Pure: plain inputs to
// a rows.Desired.
package migration
