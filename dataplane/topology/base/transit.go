package base

import "strconv"

// TransitSwitchOtherConfig is the other_config every interconnect transit
// switch gets, whoever builds it (a Layer3 network's transit switch, a
// Primary or Secondary Layer2 network's switch), as upstream's one
// addTransitSwitchConfig (pkg/ovn/zone_interconnect/zone_ic_handler.go)
// writes it: interconn-ts (the switch's own name), requested-tnl-key (the
// tunnel key all zones agree on) and IGMP snooping that floods unregistered
// multicast and queries nothing. The map is new: a caller adds its own keys
// (a Layer2 switch's subnets).
func TransitSwitchOtherConfig(name string, tunnelKey int) map[string]string {
	return map[string]string{
		"interconn-ts":      name,
		"requested-tnl-key": strconv.Itoa(tunnelKey),
		"mcast_snoop":       "true", "mcast_querier": "false", "mcast_flood_unregistered": "true",
	}
}
