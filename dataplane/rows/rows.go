package rows

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
)

// External ID keys that mark the rows udnkit owns. Network and Topology are
// OVN-Kubernetes' own keys; Piece separates the topology pieces that share a
// router (the Layer2 topology and the live-migration routes on one transit
// router), so applying one piece never removes another's rows.
const (
	ExternalIDNetwork  = "k8s.ovn.org/network"
	ExternalIDTopology = "k8s.ovn.org/topology"
	ExternalIDPiece    = "k8s.ovn.org/udnkit-piece"
)

// Owner is the set of external_ids that marks every row of one topology piece
// of one network. A row is owned when its external_ids contain all of them.
type Owner struct {
	Network  string
	Topology string
	Piece    string
	// AdoptLegacy also claims rows that carry the network and topology but no
	// piece: the rows of the topology this piece replaces (the old Layer2
	// topology's GR-to-switch ports, routes and NATs), so they are cleaned up.
	AdoptLegacy bool
	// Legacy narrows AdoptLegacy to the rows it accepts (the row is a
	// *nbdb.LogicalRouter, *nbdb.LogicalRouterPort, ... of the table at hand).
	// OVN-Kubernetes labels its own rows of a network (the gateway router, its
	// rtoe- port and default routes, the external switch) with the same
	// network and topology and no piece: without Legacy they would be adopted
	// and removed. nil adopts every such row.
	Legacy func(row any) bool
}

// IDs is the external_ids every row of the piece carries.
func (o Owner) IDs() map[string]string {
	return map[string]string{ExternalIDNetwork: o.Network, ExternalIDTopology: o.Topology, ExternalIDPiece: o.Piece}
}

// Settled says whether o.Owns answers alike for a row with these
// external_ids whatever AdoptLegacy and Legacy are (which one owner's
// Applies may change): what the planner's memos may remember.
func (o Owner) Settled(ids map[string]string) bool {
	_, piece := ids[ExternalIDPiece]
	return piece || ids[ExternalIDNetwork] != o.Network || ids[ExternalIDTopology] != o.Topology
}

// Owns says whether a row with these external_ids (row is the
// *nbdb.LogicalRouter, ... itself, for Legacy) is the piece's.
func (o Owner) Owns(ids map[string]string, row any) bool {
	if ids[ExternalIDNetwork] != o.Network || ids[ExternalIDTopology] != o.Topology {
		return false
	}
	piece, ok := ids[ExternalIDPiece]
	if piece == o.Piece {
		return true
	}
	return o.AdoptLegacy && !ok && (o.Legacy == nil || o.Legacy(row))
}

// Router is a desired Logical_Router with the children this piece owns on it.
type Router struct {
	// Row is the router itself; Name is required.
	Row nbdb.LogicalRouter
	// Ref marks a router another piece (or another component) owns: it is found
	// by name and never created, updated or deleted; only this piece's ports,
	// routes, policies and NATs on it are managed. Applying fails when it is missing.
	Ref bool
	// Shared marks a router that another component may own: when it exists and
	// this piece does not own it, it is handled like Ref (only this piece's
	// children are managed); when it is missing, this piece creates and owns it
	// (and removes it with the piece's last desired state).
	Shared   bool
	Ports    []nbdb.LogicalRouterPort
	Routes   []nbdb.LogicalRouterStaticRoute
	Policies []nbdb.LogicalRouterPolicy
	NATs     []nbdb.NAT
	// GatewayChassis are the gateway chassis of this piece's ports, by the
	// name of a port in Ports: rows the port holds (its gateway_chassis
	// column), planned with it and garbage-collected with it.
	GatewayChassis map[string][]nbdb.GatewayChassis
}

// Switch is a desired Logical_Switch with the ports this piece owns on it.
type Switch struct {
	Row nbdb.LogicalSwitch
	// Ref and Shared mean what they mean for a Router.
	Ref    bool
	Shared bool
	Ports  []nbdb.LogicalSwitchPort
}

// Desired is everything one topology piece wants in the Northbound database.
type Desired struct {
	Owner    Owner
	Routers  []Router
	Switches []Switch
	// DHCPOptions are root rows, identified by their cidr and k8s.ovn.org/vm external ID.
	DHCPOptions []nbdb.DHCPOptions
	// AddressSets are root rows, identified by their name (which policies'
	// matches reference as $name).
	AddressSets []nbdb.AddressSet
}

// ExternalIDShared marks a router or switch a piece created as Shared.
const ExternalIDShared = "k8s.ovn.org/udnkit-shared"

// ExternalIDVM names the VM (namespace/name) a DHCP_Options row serves
// (part of the row's identity: package schema).
const ExternalIDVM = schema.ExternalIDVM

// Validate refuses a Desired no Apply can hold: an owner without network,
// topology or piece, and a router, switch or port without a name or with
// the name of another of its kind.
func (d *Desired) Validate() error {
	if d.Owner.Network == "" || d.Owner.Topology == "" || d.Owner.Piece == "" {
		return errors.New("desired rows: owner needs network, topology and piece")
	}
	seen := map[string]bool{}
	check := func(kind, name string) error {
		if name == "" {
			return fmt.Errorf("desired rows: a %s has no name", kind)
		}
		if seen[kind+"/"+name] {
			return fmt.Errorf("desired rows: %s %q appears twice", kind, name)
		}
		seen[kind+"/"+name] = true
		return nil
	}
	for _, r := range d.Routers {
		if err := check("Logical_Router", r.Row.Name); err != nil {
			return err
		}
		ports := map[string]bool{}
		for _, p := range r.Ports {
			if err := check("Logical_Router_Port", p.Name); err != nil {
				return err
			}
			ports[p.Name] = true
		}
		for _, port := range slices.Sorted(maps.Keys(r.GatewayChassis)) {
			if !ports[port] {
				return fmt.Errorf("desired rows: router %q: gateway chassis of port %q, which is not one of its ports", r.Row.Name, port)
			}
			for _, g := range r.GatewayChassis[port] {
				if g.ChassisName == "" {
					return fmt.Errorf("desired rows: port %q: gateway chassis %q has no chassis_name", port, g.Name)
				}
				if err := check("Gateway_Chassis", g.Name); err != nil {
					return err
				}
			}
		}
	}
	for _, s := range d.Switches {
		if err := check("Logical_Switch", s.Row.Name); err != nil {
			return err
		}
		for _, p := range s.Ports {
			if err := check("Logical_Switch_Port", p.Name); err != nil {
				return err
			}
		}
	}
	return nil
}
