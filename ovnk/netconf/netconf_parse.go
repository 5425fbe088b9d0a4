package netconf

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Parse reads a NAD's spec.config, the inverse of Render, for the components
// that consume the NetConf (the dataplane, udnctl).
func Parse(config string) (*NetConf, error) {
	nc := &NetConf{}
	if err := json.Unmarshal([]byte(config), nc); err != nil {
		return nil, err
	}
	var keys struct {
		MTU *int32 `json:"mtu"`
	}
	if err := json.Unmarshal([]byte(config), &keys); err != nil {
		return nil, err
	}
	nc.mtuGiven = keys.MTU != nil
	return nc, nil
}

// SubnetPrefixes reads the subnets field: "CIDR" entries, or for Layer3
// "CIDR/hostSubnet" (10.200.0.0/16/24, as Build writes them); the host
// subnet length is checked and dropped, and each prefix is masked.
func (nc *NetConf) SubnetPrefixes() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i, s := range strings.Split(nc.Subnets, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		cidr, host := s, ""
		if parts := strings.Split(s, "/"); len(parts) == 3 {
			cidr, host = parts[0]+"/"+parts[1], parts[2]
		}
		p, err := netip.ParsePrefix(cidr)
		if err == nil && host != "" {
			if bits, aerr := strconv.Atoi(host); aerr != nil || bits < p.Bits() || bits > p.Addr().BitLen() {
				err = fmt.Errorf("hostSubnet %q is not a prefix length between %d and %d", host, p.Bits(), p.Addr().BitLen())
			}
		}
		if err != nil {
			return nil, fmt.Errorf("subnets[%d] %q: must be CIDR or CIDR/hostSubnet: %w", i, s, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
