package rows

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/ovnk"
)

// Owner is the set of external_ids that marks every row of one topology piece
// of one network. A row is owned when its external_ids contain all of them.
type Owner struct {
	Network  string
	Topology string
	Piece    string
	// AdoptLegacy also claims rows that carry the network and topology but no
	// piece: the rows of the topology this piece replaces (the old Layer2
	// topology's GR-to-switch ports, routes and NATs), so they are cleaned
	// up, and the rows it keeps that the piece now writes (a gateway
	// router's external side), so they converge to the piece's values.
	AdoptLegacy bool
	// Legacy narrows AdoptLegacy to the rows it accepts (the row is a
	// *nbdb.LogicalRouter, *nbdb.LogicalRouterPort, ... of the table at hand).
	// OVN-Kubernetes labels its own rows of a network (the gateway router, its
	// rtoe- port and default routes, the external switch) with the same
	// network and topology and no piece: without Legacy they would be adopted
	// and removed. nil adopts every such row. Legacy also decides on rows
	// with no external_ids at all (OVN-Kubernetes writes a node's management
	// port so): only a non-nil Legacy claims any of them.
	Legacy func(row any) bool
	// Only, when its key is set, narrows the piece to those of its rows
	// whose external_ids also hold Only's key with Only's value (one
	// Service's load balancers of a network's services piece, by
	// k8s.ovn.org/owner): an Apply of such an owner plans, keeps and
	// removes those rows only and leaves the piece's others as they are,
	// so one part of a large piece is applied at the cost of the part. The
	// rows carry the piece's external_ids as without it; the owner without
	// Only still owns them all (a network's removal takes every part). A
	// Desired of it holds only load balancers carrying the pair and rows it
	// references (Validate).
	Only [2]string
}

// Key identifies the owner's rows: network, topology, piece and Only.
func (o Owner) Key() [5]string {
	return [5]string{o.Network, o.Topology, o.Piece, o.Only[0], o.Only[1]}
}

// IDs is the external_ids every row of the piece carries.
func (o Owner) IDs() map[string]string {
	return map[string]string{ovnk.ExternalIDNetwork: o.Network, ovnk.ExternalIDTopology: o.Topology, ovnk.ExternalIDPiece: o.Piece}
}

// Settled says whether o.Owns answers alike for a row with these
// external_ids whatever AdoptLegacy and Legacy are (which one owner's
// Applies may change): what the planner's memos may remember.
func (o Owner) Settled(ids map[string]string) bool {
	if len(ids) == 0 {
		return false
	}
	_, piece := ids[ovnk.ExternalIDPiece]
	return piece || ids[ovnk.ExternalIDNetwork] != o.Network || ids[ovnk.ExternalIDTopology] != o.Topology
}

// Owns says whether a row with these external_ids (row is the
// *nbdb.LogicalRouter, ... itself, for Legacy) is the piece's.
func (o Owner) Owns(ids map[string]string, row any) bool {
	if len(ids) == 0 {
		return o.AdoptLegacy && o.Legacy != nil && o.Legacy(row)
	}
	// Only first: a part's plan asks about every row of its network, and
	// most are another part's.
	if o.Only[0] != "" && ids[o.Only[0]] != o.Only[1] {
		return false
	}
	if ids[ovnk.ExternalIDNetwork] != o.Network || ids[ovnk.ExternalIDTopology] != o.Topology {
		return false
	}
	piece, ok := ids[ovnk.ExternalIDPiece]
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
	Shared bool
	// Copp is the zone's control plane protection the router uses (nil:
	// none), set in its copp column when this piece creates or owns it.
	Copp     *Copp
	Ports    []nbdb.LogicalRouterPort
	Routes   []nbdb.LogicalRouterStaticRoute
	Policies []nbdb.LogicalRouterPolicy
	NATs     []nbdb.NAT
	// GatewayChassis are the gateway chassis of this piece's ports, by the
	// name of a port in Ports: rows the port holds (its gateway_chassis
	// column), planned with it and garbage-collected with it.
	GatewayChassis map[string][]nbdb.GatewayChassis
	// LoadBalancerGroups names the Load_Balancer_Group rows in the router's
	// load_balancer_group column that this piece manages: this Desired's
	// (LoadBalancerGroups) or existing ones found by name.
	LoadBalancerGroups []string
	// LoadBalancers names load balancers of this Desired's LoadBalancers
	// that the router's load_balancer column holds; of the column's
	// members, only this piece's own load balancers not named are taken
	// out, whoever owns the router.
	LoadBalancers []string
}

// Copp is a control plane protection that every network of a zone shares
// (package schema's Zone rows): found by name and referenced as the
// database holds it, whoever wrote it; when missing, it is created with
// its missing meters and their band in the transaction of the router that
// uses it. No plan updates or deletes one: it stays when the last network
// that used it goes.
type Copp struct {
	// Row: the name and, by protocol, the name of the meter
	// (Row.Meters); no external_ids.
	Row nbdb.Copp
	// Meters are the meters Row names (by name; Bands is filled with
	// Band).
	Meters []nbdb.Meter
	// Band is the one band every meter created holds.
	Band nbdb.MeterBand
}

// Switch is a desired Logical_Switch with the ports this piece owns on it.
type Switch struct {
	Row nbdb.LogicalSwitch
	// Ref and Shared mean what they mean for a Router.
	Ref    bool
	Shared bool
	Ports  []nbdb.LogicalSwitchPort
	// ACLs and QoS are this piece's rows in the switch's acls and
	// qos_rules columns.
	ACLs []nbdb.ACL
	QoS  []nbdb.QoS
	// LoadBalancerGroups and LoadBalancers mean what they mean for a Router.
	LoadBalancerGroups []string
	LoadBalancers      []string
	// PortDHCP sets a port's dhcpv4_options and dhcpv6_options, by the
	// port's name (one of Ports): the keys of rows of this Desired's
	// DHCPOptions (DHCPKey).
	PortDHCP map[string]DHCPRef
}

// DHCPRef names a port's DHCP_Options rows by DHCPKey ("": none).
type DHCPRef struct{ V4, V6 string }

// DHCPKey is how a DHCP_Options row is known within a Desired: the VM it
// serves (external_ids k8s.ovn.org/vm) and its cidr.
func DHCPKey(o nbdb.DHCPOptions) string { return schema.DHCPOptions.Key(&o) }

// PortGroup is a desired Port_Group (a root row, by name) with the ACLs this
// piece owns on it. Ref and Shared mean what they mean for a Router.
type PortGroup struct {
	Row    nbdb.PortGroup
	Ref    bool
	Shared bool
	// Ports are the names of the logical switch ports this piece puts in
	// the group: its own (in Switches) or existing ones. Of the group's
	// current members, only ports this piece owns are removed.
	Ports []string
	ACLs  []nbdb.ACL
}

// LoadBalancerGroup is a desired Load_Balancer_Group (a root row, by name)
// holding load balancers of this Desired's LoadBalancers, by name. Ref and
// Shared mean what they mean for a Router.
type LoadBalancerGroup struct {
	Row           nbdb.LoadBalancerGroup
	Ref           bool
	Shared        bool
	LoadBalancers []string
}

// ZoneMeter is a meter every network of a zone shares (the acl-logging
// meter ACLs name in their meter column): created with its band when
// missing, never updated or deleted, as a Copp's meters.
type ZoneMeter struct {
	Row  nbdb.Meter
	Band nbdb.MeterBand
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
	// PortGroups, LoadBalancers (root rows, by name), LoadBalancerGroups and
	// StaticMACBindings (root rows, by logical_port and ip).
	PortGroups         []PortGroup
	LoadBalancers      []nbdb.LoadBalancer
	LoadBalancerGroups []LoadBalancerGroup
	StaticMACBindings  []nbdb.StaticMACBinding
	// Meters are zone meters this piece's ACLs name.
	Meters []ZoneMeter
}

// Empty says whether d holds no rows: the piece goes away.
func (d *Desired) Empty() bool {
	return len(d.Routers)+len(d.Switches)+len(d.DHCPOptions)+len(d.AddressSets)+len(d.PortGroups)+
		len(d.LoadBalancers)+len(d.LoadBalancerGroups)+len(d.StaticMACBindings)+len(d.Meters) == 0
}

// Validate refuses a Desired no Apply can hold: an owner without network,
// topology or piece, a router, switch, port, port group, load balancer,
// load balancer group or zone meter without a name or with the name of another of its kind, and a zone
// meter's band without a rate.
func (d *Desired) Validate() error {
	if d.Owner.Network == "" || d.Owner.Topology == "" || d.Owner.Piece == "" {
		return errors.New("desired rows: owner needs network, topology and piece")
	}
	if err := d.validateOnly(); err != nil {
		return err
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
	copps := map[string]*Copp{}
	for _, r := range d.Routers {
		if err := check("Logical_Router", r.Row.Name); err != nil {
			return err
		}
		if err := r.Copp.validate(r.Row.Name, copps); err != nil {
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
	dhcp := map[string]bool{"": true}
	for _, o := range d.DHCPOptions {
		dhcp[DHCPKey(o)] = true
	}
	for _, s := range d.Switches {
		if err := check("Logical_Switch", s.Row.Name); err != nil {
			return err
		}
		ports := map[string]bool{}
		for _, p := range s.Ports {
			if err := check("Logical_Switch_Port", p.Name); err != nil {
				return err
			}
			ports[p.Name] = true
		}
		if err := s.checkPortDHCP(ports, dhcp); err != nil {
			return err
		}
	}
	for _, g := range d.PortGroups {
		if err := check("Port_Group", g.Row.Name); err != nil {
			return err
		}
	}
	for _, lb := range d.LoadBalancers {
		if err := check("Load_Balancer", lb.Name); err != nil {
			return err
		}
	}
	for _, g := range d.LoadBalancerGroups {
		if err := check("Load_Balancer_Group", g.Row.Name); err != nil {
			return err
		}
	}
	for _, m := range d.Meters {
		if err := check("Meter", m.Row.Name); err != nil {
			return err
		}
		if m.Band.Rate < 1 {
			return fmt.Errorf("desired rows: meter %q: band rate %d: must be at least 1", m.Row.Name, m.Band.Rate)
		}
	}
	return nil
}

// validateOnly refuses, for an owner narrowed by Only, a Desired holding
// rows the narrowed owner could not find again as its own: a load balancer
// without Only's pair, any other row of its own (children, port groups,
// DHCP options, address sets, bindings, meters), a router, switch or load
// balancer group it does not only reference, and adopting legacy rows.
func (d *Desired) validateOnly() error {
	o := d.Owner
	if o.Only[0] == "" {
		return nil
	}
	bad := func(what string) error {
		return fmt.Errorf("desired rows: owner narrowed to %s=%s holds %s", o.Only[0], o.Only[1], what)
	}
	if o.AdoptLegacy {
		return bad("adopted legacy rows")
	}
	if len(d.DHCPOptions)+len(d.AddressSets)+len(d.PortGroups)+len(d.StaticMACBindings)+len(d.Meters) > 0 {
		return bad("rows other than load balancers")
	}
	for _, lb := range d.LoadBalancers {
		if lb.ExternalIDs[o.Only[0]] != o.Only[1] {
			return bad(fmt.Sprintf("load balancer %q without the pair", lb.Name))
		}
	}
	for _, r := range d.Routers {
		if !r.Ref || r.Copp != nil || len(r.Ports)+len(r.Routes)+len(r.Policies)+len(r.NATs)+len(r.GatewayChassis) > 0 {
			return bad(fmt.Sprintf("router %q with rows of its own", r.Row.Name))
		}
	}
	for _, s := range d.Switches {
		if !s.Ref || len(s.Ports)+len(s.ACLs)+len(s.QoS)+len(s.PortDHCP) > 0 {
			return bad(fmt.Sprintf("switch %q with rows of its own", s.Row.Name))
		}
	}
	for _, g := range d.LoadBalancerGroups {
		if !g.Ref {
			return bad(fmt.Sprintf("load balancer group %q it may create", g.Row.Name))
		}
	}
	return nil
}

// validate refuses a COPP with no name, one that names a meter it does not
// define, and two different COPPs of one name (seen: by name).
func (c *Copp) validate(router string, seen map[string]*Copp) error {
	if c == nil {
		return nil
	}
	field := fmt.Sprintf("desired rows: router %q copp", router)
	if c.Row.Name == "" {
		return fmt.Errorf("%s: has no name", field)
	}
	if prev, ok := seen[c.Row.Name]; ok {
		if prev != c && !reflect.DeepEqual(prev, c) {
			return fmt.Errorf("%s: COPP %q is defined differently by another router", field, c.Row.Name)
		}
		return nil
	}
	seen[c.Row.Name] = c
	meters := map[string]bool{}
	for _, m := range c.Meters {
		if m.Name == "" || meters[m.Name] {
			return fmt.Errorf("%s: meter names must be unique and not empty, got %q twice or empty", field, m.Name)
		}
		meters[m.Name] = true
	}
	for proto, name := range c.Row.Meters {
		if !meters[name] {
			return fmt.Errorf("%s: meters[%s] names meter %q, which the COPP does not define", field, proto, name)
		}
	}
	if c.Band.Rate < 1 {
		return fmt.Errorf("%s: band rate %d: must be at least 1", field, c.Band.Rate)
	}
	return nil
}

// checkPortDHCP refuses DHCP references of a port that is not one of
// the switch's (ports) or to a key no DHCP options row of the Desired has.
func (s *Switch) checkPortDHCP(ports, dhcp map[string]bool) error {
	for _, port := range slices.Sorted(maps.Keys(s.PortDHCP)) {
		ref := s.PortDHCP[port]
		if !ports[port] {
			return fmt.Errorf("desired rows: switch %q: DHCP options of port %q, which is not one of its ports", s.Row.Name, port)
		}
		for _, k := range []string{ref.V4, ref.V6} {
			if !dhcp[k] {
				return fmt.Errorf("desired rows: port %q: DHCP options %q are not among the desired DHCP options", port, k)
			}
		}
	}
	return nil
}
