package base

import (
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/ovnk"
)

// DefaultCOPP is the control plane protection OVN-Kubernetes gives every
// router it creates (ovnk.DefaultCOPPName): the routers udnkit creates where
// upstream's would have it (the Layer2 transit router and gateway routers,
// the Layer3 cluster router) name it. The zone shares it (rows.Copp): an
// existing one, such as the one ovnkube-controller created, is used as it
// is; a missing one is created as upstream's EnsureDefaultCOPP writes it.
func DefaultCOPP() *rows.Copp {
	fair := true
	c := &rows.Copp{
		Row:  nbdb.Copp{Name: ovnk.DefaultCOPPName, Meters: map[string]string{}},
		Band: nbdb.MeterBand{Action: ovnk.COPPMeterBandAction, Rate: ovnk.COPPMeterBandRate},
	}
	for _, proto := range ovnk.COPPProtocols() {
		name := ovnk.COPPMeterName(proto)
		c.Row.Meters[proto] = name
		c.Meters = append(c.Meters, nbdb.Meter{Name: name, Fair: &fair, Unit: ovnk.COPPMeterUnit})
	}
	return c
}

// Layer3ClusterRouter is a Layer3 network's cluster router as a piece
// creates it when the Layer3 topology's is missing, marked as upstream's
// topologyfactory marks every cluster router it creates and with the option
// its NewClusterRouter sets: a router that learns no MAC binding from an
// ARP request not aimed at it.
func Layer3ClusterRouter(network string) nbdb.LogicalRouter {
	return nbdb.LogicalRouter{Name: ovnk.NamesFor(network).ClusterRouter(),
		ExternalIDs: map[string]string{ovnk.ExternalIDClusterRouter: "yes"},
		Options:     map[string]string{"always_learn_from_arp_request": "false"}}
}
