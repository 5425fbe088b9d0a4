package refs

import (
	"fmt"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// DHCPOptions notes, once the plan diffed the piece's DHCP options (root
// rows), the UUID of each by key, for the switch ports that name them
// (planned after).
func (r *Resolver) DHCPOptions() {
	r.dhcp = map[string]string{}
	for _, u := range r.h.Scan(nbdb.DHCPOptionsTable, nil) {
		if m := r.h.Row(nbdb.DHCPOptionsTable, u); m != nil {
			o := m.(*nbdb.DHCPOptions)
			if r.owner.Owns(o.ExternalIDs, m) {
				r.dhcp[rows.DHCPKey(*o)] = u
			}
		}
	}
	for k, u := range r.h.InsertedIn(nbdb.DHCPOptionsTable) {
		r.dhcp[k] = u
	}
}

// PortDHCP returns a switch's desired ports with their dhcpv4_options and
// dhcpv6_options set from PortDHCP (a copy when there are any).
func (r *Resolver) PortDHCP(s *rows.Switch) ([]nbdb.LogicalSwitchPort, error) {
	if len(s.PortDHCP) == 0 {
		return s.Ports, nil
	}
	ports := make([]nbdb.LogicalSwitchPort, len(s.Ports))
	copy(ports, s.Ports)
	for i := range ports {
		ref := s.PortDHCP[ports[i].Name]
		var err error
		if ports[i].Dhcpv4Options, err = r.dhcpUUID(ports[i].Name, ref.V4); err == nil {
			ports[i].Dhcpv6Options, err = r.dhcpUUID(ports[i].Name, ref.V6)
		}
		if err != nil {
			return nil, err
		}
	}
	return ports, nil
}

// dhcpUUID is the UUID of the piece's DHCP options by key (nil for "").
func (r *Resolver) dhcpUUID(port, key string) (*string, error) {
	if key == "" {
		return nil, nil
	}
	u, ok := r.dhcp[key]
	if !ok {
		return nil, fmt.Errorf("port %q: DHCP options %q are not among the desired DHCP options", port, key)
	}
	return &u, nil
}
