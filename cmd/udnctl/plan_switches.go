package main

import (
	"fmt"

	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/dataplane/topology/pods"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// podlessSwitch plans the switch udnkit writes for a Localnet or
// Secondary Layer2 network before any pod attaches (its pods' ports go on
// it; a Secondary Layer2 network's takes network ID networkID); ok false:
// the network has no switch of its own.
func podlessSwitch(n network, cfg ovnk.ClusterConfig, networkID int) (d *rows.Desired, ok bool, err error) {
	nads, err := n.nads(cfg)
	if err != nil || len(nads) == 0 {
		return nil, false, err
	}
	conf, err := netconf.Parse(nads[0].Spec.Config)
	if err != nil {
		return nil, false, err
	}
	subnets, err := conf.SubnetPrefixes()
	if err != nil {
		return nil, false, fmt.Errorf("subnets: %w", err)
	}
	switch {
	case conf.Topology == ovnk.TopologyLocalnet:
		d, err = pods.LocalnetSwitch(pods.LocalnetNetwork{Name: conf.Name, Role: conf.Role, Subnets: subnets,
			PhysicalNetwork: conf.PhysicalNetworkName, VLAN: int(conf.VLANID)})
	case conf.Topology == base.TopologyLayer2 && conf.Role == podannotation.RoleSecondary:
		d, err = pods.SecondaryLayer2Switch(pods.SecondaryLayer2Network{Name: conf.Name, Subnets: subnets, NetworkID: networkID})
	default:
		return nil, false, nil
	}
	return d, err == nil, err
}
