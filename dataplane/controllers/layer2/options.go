package layer2

import "flag"

// Options configure the Layer2 controller.
type Options struct {
	// AdoptLegacy is --adopt-legacy-layer2: take over and remove the old
	// Layer2 topology's rows OVN-Kubernetes created (see
	// topology.Layer2Legacy). Off, udnkit never touches a row it did not
	// create.
	AdoptLegacy bool
}

// BindFlags binds Options to the manager's flags.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.AdoptLegacy, "adopt-legacy-layer2", false, "let the Layer2 transit-router topology take over and remove the old topology's rows of each network that OVN-Kubernetes created (OKEP-5094 upgrade: the old transit router and layer2 switch by name, their rtos-/stor- ports, routes via the network's subnets, SNATs to its masquerade IPs, and of each local node with an l3-gateway-config its gateway router, external side and management port, which udnkit then writes); off, udnkit never modifies or deletes a row it did not create")
	// The flag's earlier name; "migration" now means only KubeVirt live migration.
	fs.BoolVar(&o.AdoptLegacy, "migrate-legacy-layer2", false, "deprecated: --adopt-legacy-layer2")
}
