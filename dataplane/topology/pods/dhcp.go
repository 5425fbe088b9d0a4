package pods

import (
	"fmt"
	"net/netip"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
)

// VMDHCPRows are the DHCP_Options rows of a VM pod's VM, one per IP family
// of its IPs: the one home of their values is migration.VMDHCP.Rows, which
// the caller passes (builders do not import one another).
type VMDHCPRows func(p Pod) []nbdb.DHCPOptions

// AddVMDHCP gives the ports of VM pods in d (Ports of a Primary Layer2
// network, upstream's requireDHCP) their VM's DHCP options: the VM's rows
// (one per IP family, shared by the VM's pods across a live migration) and
// the ports' dhcpv4_options and dhcpv6_options (rows.Switch.PortDHCP), as
// upstream's ensureDHCP and kubevirt.EnsureDHCPOptionsForLSP do. A pod
// without addresses gets none.
func AddVMDHCP(d *rows.Desired, n Network, vmRows VMDHCPRows, pods []Pod) error {
	if n.Topology != base.TopologyLayer2 {
		return fmt.Errorf("network.topology: VM DHCP options are written on Layer2 networks only, not %q", n.Topology)
	}
	byPort := map[string]Pod{}
	for _, p := range pods {
		if p.VM != "" && len(p.IPs) > 0 {
			byPort[p.PortName()] = p
		}
	}
	have := map[string]bool{}
	for _, opt := range d.DHCPOptions {
		have[rows.DHCPKey(opt)] = true
	}
	for i := range d.Switches {
		s := &d.Switches[i]
		for _, lsp := range s.Ports {
			p, ok := byPort[lsp.Name]
			if !ok {
				continue
			}
			var ref rows.DHCPRef
			for _, opt := range vmRows(p) {
				key := rows.DHCPKey(opt)
				if netip.MustParsePrefix(opt.Cidr).Addr().Is4() {
					ref.V4 = key
				} else {
					ref.V6 = key
				}
				if !have[key] {
					have[key] = true
					d.DHCPOptions = append(d.DHCPOptions, opt)
				}
			}
			if s.PortDHCP == nil {
				s.PortDHCP = map[string]rows.DHCPRef{}
			}
			s.PortDHCP[lsp.Name] = ref
		}
	}
	return nil
}
