package cel_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
)

// Specs shared by many cases.
const (
	l2Primary4 = `
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24]}`
	l3Primary4 = `
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}]}`
	l3Secondary4 = `
topology: Layer3
layer3: {role: Secondary, subnets: [{cidr: 10.30.0.0/16, hostSubnet: 24}]}`
	// The example of OKEP-5233 "Usage Example".
	okep5233 = `
namespaceSelector: {matchLabels: {tenant: blue}}
network:
  topology: Layer2
  layer2:
    role: Primary
    subnets: ["192.168.100.0/24"]
    infrastructureSubnets: ["192.168.100.0/30"]
    reservedSubnets: ["192.168.100.200/29"]
    defaultGatewayIPs: ["192.168.100.2"]`
)

var _ = DescribeTable("UserDefinedNetwork and ClusterUserDefinedNetwork validation", run,
	// --- topology discriminator and immutability ---
	Entry("Layer2 UDN with its block", udn(l2Primary4).accepted()),
	Entry("Layer3 UDN with its block", udn(l3Primary4).accepted()),
	Entry("Layer2 topology without the layer2 block", udn(`topology: Layer2`).
		rejected("spec.layer2 is required when topology is Layer2 and forbidden otherwise.")),
	Entry("Layer3 topology without the layer3 block", udn(`topology: Layer3`).
		rejected("spec.layer3 is required when topology is Layer3 and forbidden otherwise.")),
	Entry("Layer2 topology with a layer3 block too", udn(l2Primary4+`
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16}]}`).
		rejected("spec.layer3 is required when topology is Layer3 and forbidden otherwise.")),
	Entry("UDN cannot be Localnet", udn(`topology: Localnet`).
		rejected(`spec.topology: Unsupported value: "Localnet"`)),
	Entry("topology cannot change", udn(l2Primary4).then(l3Primary4).
		rejected("Topology is immutable.")),
	Entry("unknown field is refused under strict validation", udn(l2Primary4+`
layer2x: {}`).badRequest(`unknown field "spec.layer2x"`)),
	Entry("CUDN Localnet with its block", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet, subnets: [192.0.2.0/24]}}`).accepted()),
	Entry("CUDN Localnet without its block", cudn(`
namespaceSelector: {}
network: {topology: Localnet}`).rejected("spec.localnet is required when topology is Localnet and forbidden otherwise.")),
	Entry("CUDN Layer2 with a localnet block too", cudn(`
namespaceSelector: {}
network:
  topology: Layer2
  layer2: {role: Secondary, subnets: [10.1.0.0/24]}
  localnet: {role: Secondary, physicalNetworkName: physnet, subnets: [192.0.2.0/24]}`).
		rejected("spec.localnet is required when topology is Localnet and forbidden otherwise.")),
	Entry("CUDN requires namespaceSelector", cudn(`
network: {topology: Layer2, layer2: {role: Secondary, subnets: [10.1.0.0/24]}}`).
		rejected(`spec.namespaceSelector: Required value`)),
	Entry("CUDN namespaceSelector may change", cudn(okep5233).then(`
namespaceSelector: {matchLabels: {tenant: green}}
network:
  topology: Layer2
  layer2:
    role: Primary
    subnets: ["192.168.100.0/24"]
    infrastructureSubnets: ["192.168.100.0/30"]
    reservedSubnets: ["192.168.100.200/29"]
    defaultGatewayIPs: ["192.168.100.2"]`).accepted()),
	Entry("CUDN topology cannot change", cudn(`
namespaceSelector: {}
network: {topology: Layer2, layer2: {role: Secondary, subnets: [10.1.0.0/24]}}`).then(`
namespaceSelector: {}
network: {topology: Layer3, layer3: {role: Secondary, subnets: [{cidr: 10.1.0.0/16}]}}`).
		rejected("Topology is immutable.")),

	// --- scalar types and dual-stack lists ---
	Entry("CIDR must parse", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/33]}`).
		rejected("spec.layer2.subnets[0]", "CIDR is invalid: it must be an IPv4 or IPv6 prefix such as 10.128.0.0/16.")),
	Entry("CIDR that is not an address at all", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: tenant-a}]}`).
		rejected("spec.layer3.subnets[0].cidr", "CIDR is invalid: it must be an IPv4 or IPv6 prefix such as 10.128.0.0/16.")),
	Entry("IPv6 Layer2 subnet", udn(`
topology: Layer2
layer2: {role: Primary, subnets: ["fd00:10::/64"]}`).accepted()),
	Entry("dual-stack Layer2 subnets", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24, "fd00:10::/64"]}`).accepted()),
	Entry("two IPv4 Layer2 subnets", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24, 10.11.0.0/24]}`).
		rejected("When 2 CIDRs are set, they must be from different IP families.")),
	Entry("two IPv6 join subnets", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24], joinSubnets: ["fd98::/64", "fd99::/64"]}`).
		rejected("spec.layer2.joinSubnets", "When 2 CIDRs are set, they must be from different IP families.")),
	Entry("three Layer2 subnets", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24, "fd00::/64", 10.12.0.0/24]}`).
		rejected("spec.layer2.subnets: Too many: 3: must have at most 2 items")),
	Entry("gateway IP must parse", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24], defaultGatewayIPs: [10.10.0.300]}`).
		rejected("spec.layer2.defaultGatewayIPs[0]", "IP is invalid: it must be an IPv4 or IPv6 address.")),
	Entry("two IPv4 gateway IPs", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24, "fd00::/64"], defaultGatewayIPs: [10.10.0.1, 10.10.0.2]}`).
		rejected("When 2 IPs are set, they must be from different IP families.")),

	// --- host bits: accepted in subnets (as upstream; admission warns), refused
	// in reservedSubnets and infrastructureSubnets (as upstream) and in
	// joinSubnets and excludeSubnets (udnkit only) ---
	Entry("Layer2 subnet with host bits set", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.66.0.1/24]}`).accepted()),
	Entry("IPv6 Layer2 subnet with host bits set", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.66.0.0/24, "fd00:66::1/64"]}`).accepted()),
	Entry("Layer3 cidr with host bits set, as upstream's EVPN example writes it", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.100.0/16, hostSubnet: 24}]}`).accepted()),
	Entry("IPv6 Layer3 cidr with host bits set", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: "fd00:20::8000/48", hostSubnet: 64}]}`).accepted()),
	Entry("Localnet subnet with host bits set", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet, subnets: [192.0.2.1/24]}}`).accepted()),
	Entry("Layer3 subnets that are one network once masked", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}, {cidr: 10.20.3.0/16, hostSubnet: 24}]}`).
		rejected("Subnets must not overlap or contain each other.")),
	Entry("gateway IP inside the network a host-bits subnet stands for", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.66.0.1/24], defaultGatewayIPs: [10.66.0.254]}`).accepted()),
	Entry("Layer2 join subnet with host bits set", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.66.0.0/24], joinSubnets: [100.66.0.1/16]}`).
		rejected("spec.layer2.joinSubnets", "joinSubnets must be network addresses with no host bits set, such as 100.65.0.0/16.")),
	Entry("Layer3 join subnet with host bits set", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}], joinSubnets: ["fd99::1/64"]}`).
		rejected("spec.layer3.joinSubnets", "joinSubnets must be network addresses with no host bits set, such as 100.65.0.0/16.")),
	Entry("Localnet exclude subnet with host bits set", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet, subnets: [192.0.2.0/24], excludeSubnets: [192.0.2.201/30]}}`).
		rejected("spec.network.localnet.excludeSubnets", "excludeSubnets must be network addresses with no host bits set, such as 192.0.2.0/28.")),
	Entry("Localnet exclude subnets of single addresses", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet, subnets: [192.0.2.0/24, "2001:db8::/64"], excludeSubnets: [192.0.2.201/32, "2001:db8::c9/128"]}}`).accepted()),

	// --- Layer2 subnets leave room for pods ---
	Entry("Layer2 IPv4 /30 subnet", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.66.0.0/30]}`).accepted()),
	Entry("Layer2 IPv4 /31 subnet", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.66.0.0/31]}`).
		rejected("spec.layer2.subnets", "Layer2 subnets must leave room for pods: a prefix length of at most 30 for IPv4 and 126 for IPv6.")),
	Entry("Layer2 IPv4 /32 subnet on a Secondary network", udn(`
topology: Layer2
layer2: {role: Secondary, subnets: [10.66.0.7/32]}`).
		rejected("Layer2 subnets must leave room for pods: a prefix length of at most 30 for IPv4 and 126 for IPv6.")),
	Entry("Layer2 IPv6 /126 subnet", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.66.0.0/24, "fd00:66::/126"]}`).accepted()),
	Entry("Layer2 IPv6 /127 subnet", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.66.0.0/24, "fd00:66::/127"]}`).
		rejected("spec.layer2.subnets", "Layer2 subnets must leave room for pods: a prefix length of at most 30 for IPv4 and 126 for IPv6.")),
	Entry("CUDN Layer2 IPv6 /128 subnet", cudn(`
namespaceSelector: {}
network: {topology: Layer2, layer2: {role: Secondary, subnets: ["fd00:66::1/128"]}}`).
		rejected("spec.network.layer2.subnets", "Layer2 subnets must leave room for pods: a prefix length of at most 30 for IPv4 and 126 for IPv6.")),

	// --- MTU ---
	Entry("mtu 576 with IPv4", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24], mtu: 576}`).accepted()),
	Entry("mtu below 576", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24], mtu: 575}`).
		rejected("spec.layer2.mtu: Invalid value: 575: spec.layer2.mtu in body should be greater than or equal to 576")),
	Entry("mtu above 65536", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16}], mtu: 65537}`).
		rejected("spec.layer3.mtu in body should be less than or equal to 65536")),
	Entry("Layer2 mtu below 1280 with IPv6", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24, "fd00::/64"], mtu: 1279}`).
		rejected("MTU should be greater than or equal to 1280 when IPv6 subnet is used.")),
	Entry("Layer2 mtu 1280 with IPv6", udn(`
topology: Layer2
layer2: {role: Primary, subnets: ["fd00::/64"], mtu: 1280}`).accepted()),
	Entry("Layer3 mtu below 1280 with two IPv6 subnets", udn(`
topology: Layer3
layer3: {role: Primary, mtu: 1200, subnets: [{cidr: "fd00:1::/48", hostSubnet: 64}, {cidr: "fd00:2::/48", hostSubnet: 64}]}`).
		rejected("spec.layer3", "MTU should be greater than or equal to 1280 when IPv6 subnet is used.")),
	Entry("Localnet mtu below 1280 with IPv6", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet, subnets: ["2001:db8::/64"], mtu: 1000}}`).
		rejected("spec.network.localnet", "MTU should be greater than or equal to 1280 when an IPv6 subnet is used.")),

	// --- IPAM ---
	Entry("Layer2 without subnets and IPAM enabled", udn(`
topology: Layer2
layer2: {role: Secondary}`).rejected("Subnets is required with ipam.mode is Enabled or unset.")),
	Entry("Layer2 Secondary with IPAM disabled and no subnets", udn(`
topology: Layer2
layer2: {role: Secondary, ipam: {mode: Disabled}}`).accepted()),
	Entry("Layer2 with IPAM disabled and subnets", udn(`
topology: Layer2
layer2: {role: Secondary, subnets: [10.1.0.0/24], ipam: {mode: Disabled}}`).
		rejected("Subnets must be unset when ipam.mode is Disabled.")),
	Entry("Layer2 Primary with IPAM disabled", udn(`
topology: Layer2
layer2: {role: Primary, ipam: {mode: Disabled}}`).
		rejected("Disabled ipam.mode is only supported for Secondary network.")),
	Entry("persistent IPs with IPAM enabled", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24], ipam: {mode: Enabled, lifecycle: Persistent}}`).accepted()),
	Entry("persistent IPs with IPAM disabled", udn(`
topology: Layer2
layer2: {role: Secondary, ipam: {mode: Disabled, lifecycle: Persistent}}`).
		rejected("ipam.lifecycle Persistent is only supported when ipam.mode is Enabled.")),
	Entry("empty ipam block", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24], ipam: {}}`).
		rejected("spec.layer2.ipam: Invalid value: 0: spec.layer2.ipam in body should have at least 1 properties")),
	Entry("unknown ipam mode", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24], ipam: {mode: DHCP}}`).
		rejected(`spec.layer2.ipam.mode: Unsupported value: "DHCP"`)),
	Entry("Localnet without subnets needs IPAM disabled", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet}}`).
		rejected("Subnets is required with ipam.mode is Enabled or unset, and forbidden otherwise: a Localnet network with IPAM needs subnets.")),
	Entry("Localnet with IPAM disabled and subnets", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet, subnets: [192.0.2.0/24], ipam: {mode: Disabled}}}`).
		rejected("Subnets is required with ipam.mode is Enabled or unset, and forbidden otherwise: a Localnet network with ipam.mode Disabled takes no subnets.")),

	// --- role and join subnets ---
	Entry("Layer2 unknown role", udn(`
topology: Layer2
layer2: {role: Tertiary, subnets: [10.10.0.0/24]}`).rejected(`spec.layer2.role: Unsupported value: "Tertiary"`)),
	Entry("Layer2 Primary with join subnets", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24, "fd00::/64"], joinSubnets: [100.66.0.0/16, "fd99::/64"]}`).accepted()),
	Entry("Layer2 Secondary with join subnets", udn(`
topology: Layer2
layer2: {role: Secondary, subnets: [10.10.0.0/24], joinSubnets: [100.66.0.0/16]}`).
		rejected("spec.layer2", "JoinSubnets is only supported for Primary network.")),
	Entry("Layer3 Secondary with join subnets", udn(`
topology: Layer3
layer3: {role: Secondary, subnets: [{cidr: 10.30.0.0/16}], joinSubnets: [100.66.0.0/16]}`).
		rejected("spec.layer3", "JoinSubnets is only supported for Primary network.")),
	Entry("Localnet must be Secondary", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Primary, physicalNetworkName: physnet, subnets: [192.0.2.0/24]}}`).
		rejected(`spec.network.localnet.role: Unsupported value: "Primary"`)),

	// --- Layer2 predefined addresses (OKEP-5233) ---
	Entry("the OKEP-5233 example", cudn(okep5233).accepted()),
	Entry("predefined addresses, IPv6", udn(`
topology: Layer2
layer2:
  role: Primary
  subnets: ["fd00:100::/64"]
  infrastructureSubnets: ["fd00:100::/126"]
  reservedSubnets: ["fd00:100::ff00/120"]
  defaultGatewayIPs: ["fd00:100::2"]`).accepted()),
	Entry("predefined addresses, dual-stack", udn(`
topology: Layer2
layer2:
  role: Primary
  subnets: [192.168.100.0/24, "fd00:100::/64"]
  infrastructureSubnets: [192.168.100.0/30, "fd00:100::/126"]
  reservedSubnets: [192.168.100.200/29]
  defaultGatewayIPs: [192.168.100.2, "fd00:100::2"]`).accepted()),
	Entry("gateway outside the subnets", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24], defaultGatewayIPs: [10.10.1.1]}`).
		rejected("spec.layer2.defaultGatewayIPs", "defaultGatewayIPs must belong to one of the subnets specified in the subnets field.")),
	Entry("IPv6 gateway outside the subnets", udn(`
topology: Layer2
layer2: {role: Primary, subnets: ["fd00:100::/64"], defaultGatewayIPs: ["fd00:200::1"]}`).
		rejected("defaultGatewayIPs must belong to one of the subnets specified in the subnets field.")),
	Entry("dual-stack subnets with one gateway", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24, "fd00::/64"], defaultGatewayIPs: [10.10.0.1]}`).
		rejected("defaultGatewayIPs must be specified for all IP families: exactly one IP for the IP family of each subnet.")),
	Entry("gateway of the wrong family", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24], defaultGatewayIPs: ["fd00::1"]}`).
		rejected("defaultGatewayIPs must be specified for all IP families: exactly one IP for the IP family of each subnet.",
			"defaultGatewayIPs must belong to one of the subnets specified in the subnets field.")),
	Entry("gateway on a Secondary network", udn(`
topology: Layer2
layer2: {role: Secondary, subnets: [10.10.0.0/24], defaultGatewayIPs: [10.10.0.1]}`).
		rejected("defaultGatewayIPs is only supported for Primary network.")),
	Entry("gateway without subnets", udn(`
topology: Layer2
layer2: {role: Primary, defaultGatewayIPs: [10.10.0.1]}`).
		rejected("defaultGatewayIPs must be unset when subnets is unset.", "Subnets is required with ipam.mode is Enabled or unset.")),
	Entry("gateway outside the infrastructure subnets", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [192.168.100.0/24], infrastructureSubnets: [192.168.100.0/30], defaultGatewayIPs: [192.168.100.9]}`).
		rejected("defaultGatewayIPs have to belong to infrastructureSubnets.")),
	Entry("reserved subnets on a Secondary network", udn(`
topology: Layer2
layer2: {role: Secondary, subnets: [192.168.100.0/24], reservedSubnets: [192.168.100.200/29]}`).
		rejected("reservedSubnets is only supported for Primary network.")),
	Entry("reserved subnets without subnets", udn(`
topology: Layer2
layer2: {role: Secondary, ipam: {mode: Disabled}, reservedSubnets: [192.168.100.200/29]}`).
		rejected("reservedSubnets must be unset when subnets is unset.")),
	Entry("reserved subnet outside the subnets", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [192.168.100.0/24], reservedSubnets: [192.168.101.0/29]}`).
		rejected("spec.layer2.reservedSubnets", "reservedSubnets must be subnetworks of the networks specified in the subnets field.")),
	Entry("reserved subnet larger than the subnet", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [192.168.100.0/24], reservedSubnets: [192.168.0.0/16]}`).
		rejected("reservedSubnets must be subnetworks of the networks specified in the subnets field.")),
	Entry("reserved subnet with host bits set", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [192.168.100.0/24], reservedSubnets: [192.168.100.201/29]}`).
		rejected("spec.layer2.reservedSubnets", "reservedSubnets must be a masked network address (no host bits set).")),
	Entry("IPv6 reserved subnet with host bits set", udn(`
topology: Layer2
layer2: {role: Primary, subnets: ["fd00:100::/64"], reservedSubnets: ["fd00:100::1/120"]}`).
		rejected("reservedSubnets must be a masked network address (no host bits set).")),
	Entry("25 reserved subnets", udn(l2Primary4).with(func(o map[string]any) {
		setPath(o, reserved(25), "spec", "layer2", "reservedSubnets")
	}).accepted()),
	Entry("26 reserved subnets", udn(l2Primary4).with(func(o map[string]any) {
		setPath(o, reserved(26), "spec", "layer2", "reservedSubnets")
	}).rejected("spec.layer2.reservedSubnets: Too many: 26: must have at most 25 items")),
	Entry("infrastructure subnets on a Secondary network", udn(`
topology: Layer2
layer2: {role: Secondary, subnets: [192.168.100.0/24], infrastructureSubnets: [192.168.100.0/30]}`).
		rejected("infrastructureSubnets is only supported for Primary network.")),
	Entry("infrastructure subnets without subnets", udn(`
topology: Layer2
layer2: {role: Secondary, ipam: {mode: Disabled}, infrastructureSubnets: [192.168.100.0/30]}`).
		rejected("infrastructureSubnets must be unset when subnets is unset.")),
	Entry("infrastructure subnet outside the subnets", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [192.168.100.0/24, "fd00::/64"], infrastructureSubnets: ["fd01::/126"]}`).
		rejected("spec.layer2.infrastructureSubnets", "infrastructureSubnets must be subnetworks of the networks specified in the subnets field.")),
	Entry("infrastructure subnet with host bits set", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [192.168.100.0/24], infrastructureSubnets: [192.168.100.1/30]}`).
		rejected("spec.layer2.infrastructureSubnets", "infrastructureSubnets must be a masked network address (no host bits set).")),
	Entry("four infrastructure subnets", udn(l2Primary4).with(func(o map[string]any) {
		setPath(o, []any{"10.10.0.0/30", "10.10.0.4/30", "10.10.0.8/30", "10.10.0.12/30"}, "spec", "layer2", "infrastructureSubnets")
	}).accepted()),
	Entry("five infrastructure subnets", udn(l2Primary4).with(func(o map[string]any) {
		setPath(o, []any{"10.10.0.0/30", "10.10.0.4/30", "10.10.0.8/30", "10.10.0.12/30", "10.10.0.16/30"}, "spec", "layer2", "infrastructureSubnets")
	}).rejected("spec.layer2.infrastructureSubnets: Too many: 5: must have at most 4 items")),
	Entry("infrastructure subnet inside a reserved subnet", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [192.168.100.0/24], infrastructureSubnets: [192.168.100.200/30], reservedSubnets: [192.168.100.192/27]}`).
		rejected("infrastructureSubnets and reservedSubnets must not overlap.")),
	Entry("reserved subnet inside an infrastructure subnet", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [192.168.100.0/24], infrastructureSubnets: [192.168.100.0/28], reservedSubnets: [192.168.100.8/29]}`).
		rejected("infrastructureSubnets and reservedSubnets must not overlap.")),
	Entry("the Layer2 block cannot change", udn(l2Primary4).then(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24], mtu: 1300}`).rejected("Layer2 is immutable.")),
	Entry("the gateway cannot change", cudn(okep5233).then(`
namespaceSelector: {matchLabels: {tenant: blue}}
network:
  topology: Layer2
  layer2:
    role: Primary
    subnets: ["192.168.100.0/24"]
    infrastructureSubnets: ["192.168.100.0/30"]
    reservedSubnets: ["192.168.100.200/29"]
    defaultGatewayIPs: ["192.168.100.1"]`).rejected("spec.network.layer2", "Layer2 is immutable.")),
	Entry("an unchanged Layer2 block may be re-applied", udn(l2Primary4).then(l2Primary4).accepted()),

	// --- Layer3 subnets (OKEP-5377) ---
	Entry("Layer3 Primary with several IPv4 subnets", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}, {cidr: 10.21.0.0/16, hostSubnet: 24}]}`).accepted()),
	Entry("Layer3 Primary dual-stack with two subnets per family", udn(`
topology: Layer3
layer3:
  role: Primary
  subnets:
  - {cidr: 10.20.0.0/16, hostSubnet: 24}
  - {cidr: "fd00:20::/48", hostSubnet: 64}
  - {cidr: 10.21.0.0/16, hostSubnet: 24}
  - {cidr: "fd00:21::/48", hostSubnet: 64}`).accepted()),
	Entry("Layer3 Secondary with two IPv4 subnets", udn(`
topology: Layer3
layer3: {role: Secondary, subnets: [{cidr: 10.30.0.0/16}, {cidr: 10.31.0.0/16}]}`).
		rejected("When 2 CIDRs are set for Secondary networks, they must be from different IP families.")),
	Entry("Layer3 Secondary with three subnets", udn(`
topology: Layer3
layer3: {role: Secondary, subnets: [{cidr: 10.30.0.0/16}, {cidr: "fd00:30::/48"}, {cidr: 10.31.0.0/16}]}`).
		rejected("Secondary networks may define at most 2 subnets.")),
	Entry("Layer3 Secondary dual-stack", udn(`
topology: Layer3
layer3: {role: Secondary, subnets: [{cidr: 10.30.0.0/16}, {cidr: "fd00:30::/48"}]}`).accepted()),
	Entry("Layer3 overlapping subnets", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}, {cidr: 10.20.128.0/17, hostSubnet: 24}]}`).
		rejected("Subnets must not overlap or contain each other.")),
	Entry("Layer3 IPv6 subnet containing another", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: "fd00:20:1::/48", hostSubnet: 64}, {cidr: "fd00:20::/32", hostSubnet: 64}]}`).
		rejected("Subnets must not overlap or contain each other.")),
	Entry("Layer3 repeated subnet", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}, {cidr: 10.20.0.0/16, hostSubnet: 24}]}`).
		rejected("Subnets with same CIDR are not allowed.")),
	Entry("Layer3 subnets of one family with different hostSubnets", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}, {cidr: 10.21.0.0/16, hostSubnet: 25}]}`).
		rejected("Subnets from the same IP family must use the same hostSubnet value.")),
	Entry("Layer3 subnets of one family, one without hostSubnet", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}, {cidr: 10.21.0.0/16}]}`).
		rejected("Subnets from the same IP family must use the same hostSubnet value.")),
	Entry("Layer3 families may use different hostSubnets", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}, {cidr: "fd00:20::/48", hostSubnet: 64}]}`).accepted()),
	Entry("hostSubnet equal to the prefix", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/24, hostSubnet: 24}]}`).
		rejected("spec.layer3.subnets[0]", "HostSubnet must be smaller than CIDR subnet: hostSubnet must be longer than the prefix length of cidr.")),
	Entry("IPv6 hostSubnet shorter than the prefix", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: "fd00:20::/64", hostSubnet: 48}]}`).
		rejected("HostSubnet must be smaller than CIDR subnet: hostSubnet must be longer than the prefix length of cidr.")),
	Entry("IPv6 hostSubnet 120", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: "fd00:20::/64", hostSubnet: 120}]}`).accepted()),
	Entry("IPv4 hostSubnet 30 leaves room for pods", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 30}]}`).accepted()),
	Entry("IPv4 hostSubnet 31", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 31}]}`).
		rejected("spec.layer3.subnets[0]", "HostSubnet must < 32 for ipv4 CIDR, and udnkit requires at most 30 to leave room for pods.")),
	Entry("IPv4 hostSubnet 32", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 32}]}`).
		rejected("HostSubnet must < 32 for ipv4 CIDR, and udnkit requires at most 30 to leave room for pods.")),
	Entry("IPv6 hostSubnet 126 leaves room for pods", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: "fd00:20::/64", hostSubnet: 126}]}`).accepted()),
	Entry("IPv6 hostSubnet 127", cudn(`
namespaceSelector: {}
network: {topology: Layer3, layer3: {role: Secondary, subnets: [{cidr: 10.30.0.0/16, hostSubnet: 24}, {cidr: "fd00:30::/64", hostSubnet: 127}]}}`).
		rejected("spec.network.layer3.subnets[1]", "hostSubnet must leave room for pods: at most 126 for an IPv6 cidr.")),
	Entry("IPv6 hostSubnet 128", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: "fd00:20::/64", hostSubnet: 128}]}`).
		rejected("spec.layer3.subnets[0].hostSubnet in body should be less than or equal to 127",
			"hostSubnet must leave room for pods: at most 126 for an IPv6 cidr.")),
	Entry("hostSubnet 31 of an IPv6 cidr is fine", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: "fd00::/16", hostSubnet: 31}]}`).accepted()),
	Entry(fmt.Sprintf("Layer3 Primary at the list maximum (%d subnets)", maxL3Subnets), udn(l3Primary4).with(func(o map[string]any) {
		setPath(o, subnetsL3(maxL3Subnets), "spec", "layer3", "subnets")
	}).accepted()),
	Entry("Layer3 Primary above the list maximum", udn(l3Primary4).with(func(o map[string]any) {
		setPath(o, subnetsL3(maxL3Subnets+1), "spec", "layer3", "subnets")
	}).rejected(fmt.Sprintf("spec.layer3.subnets: Too many: %d: must have at most %d items", maxL3Subnets+1, maxL3Subnets))),
	Entry("Layer3 Primary appends an IPv4 subnet", udn(l3Primary4).then(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}, {cidr: 10.21.0.0/16, hostSubnet: 24}]}`).accepted()),
	Entry("Layer3 Primary appends an IPv6 subnet", udn(l3Primary4).then(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}, {cidr: "fd00:20::/48", hostSubnet: 64}]}`).accepted()),
	Entry("Layer3 Primary appends an overlapping subnet", udn(l3Primary4).then(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}, {cidr: 10.20.64.0/18, hostSubnet: 24}]}`).
		rejected("Subnets must not overlap or contain each other.")),
	Entry("Layer3 Primary appends a subnet with another hostSubnet", udn(l3Primary4).then(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}, {cidr: 10.21.0.0/16, hostSubnet: 26}]}`).
		rejected("Subnets from the same IP family must use the same hostSubnet value.")),
	Entry("Layer3 Primary removes a subnet", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}, {cidr: 10.21.0.0/16, hostSubnet: 24}]}`).then(l3Primary4).
		rejected("Removing existing subnets is not allowed; existing subnets cannot be reordered or changed either, new subnets may only be appended.")),
	Entry("Layer3 Primary changes a subnet", udn(l3Primary4).then(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.22.0.0/16, hostSubnet: 24}]}`).
		rejected("Removing existing subnets is not allowed; existing subnets cannot be reordered or changed either, new subnets may only be appended.")),
	Entry("Layer3 Primary reorders its subnets", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}, {cidr: 10.21.0.0/16, hostSubnet: 24}]}`).then(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.21.0.0/16, hostSubnet: 24}, {cidr: 10.20.0.0/16, hostSubnet: 24}]}`).
		rejected("Removing existing subnets is not allowed; existing subnets cannot be reordered or changed either, new subnets may only be appended.")),
	Entry("Layer3 Primary changes a hostSubnet", udn(l3Primary4).then(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 25}]}`).
		rejected("hostSubnet is immutable for an existing subnet.")),
	Entry("Layer3 Primary sets a hostSubnet that was automatic", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: "fd00:20::/48"}]}`).then(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: "fd00:20::/48", hostSubnet: 64}]}`).
		rejected("hostSubnet is immutable for an existing subnet.")),
	Entry("Layer3 Secondary subnets are immutable", udn(l3Secondary4).then(`
topology: Layer3
layer3: {role: Secondary, subnets: [{cidr: 10.30.0.0/16, hostSubnet: 24}, {cidr: "fd00:30::/48", hostSubnet: 64}]}`).
		rejected("Subnets is immutable for Secondary role.")),
	Entry("Layer3 role is immutable", udn(l3Primary4).then(`
topology: Layer3
layer3: {role: Secondary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}]}`).
		rejected("spec.layer3.role", "role is immutable.")),
	Entry("Layer3 mtu cannot be added", udn(l3Primary4).then(`
topology: Layer3
layer3: {role: Primary, mtu: 1400, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}]}`).
		rejected("mtu is immutable.")),
	Entry("Layer3 mtu cannot change", udn(`
topology: Layer3
layer3: {role: Primary, mtu: 1400, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}]}`).then(`
topology: Layer3
layer3: {role: Primary, mtu: 1500, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}]}`).
		rejected("mtu is immutable.")),
	Entry("Layer3 joinSubnets cannot change", udn(`
topology: Layer3
layer3: {role: Primary, joinSubnets: [100.66.0.0/16], subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}]}`).then(`
topology: Layer3
layer3: {role: Primary, joinSubnets: [100.67.0.0/16], subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}]}`).
		rejected("joinSubnets is immutable.")),
	Entry("Layer3 joinSubnets cannot be removed", udn(`
topology: Layer3
layer3: {role: Primary, joinSubnets: [100.66.0.0/16], subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}]}`).then(l3Primary4).
		rejected("joinSubnets is immutable.")),
	Entry("CUDN Layer3 Primary appends a subnet", cudn(`
namespaceSelector: {}
network: {topology: Layer3, layer3: {role: Primary, subnets: [{cidr: "fd00:40::/48", hostSubnet: 64}]}}`).then(`
namespaceSelector: {}
network: {topology: Layer3, layer3: {role: Primary, subnets: [{cidr: "fd00:40::/48", hostSubnet: 64}, {cidr: "fd00:41::/48", hostSubnet: 64}]}}`).accepted()),
	Entry("CUDN Layer3 Primary removes a subnet", cudn(`
namespaceSelector: {}
network: {topology: Layer3, layer3: {role: Primary, subnets: [{cidr: "fd00:40::/48", hostSubnet: 64}, {cidr: "fd00:41::/48", hostSubnet: 64}]}}`).then(`
namespaceSelector: {}
network: {topology: Layer3, layer3: {role: Primary, subnets: [{cidr: "fd00:41::/48", hostSubnet: 64}]}}`).
		rejected("spec.network.layer3", "Removing existing subnets is not allowed; existing subnets cannot be reordered or changed either, new subnets may only be appended.")),

	// --- Localnet ---
	Entry("physicalNetworkName with a colon", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: "phys:net", subnets: [192.0.2.0/24]}}`).
		rejected("physicalNetworkName cannot contain `,` or `:` characters.")),
	Entry("excludeSubnets inside the subnets", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet, subnets: [192.0.2.0/24, "2001:db8::/64"], excludeSubnets: [192.0.2.200/30, "2001:db8::/120"]}}`).accepted()),
	Entry("excludeSubnets outside the subnets", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet, subnets: [192.0.2.0/24], excludeSubnets: [198.51.100.0/30]}}`).
		rejected("spec.network.localnet.excludeSubnets", "excludeSubnets must each be inside one of the subnets.")),
	Entry("excludeSubnets without subnets", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet, ipam: {mode: Disabled}, excludeSubnets: [198.51.100.0/30]}}`).
		rejected("excludeSubnets must be unset when subnets is unset.")),
	Entry("access VLAN", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet, ipam: {mode: Disabled}, vlan: {mode: Access, access: {id: 4094}}}}`).accepted()),
	Entry("access VLAN without its id", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet, ipam: {mode: Disabled}, vlan: {mode: Access}}}`).
		rejected("vlan access config is required when vlan mode is 'Access', and forbidden otherwise.")),
	Entry("VLAN id 4095", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet, ipam: {mode: Disabled}, vlan: {mode: Access, access: {id: 4095}}}}`).
		rejected("spec.network.localnet.vlan.access.id: Invalid value: 4095")),
	Entry("VLAN id 0", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet, ipam: {mode: Disabled}, vlan: {mode: Access, access: {id: 0}}}}`).
		rejected("spec.network.localnet.vlan.access.id: Invalid value: 0")),
	Entry("trunk VLAN mode", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet, ipam: {mode: Disabled}, vlan: {mode: Trunk}}}`).
		rejected(`spec.network.localnet.vlan.mode: Unsupported value: "Trunk"`)),
	Entry("the Localnet block cannot change", cudn(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet, subnets: [192.0.2.0/24]}}`).then(`
namespaceSelector: {}
network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet2, subnets: [192.0.2.0/24]}}`).
		rejected("Localnet is immutable.")),

	// --- metadata is validated too ---
	Entry("invalid object name", udn(l2Primary4).with(func(o map[string]any) {
		setPath(o, "Not_A_DNS_Name", "metadata", "name")
	}).rejected("metadata.name: Invalid value")),
)

// maxL3Subnets is the MaxItems of layer3.subnets: the most the CEL cost
// estimate allows with the append-only and overlap rules (OKEP-5377 says 400).
const maxL3Subnets = 200

func reserved(n int) []any {
	out := make([]any, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("10.10.0.%d/32", 10+i))
	}
	return out
}
