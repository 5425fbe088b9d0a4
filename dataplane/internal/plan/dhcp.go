package plan

import (
	"fmt"

	"github.com/udnkit/udnkit/dataplane/internal/schema"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// dhcpOptions plans the piece's DHCP options (root rows) and notes the
// UUID of each desired one by key, for the switch ports that name them
// (planned after).
func (p *Planner) dhcpOptions(desired []nbdb.DHCPOptions) error {
	if err := roots(p, schema.DHCPOptions, desired); err != nil {
		return err
	}
	p.dhcp = map[string]string{}
	for _, u := range p.scan(nbdb.DHCPOptionsTable, nil, false) {
		if m := p.row(nbdb.DHCPOptionsTable, u); m != nil {
			o := m.(*nbdb.DHCPOptions)
			if p.owner.Owns(o.ExternalIDs, m) {
				p.dhcp[rows.DHCPKey(*o)] = u
			}
		}
	}
	for k, u := range p.inserted {
		if k[0] == nbdb.DHCPOptionsTable {
			p.dhcp[k[1]] = u
		}
	}
	return nil
}

// portDHCP returns a switch's desired ports with their dhcpv4_options and
// dhcpv6_options set from PortDHCP (a copy when there are any).
func (p *Planner) portDHCP(s *rows.Switch) ([]nbdb.LogicalSwitchPort, error) {
	if len(s.PortDHCP) == 0 {
		return s.Ports, nil
	}
	ports := make([]nbdb.LogicalSwitchPort, len(s.Ports))
	copy(ports, s.Ports)
	for i := range ports {
		ref := s.PortDHCP[ports[i].Name]
		var err error
		if ports[i].Dhcpv4Options, err = p.dhcpUUID(ports[i].Name, ref.V4); err == nil {
			ports[i].Dhcpv6Options, err = p.dhcpUUID(ports[i].Name, ref.V6)
		}
		if err != nil {
			return nil, err
		}
	}
	return ports, nil
}

// dhcpUUID is the UUID of the piece's DHCP options by key (nil for "").
func (p *Planner) dhcpUUID(port, key string) (*string, error) {
	if key == "" {
		return nil, nil
	}
	u, ok := p.dhcp[key]
	if !ok {
		return nil, fmt.Errorf("port %q: DHCP options %q are not among the desired DHCP options", port, key)
	}
	return &u, nil
}
