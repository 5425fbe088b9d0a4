package netconf

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Parse reads a NAD's spec.config, the inverse of Render, for the components
// that consume the NetConf (the dataplane, udnctl). A valid config is
// decoded once: every sweep reads every NAD, and a second decode (to see
// whether the mtu key is there) was a tenth of a 100-network deletion's CPU.
func Parse(config string) (*NetConf, error) {
	nc := &NetConf{}
	// The outer mtu shadows the embedded one (a shallower field wins), so
	// one decode fills every field and says whether mtu was given.
	type fields NetConf
	in := struct {
		*fields
		MTU mtuKey `json:"mtu"`
	}{fields: (*fields)(nc)}
	if err := json.Unmarshal([]byte(config), &in); err != nil {
		// The error as a decode into NetConf words it ("Go struct field
		// NetConf.mtu"), not naming the wrapper: the same config fails
		// there too.
		if plain := json.Unmarshal([]byte(config), &NetConf{}); plain != nil {
			return nil, plain
		}
		return nil, err
	}
	nc.MTU, nc.mtuGiven = in.MTU.value, in.MTU.given
	return nc, nil
}

// mtuKey decodes the mtu key as NetConf's MTU does (null keeps the value)
// and notes whether its last value was a number, not null.
type mtuKey struct {
	value int32
	given bool
}

func (m *mtuKey) UnmarshalJSON(b []byte) error {
	m.given = string(b) != "null"
	if !m.given {
		return nil
	}
	// A JSON int32 is what ParseInt reads; anything else (a string, a
	// fraction, out of range) fails, and Parse words the error.
	v, err := strconv.ParseInt(string(b), 10, 32)
	m.value = int32(v)
	return err
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
