package ovnk

import (
	"fmt"
	"net/netip"
	"strings"
)

// JoinPrefixes writes prefixes comma-separated: the form of a NetConf's
// transitSubnet and of the ranges' flags (--transit-subnets, ...).
func JoinPrefixes(in []netip.Prefix) string {
	out := make([]string, 0, len(in))
	for _, p := range in {
		out = append(out, p.String())
	}
	return strings.Join(out, ",")
}

// ParsePrefixes reads a comma-separated CIDR list as the NetConf writes them
// (joinSubnet, transitSubnet, excludeSubnets, ...); empty items are skipped.
// Each prefix is masked: a subnet written with host bits (10.20.100.0/16, as
// the CRD admits and the NetConf keeps) is the network 10.20.0.0/16.
func ParsePrefixes(list string) ([]netip.Prefix, error) {
	out, err := parsePrefixes(list)
	for i := range out {
		out[i] = out[i].Masked()
	}
	return out, err
}

// parsePrefixes is ParsePrefixes keeping host bits, for the flags that
// refuse them.
func parsePrefixes(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR: %w", s, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// ParseAddrs reads a comma-separated address list (defaultGatewayIPs).
func ParseAddrs(list string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}
