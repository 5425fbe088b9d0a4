package cel_test

import (
	. "github.com/onsi/ginkgo/v2"
)

// The ClusterUserDefinedNetwork fields upstream OVN-Kubernetes added for
// no-overlay and EVPN transport and for Uplinks (spec.network.transport,
// noOverlay, evpn; spec.uplinks). udnkit admits them exactly as upstream does
// and does not implement them.

// Network specs shared by the cases below (spec.network of a CUDN).
const (
	netL3Primary = `
  topology: Layer3
  layer3: {role: Primary, subnets: [{cidr: 10.40.0.0/16, hostSubnet: 24}]}`
	netL2Primary = `
  topology: Layer2
  layer2: {role: Primary, subnets: [10.41.0.0/24]}`
	netL2Secondary = `
  topology: Layer2
  layer2: {role: Secondary, subnets: [10.42.0.0/24]}`
	netL3Secondary = `
  topology: Layer3
  layer3: {role: Secondary, subnets: [{cidr: 10.43.0.0/16, hostSubnet: 24}]}`
	netLocalnet = `
  topology: Localnet
  localnet: {role: Secondary, physicalNetworkName: physnet, subnets: [192.0.2.0/24]}`

	noOverlay  = "\n  transport: NoOverlay\n  noOverlay: {outboundSNAT: Enabled, routing: Managed}"
	evpnIPVRF  = "\n  transport: EVPN\n  evpn: {vtep: vtep-a, ipVRF: {vni: 300}}"
	evpnMACVRF = "\n  transport: EVPN\n  evpn: {vtep: vtep-a, macVRF: {vni: 100}}"
)

// network is a CUDN selecting every namespace with the given spec.network
// (one of the net* constants, plus the transport fields).
func network(parts ...string) celCase {
	spec := "namespaceSelector: {}\nnetwork:"
	for _, p := range parts {
		spec += p
	}
	return cudn(spec)
}

// withUplinks is network(parts...) with spec.uplinks.
func withUplinks(uplinks string, parts ...string) celCase {
	c := network(parts...)
	c.spec += "\nuplinks: " + uplinks
	return c
}

// routeTarget is an EVPN Layer3 network whose IP-VRF has the route target rt.
func routeTarget(rt string) celCase {
	return network(netL3Primary, "\n  transport: EVPN\n  evpn: {vtep: vtep-a, ipVRF: {vni: 300, routeTarget: \""+rt+"\"}}")
}

var _ = DescribeTable("ClusterUserDefinedNetwork transport, EVPN and uplinks (upstream parity)", run,
	// --- transport ---
	Entry("no transport: the default overlay", network(netL3Primary).accepted()),
	Entry("unknown transport", network(netL3Primary, "\n  transport: Geneve").
		rejected(`spec.network.transport: Unsupported value: "Geneve"`)),
	Entry("UDNs have no transport field", udn(l3Primary4+"\ntransport: NoOverlay").
		badRequest(`unknown field "spec.transport"`)),

	// --- NoOverlay ---
	Entry("NoOverlay on a Layer3 Primary network", network(netL3Primary, noOverlay).accepted()),
	Entry("NoOverlay with SNAT disabled and unmanaged routing", network(netL3Primary,
		"\n  transport: NoOverlay\n  noOverlay: {outboundSNAT: Disabled, routing: Unmanaged}").accepted()),
	Entry("NoOverlay on a Layer3 Secondary network", network(netL3Secondary, noOverlay).
		rejected("spec.network", "transport 'NoOverlay' is only supported for Layer3 primary networks.")),
	Entry("NoOverlay on a Layer2 Primary network", network(netL2Primary, noOverlay).
		rejected("transport 'NoOverlay' is only supported for Layer3 primary networks.")),
	Entry("NoOverlay on a Localnet network", network(netLocalnet, noOverlay).
		rejected("transport 'NoOverlay' is only supported for Layer3 primary networks.")),
	Entry("NoOverlay without its noOverlay block", network(netL3Primary, "\n  transport: NoOverlay").
		rejected("spec.noOverlay is required when type transport is 'NoOverlay'.")),
	Entry("a noOverlay block without transport", network(netL3Primary, "\n  noOverlay: {outboundSNAT: Enabled, routing: Managed}").
		rejected("spec.noOverlay is forbidden when transport type is not 'NoOverlay'.")),
	Entry("a noOverlay block with EVPN transport", network(netL3Primary, evpnIPVRF, "\n  noOverlay: {outboundSNAT: Enabled, routing: Managed}").
		rejected("spec.noOverlay is forbidden when transport type is not 'NoOverlay'.")),
	Entry("noOverlay.outboundSNAT outside its enum", network(netL3Primary, "\n  transport: NoOverlay\n  noOverlay: {outboundSNAT: Masquerade, routing: Managed}").
		rejected(`spec.network.noOverlay.outboundSNAT: Unsupported value: "Masquerade"`)),
	Entry("noOverlay.routing outside its enum", network(netL3Primary, "\n  transport: NoOverlay\n  noOverlay: {outboundSNAT: Enabled, routing: BGP}").
		rejected(`spec.network.noOverlay.routing: Unsupported value: "BGP"`)),
	Entry("noOverlay without routing", network(netL3Primary, "\n  transport: NoOverlay\n  noOverlay: {outboundSNAT: Enabled}").
		rejected("spec.network.noOverlay.routing: Required value")),
	Entry("NoOverlay re-applied unchanged", network(netL3Primary, noOverlay).then("namespaceSelector: {}\nnetwork:"+netL3Primary+noOverlay).accepted()),
	Entry("noOverlay cannot change", network(netL3Primary, noOverlay).then("namespaceSelector: {}\nnetwork:"+netL3Primary+
		"\n  transport: NoOverlay\n  noOverlay: {outboundSNAT: Disabled, routing: Managed}").
		rejected("spec.network.noOverlay", "NoOverlay is immutable.")),
	Entry("transport cannot change", network(netL3Primary, noOverlay).then("namespaceSelector: {}\nnetwork:"+netL3Primary+evpnIPVRF).
		rejected("spec.network.transport", "Transport is immutable.")),

	// --- EVPN ---
	Entry("EVPN on a Layer3 Primary network with an IP-VRF", network(netL3Primary, evpnIPVRF).accepted()),
	Entry("EVPN on a Layer2 Primary network with a MAC-VRF", network(netL2Primary, evpnMACVRF).accepted()),
	Entry("EVPN on a Layer2 Primary network with a MAC-VRF and an IP-VRF", network(netL2Primary,
		"\n  transport: EVPN\n  evpn: {vtep: vtep-a, macVRF: {vni: 100, routeTarget: \"65000:100\"}, ipVRF: {vni: 16777215}}").accepted()),
	Entry("EVPN on a Layer2 Secondary network", network(netL2Secondary, evpnMACVRF).
		rejected("transport 'EVPN' is only supported for Layer2 or Layer3 primary networks.")),
	Entry("EVPN on a Layer3 Secondary network", network(netL3Secondary, evpnIPVRF).
		rejected("transport 'EVPN' is only supported for Layer2 or Layer3 primary networks.")),
	Entry("EVPN on a Localnet network", network(netLocalnet, evpnMACVRF).
		rejected("transport 'EVPN' is only supported for Layer2 or Layer3 primary networks.")),
	Entry("EVPN without its evpn block", network(netL3Primary, "\n  transport: EVPN").
		rejected("spec.evpn field is required when transport is 'EVPN'.", "spec.evpn.ipVRF field is required for Layer3 topology when transport is 'EVPN'.")),
	Entry("an evpn block without transport", network(netL3Primary, "\n  evpn: {vtep: vtep-a, ipVRF: {vni: 300}}").
		rejected("spec.evpn field is forbidden when transport is not 'EVPN'.")),
	Entry("an evpn block with NoOverlay transport", network(netL3Primary, noOverlay, "\n  evpn: {vtep: vtep-a, ipVRF: {vni: 300}}").
		rejected("spec.evpn field is forbidden when transport is not 'EVPN'.")),
	Entry("EVPN Layer2 with only an IP-VRF", network(netL2Primary, "\n  transport: EVPN\n  evpn: {vtep: vtep-a, ipVRF: {vni: 300}}").
		rejected("spec.evpn.macVRF field is required for Layer2 topology when transport is 'EVPN'.")),
	Entry("EVPN Layer3 with only a MAC-VRF", network(netL3Primary, "\n  transport: EVPN\n  evpn: {vtep: vtep-a, macVRF: {vni: 100}}").
		rejected("spec.evpn.ipVRF field is required for Layer3 topology when transport is 'EVPN'.",
			"spec.evpn.macVRF field is forbidden for Layer3 topology when transport is 'EVPN'.")),
	Entry("EVPN Layer3 with a MAC-VRF and an IP-VRF", network(netL3Primary, "\n  transport: EVPN\n  evpn: {vtep: vtep-a, macVRF: {vni: 100}, ipVRF: {vni: 300}}").
		rejected("spec.evpn.macVRF field is forbidden for Layer3 topology when transport is 'EVPN'.")),
	Entry("an evpn block with neither VRF", network(netL3Primary, "\n  transport: EVPN\n  evpn: {vtep: vtep-a}").
		rejected("spec.network.evpn", "at least one of macVRF or ipVRF must be specified.")),
	Entry("MAC-VRF and IP-VRF with the same VNI", network(netL2Primary, "\n  transport: EVPN\n  evpn: {vtep: vtep-a, macVRF: {vni: 100}, ipVRF: {vni: 100}}").
		rejected("macVRF and ipVRF must use different VNIs.")),
	Entry("evpn without a vtep", network(netL3Primary, "\n  transport: EVPN\n  evpn: {ipVRF: {vni: 300}}").
		rejected("spec.network.evpn.vtep: Required value")),
	Entry("evpn with an empty vtep", network(netL3Primary, "\n  transport: EVPN\n  evpn: {vtep: \"\", ipVRF: {vni: 300}}").
		rejected("spec.network.evpn.vtep in body should be at least 1 chars long")),
	Entry("VNI 0", network(netL3Primary, "\n  transport: EVPN\n  evpn: {vtep: vtep-a, ipVRF: {vni: 0}}").
		rejected("spec.network.evpn.ipVRF.vni in body should be greater than or equal to 1")),
	Entry("VNI above 24 bits", network(netL2Primary, "\n  transport: EVPN\n  evpn: {vtep: vtep-a, macVRF: {vni: 16777216}}").
		rejected("spec.network.evpn.macVRF.vni in body should be less than or equal to 16777215")),
	Entry("EVPN may change (upstream has no immutability rule on evpn)", network(netL3Primary, evpnIPVRF).
		then("namespaceSelector: {}\nnetwork:"+netL3Primary+"\n  transport: EVPN\n  evpn: {vtep: vtep-b, ipVRF: {vni: 301}}").accepted()),

	// --- route targets (FRR's A.B.C.D:MN | EF:OPQR | GHJK:MN | *:OPQR | *:MN) ---
	Entry("route target with a 2-byte AS and a 4-byte local administrator", routeTarget("65535:4294967295").accepted()),
	Entry("route target with a 4-byte AS and a 2-byte local administrator", routeTarget("4200000000:65535").accepted()),
	Entry("route target with an IPv4 global administrator", routeTarget("192.0.2.1:65535").accepted()),
	Entry("route target with a wildcard global administrator", routeTarget("*:4294967295").accepted()),
	Entry("route target without a colon", routeTarget("65000").
		rejected("spec.network.evpn.ipVRF.routeTarget", "RT must contain exactly one colon.")),
	Entry("route target with two colons", routeTarget("65000:1:2").
		rejected("RT must contain exactly one colon.")),
	Entry("route target with a named global administrator", routeTarget("asn:100").
		rejected("RT global administrator must be either '*', an IPv4 address, or a number.")),
	Entry("route target with a named local administrator", routeTarget("65000:one").
		rejected("RT local administrator must be a number.")),
	Entry("wildcard route target with a local administrator above 32 bits", routeTarget("*:4294967296").
		rejected("RT with wildcard global administrator must have format *:OPQR where OPQR <= 4294967295.")),
	Entry("IPv4 route target with a local administrator above 16 bits", routeTarget("192.0.2.1:65536").
		rejected("RT with IPv4 global administrator must have format A.B.C.D:MN where MN <= 65535.")),
	Entry("4-byte AS route target with a local administrator above 16 bits", routeTarget("4200000000:65536").
		rejected("RT with 4-byte ASN global administrator must have format GHJK:MN where GHJK <= 4294967295 and MN <= 65535.")),
	Entry("2-byte AS route target with a local administrator above 32 bits", routeTarget("65000:4294967296").
		rejected("RT with 2-byte ASN global administrator must have format EF:OPQR where EF <= 65535 and OPQR <= 4294967295.")),
	Entry("route target longer than 21 characters", routeTarget("192.168.100.200:65535x").
		rejected("spec.network.evpn.ipVRF.routeTarget: Too long: may not be more than 21 bytes")),

	// --- uplinks ---
	Entry("an uplink on a Layer2 Primary network", withUplinks("[uplink-a]", netL2Primary).accepted()),
	Entry("an uplink on a NoOverlay Layer3 Primary network", withUplinks("[uplink-a]", netL3Primary, noOverlay).accepted()),
	Entry("an uplink on a Layer3 Secondary network", withUplinks("[uplink-a]", netL3Secondary).
		rejected("spec.uplinks is supported only for primary Layer2 and Layer3 networks.")),
	Entry("an uplink on a Localnet network", withUplinks("[uplink-a]", netLocalnet).
		rejected("spec.uplinks is supported only for primary Layer2 and Layer3 networks.")),
	Entry("an uplink on an EVPN network", withUplinks("[uplink-a]", netL3Primary, evpnIPVRF).
		rejected("spec.uplinks is not supported with EVPN transport.")),
	Entry("two uplinks", withUplinks("[uplink-a, uplink-b]", netL2Primary).
		rejected("spec.uplinks: Too many: 2: must have at most 1 item")),
	Entry("an empty uplinks list", withUplinks("[]", netL2Primary).
		rejected("spec.uplinks in body should have at least 1 items")),
	Entry("an uplink name that is not a DNS label", withUplinks("[Uplink_A]", netL2Primary).
		rejected("spec.uplinks[0] in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'")),
	Entry("an empty uplink name", withUplinks(`[""]`, netL2Primary).
		rejected("spec.uplinks[0] in body should be at least 1 chars long")),
	Entry("uplinks re-applied unchanged", withUplinks("[uplink-a]", netL2Primary).
		then("namespaceSelector: {}\nuplinks: [uplink-a]\nnetwork:"+netL2Primary).accepted()),
	Entry("uplinks cannot change", withUplinks("[uplink-a]", netL2Primary).
		then("namespaceSelector: {}\nuplinks: [uplink-b]\nnetwork:"+netL2Primary).
		rejected("spec.uplinks", "uplinks is immutable.")),
)
