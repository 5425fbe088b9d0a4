package ovnk

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// AnnotationL3GatewayConfig is the node's gateway as its ovnkube-node set it
// up (upstream's util.OvnNodeL3GatewayConfig): the bridge, the MAC and
// addresses of its external interface and its next hops, under the key
// "default".
const AnnotationL3GatewayConfig = "k8s.ovn.org/l3-gateway-config"

// l3GatewayDefaultKey is the one key of the annotation's map
// (upstream's ovnDefaultNetworkGateway).
const l3GatewayDefaultKey = "default"

// GatewayMode is OVN-Kubernetes' --gateway-mode: how a node's pods reach
// the outside (upstream's config.GatewayMode).
type GatewayMode string

const (
	// GatewayModeShared: the node's gateway router owns its external
	// interface; pods leave through it (upstream's default).
	GatewayModeShared GatewayMode = "shared"
	// GatewayModeLocal: pods leave through the management port and the
	// host's routing table.
	GatewayModeLocal GatewayMode = "local"
	// GatewayModeDisabled is an l3-gateway-config without a gateway
	// ("mode": ""): no external side.
	GatewayModeDisabled GatewayMode = ""
)

// ParseGatewayMode accepts "shared" and "local", the modes a dataplane
// programs.
func ParseGatewayMode(s string) (GatewayMode, error) {
	switch m := GatewayMode(s); m {
	case GatewayModeShared, GatewayModeLocal:
		return m, nil
	}
	return "", fmt.Errorf("gateway mode %q: must be %q or %q", s, GatewayModeShared, GatewayModeLocal)
}

// L3GatewayConfig is a node's k8s.ovn.org/l3-gateway-config (upstream's
// util.L3GatewayConfig, without the egress-gateway interface fields, which
// udnkit does not program).
type L3GatewayConfig struct {
	Mode GatewayMode
	// BridgeID is the external bridge ("breth0"); InterfaceID the default
	// network's localnet port on it ("breth0_<node>").
	BridgeID, InterfaceID string
	// MAC is the external interface's MAC: the rtoe- port's and the
	// etor- port's address.
	MAC net.HardwareAddr
	// IPAddresses are the external interface's addresses with their
	// prefix length, one or more per family; NextHops the default gateways.
	IPAddresses []netip.Prefix
	NextHops    []netip.Addr
	// NodePortEnable is node-port-enable ("true").
	NodePortEnable bool
	// VLANID is the localnet port's tag_request (0: none).
	VLANID int
}

// l3GatewayJSON is the annotation's wire shape, field for field upstream's
// l3GatewayConfigJSON (ip-address and next-hop are its single-value
// compatibility fields).
type l3GatewayJSON struct {
	Mode           GatewayMode `json:"mode"`
	BridgeID       string      `json:"bridge-id,omitempty"`
	InterfaceID    string      `json:"interface-id,omitempty"`
	MACAddress     string      `json:"mac-address,omitempty"`
	IPAddresses    []string    `json:"ip-addresses,omitempty"`
	IPAddress      string      `json:"ip-address,omitempty"`
	NextHops       []string    `json:"next-hops,omitempty"`
	NextHop        string      `json:"next-hop,omitempty"`
	NodePortEnable string      `json:"node-port-enable,omitempty"`
	VLANID         string      `json:"vlan-id,omitempty"`
}

// Encode is the annotation's value as upstream's ovnkube-node writes it
// (SetL3GatewayConfig): the single-value fields only beside one address or
// next hop, vlan-id always.
func (c L3GatewayConfig) Encode() string {
	j := l3GatewayJSON{Mode: c.Mode}
	if c.Mode != GatewayModeDisabled {
		j.BridgeID, j.InterfaceID, j.MACAddress = c.BridgeID, c.InterfaceID, c.MAC.String()
		j.NodePortEnable, j.VLANID = strconv.FormatBool(c.NodePortEnable), strconv.Itoa(c.VLANID)
		for _, p := range c.IPAddresses {
			j.IPAddresses = append(j.IPAddresses, p.String())
		}
		for _, a := range c.NextHops {
			j.NextHops = append(j.NextHops, a.String())
		}
		if len(j.IPAddresses) == 1 {
			j.IPAddress = j.IPAddresses[0]
		}
		if len(j.NextHops) == 1 {
			j.NextHop = j.NextHops[0]
		}
	}
	b, _ := json.Marshal(map[string]l3GatewayJSON{l3GatewayDefaultKey: j})
	return string(b)
}

// DecodeL3GatewayConfig reads the node's k8s.ovn.org/l3-gateway-config: ok
// is false while the node has none (its ovnkube-node has not set its
// gateway up). A value upstream would refuse is an error naming the
// annotation and the field; so is a gateway without an address or a MAC.
func DecodeL3GatewayConfig(node *corev1.Node) (cfg L3GatewayConfig, ok bool, err error) {
	v, found := node.Annotations[AnnotationL3GatewayConfig]
	if !found {
		return cfg, false, nil
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("node %s annotation %s: %s", node.Name, AnnotationL3GatewayConfig, fmt.Sprintf(format, a...))
	}
	var all map[string]l3GatewayJSON
	if err := json.Unmarshal([]byte(v), &all); err != nil {
		return cfg, false, bad("not a JSON object of gateway configs: %v", err)
	}
	j, found := all[l3GatewayDefaultKey]
	if !found {
		return cfg, false, bad("has no %q gateway", l3GatewayDefaultKey)
	}
	cfg = L3GatewayConfig{Mode: j.Mode, BridgeID: j.BridgeID, InterfaceID: j.InterfaceID, NodePortEnable: j.NodePortEnable == "true"}
	switch j.Mode {
	case GatewayModeDisabled:
		return cfg, true, nil
	case GatewayModeShared, GatewayModeLocal:
	default:
		return L3GatewayConfig{}, false, bad("mode %q: must be shared, local or empty", j.Mode)
	}
	if err := j.decodeInto(&cfg); err != nil {
		return L3GatewayConfig{}, false, bad("%v", err)
	}
	return cfg, true, nil
}

// decodeInto reads the fields of a gateway that is not disabled.
func (j l3GatewayJSON) decodeInto(cfg *L3GatewayConfig) error {
	if j.VLANID != "" {
		id, err := strconv.ParseUint(j.VLANID, 10, 16)
		if err != nil || id > 4095 {
			return fmt.Errorf("vlan-id %q: must be an integer in [0, 4095]", j.VLANID)
		}
		cfg.VLANID = int(id)
	}
	mac, err := net.ParseMAC(j.MACAddress)
	if err != nil || len(mac) != 6 {
		return fmt.Errorf("mac-address %q: not a MAC address", j.MACAddress)
	}
	cfg.MAC = mac
	ips := j.IPAddresses
	if len(ips) == 0 && j.IPAddress != "" {
		ips = []string{j.IPAddress}
	}
	if len(ips) == 0 {
		return fmt.Errorf("ip-addresses: a gateway needs at least one address")
	}
	for _, s := range ips {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("ip-addresses %q: not an address with its prefix length", s)
		}
		cfg.IPAddresses = append(cfg.IPAddresses, netip.PrefixFrom(p.Addr().Unmap(), p.Bits()))
	}
	for _, s := range j.NextHops {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return fmt.Errorf("next-hops %q: not an IP address", s)
		}
		cfg.NextHops = append(cfg.NextHops, a.Unmap())
	}
	return nil
}

// DefaultExternalPortRange is the range SNATs take their ports from
// (external_port_range) by default: the Linux kernel's default
// net.ipv4.ip_local_port_range, which upstream reads from the host
// (config.Gateway.EphemeralPortRange).
const DefaultExternalPortRange = "32768-60999"

// ValidateExternalPortRange accepts "<min>-<max>" with 1 ≤ min < max ≤
// 65535, as upstream's isValidEphemeralPortRange.
func ValidateExternalPortRange(s string) error {
	var lo, hi int
	var rest string
	if n, _ := fmt.Sscanf(s, "%d-%d%s", &lo, &hi, &rest); n != 2 || s != strconv.Itoa(lo)+"-"+strconv.Itoa(hi) {
		return fmt.Errorf("external port range %q: must be <min port>-<max port>", s)
	}
	if lo < 1 || hi > 65535 || hi <= lo {
		return fmt.Errorf("external port range %q: ports must satisfy 1 <= min < max <= 65535", s)
	}
	return nil
}
