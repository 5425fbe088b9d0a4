package cel_test

import (
	"fmt"
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// Every rule upstream OVN-Kubernetes' CRDs enforce that udnkit enforces too
// is refused with upstream's message in udnkit's text. The messages come from
// testdata/upstream-messages.yaml, extracted from upstream's generated CRDs;
// breakers holds, per message, manifests that break the rule.

type upstreamMessage struct {
	Kind    string `json:"kind"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

// breaker builds, for a kind, a case that breaks one upstream rule. A shared
// breaker's spec is a UserDefinedNetwork spec; a ClusterUserDefinedNetwork
// gets it as spec.network. A cudnOnly breaker's spec is a whole CUDN spec.
type breaker struct {
	spec, update string
	cudnOnly     bool
}

func (b breaker) caseFor(kind string) celCase {
	spec, update := b.spec, b.update
	if kind == "ClusterUserDefinedNetwork" && !b.cudnOnly {
		spec, update = asNetwork(spec), asNetwork(update)
	}
	c := celCase{kind: kind, spec: spec}
	if update != "" {
		c = c.then(update)
	}
	return c
}

func asNetwork(spec string) string {
	if spec == "" {
		return ""
	}
	return "namespaceSelector: {}\nnetwork:\n  " + strings.ReplaceAll(strings.TrimSpace(spec), "\n", "\n  ")
}

func shared(spec string) breaker           { return breaker{spec: spec} }
func sharedUpdate(spec, to string) breaker { return breaker{spec: spec, update: to} }
func cudnSpec(c celCase) breaker           { return breaker{spec: c.spec, update: c.update, cudnOnly: true} }

const (
	l2Sec  = "topology: Layer2\nlayer2: {role: Secondary, subnets: [10.1.0.0/24]"
	l2Prim = "topology: Layer2\nlayer2: {role: Primary, subnets: [10.1.0.0/24]"
	l2Dual = "topology: Layer2\nlayer2: {role: Primary, subnets: [10.1.0.0/24, \"fd00:1::/64\"]"
	l3     = "topology: Layer3\nlayer3: {role: %s, subnets: [%s]%s}"
	locnet = "namespaceSelector: {}\nnetwork: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: physnet%s}}"
)

func l3Spec(role, subnets, more string) string { return fmt.Sprintf(l3, role, subnets, more) }
func localnet(more string) celCase             { return cudn(fmt.Sprintf(locnet, more)) }

var breakers = map[string][]breaker{
	"spec.layer3 is required when topology is Layer3 and forbidden otherwise": {shared("topology: Layer3")},
	"spec.layer2 is required when topology is Layer2 and forbidden otherwise": {shared("topology: Layer2")},
	"spec.localnet is required when topology is Localnet and forbidden otherwise": {
		cudnSpec(cudn("namespaceSelector: {}\nnetwork: {topology: Localnet}"))},
	"Topology is immutable": {sharedUpdate(l2Sec+"}", l3Spec("Secondary", "{cidr: 10.1.0.0/16}", ""))},
	"Layer2 is immutable":   {sharedUpdate(l2Sec+"}", l2Sec+", mtu: 1300}")},
	"Localnet is immutable": {cudnSpec(localnet(", subnets: [192.0.2.0/24]").then(fmt.Sprintf(locnet, ", subnets: [192.0.3.0/24]")))},

	"Subnets is required with ipam.mode is Enabled or unset": {shared("topology: Layer2\nlayer2: {role: Secondary}")},
	"Subnets must be unset when ipam.mode is Disabled":       {shared(l2Sec + ", ipam: {mode: Disabled}}")},
	"Subnets is required with ipam.mode is Enabled or unset, and forbidden otherwise": {
		cudnSpec(localnet("")), cudnSpec(localnet(", subnets: [192.0.2.0/24], ipam: {mode: Disabled}"))},
	"Disabled ipam.mode is only supported for Secondary network":       {shared("topology: Layer2\nlayer2: {role: Primary, ipam: {mode: Disabled}}")},
	"lifecycle Persistent is only supported when ipam.mode is Enabled": {shared("topology: Layer2\nlayer2: {role: Secondary, ipam: {mode: Disabled, lifecycle: Persistent}}")},
	"JoinSubnets is only supported for Primary network": {
		shared(l2Sec + ", joinSubnets: [100.66.0.0/16]}"),
		shared(l3Spec("Secondary", "{cidr: 10.30.0.0/16}", ", joinSubnets: [100.66.0.0/16]"))},
	"MTU should be greater than or equal to 1280 when IPv6 subnet is used": {
		shared("topology: Layer2\nlayer2: {role: Primary, subnets: [\"fd00:1::/64\"], mtu: 1200}"),
		shared(l3Spec("Primary", "{cidr: \"fd00:30::/48\", hostSubnet: 64}", ", mtu: 1200"))},
	"MTU should be greater than or equal to 1280 when an IPv6 subnet is used": {cudnSpec(localnet(", subnets: [\"fd00:40::/64\"], mtu: 1200"))},

	"defaultGatewayIPs is only supported for Primary network":                            {shared(l2Sec + ", defaultGatewayIPs: [10.1.0.1]}")},
	"defaultGatewayIPs must belong to one of the subnets specified in the subnets field": {shared(l2Prim + ", defaultGatewayIPs: [10.2.0.1]}")},
	"defaultGatewayIPs must be specified for all IP families":                            {shared(l2Dual + ", defaultGatewayIPs: [10.1.0.1]}")},
	"defaultGatewayIPs have to belong to infrastructureSubnets":                          {shared(l2Prim + ", infrastructureSubnets: [10.1.0.0/30], defaultGatewayIPs: [10.1.0.10]}")},
	"When 2 IPs are set, they must be from different IP families":                        {shared(l2Dual + ", defaultGatewayIPs: [10.1.0.1, 10.1.0.2]}")},
	"IP is invalid": {shared(l2Prim + ", defaultGatewayIPs: [10.1.0.300]}")},

	"reservedSubnets must be unset when subnets is unset":                                      {shared("topology: Layer2\nlayer2: {role: Primary, reservedSubnets: [10.1.0.0/28]}")},
	"reservedSubnets is only supported for Primary network":                                    {shared(l2Sec + ", reservedSubnets: [10.1.0.0/28]}")},
	"reservedSubnets must be subnetworks of the networks specified in the subnets field":       {shared(l2Prim + ", reservedSubnets: [10.2.0.0/28]}")},
	"reservedSubnets must be a masked network address (no host bits set)":                      {shared(l2Prim + ", reservedSubnets: [10.1.0.9/29]}")},
	"infrastructureSubnets must be unset when subnets is unset":                                {shared("topology: Layer2\nlayer2: {role: Primary, infrastructureSubnets: [10.1.0.0/30]}")},
	"infrastructureSubnets is only supported for Primary network":                              {shared(l2Sec + ", infrastructureSubnets: [10.1.0.0/30]}")},
	"infrastructureSubnets must be subnetworks of the networks specified in the subnets field": {shared(l2Prim + ", infrastructureSubnets: [10.2.0.0/30]}")},
	"infrastructureSubnets must be a masked network address (no host bits set)":                {shared(l2Prim + ", infrastructureSubnets: [10.1.0.1/30]}")},
	"infrastructureSubnets and reservedSubnets must not overlap":                               {shared(l2Prim + ", infrastructureSubnets: [10.1.0.0/28], reservedSubnets: [10.1.0.0/29]}")},

	"CIDR is invalid": {
		shared("topology: Layer2\nlayer2: {role: Primary, subnets: [10.1.0.0/33]}"),
		shared(l3Spec("Primary", "{cidr: tenant-a}", "")),
		shared(l2Prim + ", infrastructureSubnets: [10.1.0.0/33]}")},
	"When 2 CIDRs are set, they must be from different IP families": {
		shared("topology: Layer2\nlayer2: {role: Primary, subnets: [10.1.0.0/24, 10.2.0.0/24]}"),
		shared(l2Prim + ", joinSubnets: [\"fd98::/64\", \"fd99::/64\"]}")},

	"Subnets is immutable for Secondary role": {sharedUpdate(
		l3Spec("Secondary", "{cidr: 10.30.0.0/16, hostSubnet: 24}", ""),
		l3Spec("Secondary", "{cidr: 10.30.0.0/16, hostSubnet: 24}, {cidr: \"fd00:30::/48\", hostSubnet: 64}", ""))},
	"Secondary networks may define at most 2 subnets": {shared(l3Spec("Secondary",
		"{cidr: 10.30.0.0/16}, {cidr: 10.31.0.0/16}, {cidr: \"fd00:30::/48\"}", ""))},
	"When 2 CIDRs are set for Secondary networks, they must be from different IP families": {shared(l3Spec("Secondary",
		"{cidr: 10.30.0.0/16}, {cidr: 10.31.0.0/16}", ""))},
	"Removing existing subnets is not allowed": {sharedUpdate(
		l3Spec("Primary", "{cidr: 10.20.0.0/16}, {cidr: 10.21.0.0/16}", ""),
		l3Spec("Primary", "{cidr: 10.20.0.0/16}", ""))},
	"Subnets must not overlap or contain each other": {shared(l3Spec("Primary",
		"{cidr: 10.20.0.0/16, hostSubnet: 26}, {cidr: 10.20.1.0/24, hostSubnet: 26}", ""))},
	"Subnets with same CIDR are not allowed": {shared(l3Spec("Primary",
		"{cidr: 10.20.0.0/16}, {cidr: 10.20.0.0/16}", ""))},
	"hostSubnet is immutable": {sharedUpdate(
		l3Spec("Primary", "{cidr: 10.20.0.0/16, hostSubnet: 24}", ""),
		l3Spec("Primary", "{cidr: 10.20.0.0/16, hostSubnet: 25}", ""))},
	"Subnets from the same IP family must use the same hostSubnet value": {shared(l3Spec("Primary",
		"{cidr: 10.20.0.0/16, hostSubnet: 24}, {cidr: 10.21.0.0/16, hostSubnet: 25}", ""))},
	"joinSubnets is immutable": {sharedUpdate(
		l3Spec("Primary", "{cidr: 10.20.0.0/16}", ", joinSubnets: [100.66.0.0/16]"),
		l3Spec("Primary", "{cidr: 10.20.0.0/16}", ", joinSubnets: [100.67.0.0/16]"))},
	"mtu is immutable": {sharedUpdate(
		l3Spec("Primary", "{cidr: 10.20.0.0/16}", ", mtu: 1400"),
		l3Spec("Primary", "{cidr: 10.20.0.0/16}", ", mtu: 1500"))},
	"role is immutable": {sharedUpdate(
		l3Spec("Primary", "{cidr: 10.20.0.0/16}", ""),
		l3Spec("Secondary", "{cidr: 10.20.0.0/16}", ""))},
	"HostSubnet must be smaller than CIDR subnet": {shared(l3Spec("Primary", "{cidr: 10.20.0.0/16, hostSubnet: 16}", ""))},
	"HostSubnet must < 32 for ipv4 CIDR":          {shared(l3Spec("Primary", "{cidr: 10.20.0.0/16, hostSubnet: 32}", ""))},

	"physicalNetworkName cannot contain `,` or `:` characters": {
		cudnSpec(cudn("namespaceSelector: {}\nnetwork: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: \"phys:net\", subnets: [192.0.2.0/24]}}"))},
	"vlan access config is required when vlan mode is 'Access', and forbidden otherwise": {cudnSpec(localnet(", subnets: [192.0.2.0/24], vlan: {mode: Access}"))},
	"excludeSubnets must be unset when subnets is unset":                                 {cudnSpec(localnet(", ipam: {mode: Disabled}, excludeSubnets: [192.0.2.0/28]"))},

	"transport 'NoOverlay' is only supported for Layer3 primary networks": {cudnSpec(network(netL2Primary, noOverlay))},
	"spec.noOverlay is required when type transport is 'NoOverlay'":       {cudnSpec(network(netL3Primary, "\n  transport: NoOverlay"))},
	"spec.noOverlay is forbidden when transport type is not 'NoOverlay'":  {cudnSpec(network(netL3Primary, "\n  noOverlay: {outboundSNAT: Enabled, routing: Managed}"))},
	"NoOverlay is immutable": {cudnSpec(network(netL3Primary, noOverlay).then(
		"namespaceSelector: {}\nnetwork:" + netL3Primary + "\n  transport: NoOverlay\n  noOverlay: {outboundSNAT: Disabled, routing: Managed}"))},
	"Transport is immutable": {cudnSpec(network(netL3Primary, evpnIPVRF).then("namespaceSelector: {}\nnetwork:" + netL3Primary + noOverlay))},
	"transport 'EVPN' is only supported for Layer2 or Layer3 primary networks":        {cudnSpec(network(netL2Secondary, evpnMACVRF))},
	"spec.evpn field is required when transport is 'EVPN'":                            {cudnSpec(network(netL3Primary, "\n  transport: EVPN"))},
	"spec.evpn field is forbidden when transport is not 'EVPN'":                       {cudnSpec(network(netL3Primary, "\n  evpn: {vtep: vtep-a, ipVRF: {vni: 300}}"))},
	"spec.evpn.macVRF field is required for Layer2 topology when transport is 'EVPN'": {cudnSpec(network(netL2Primary, evpnIPVRF))},
	"spec.evpn.ipVRF field is required for Layer3 topology when transport is 'EVPN'":  {cudnSpec(network(netL3Primary, evpnMACVRF))},
	"spec.evpn.macVRF field is forbidden for Layer3 topology when transport is 'EVPN'": {
		cudnSpec(network(netL3Primary, "\n  transport: EVPN\n  evpn: {vtep: vtep-a, ipVRF: {vni: 300}, macVRF: {vni: 100}}"))},
	"at least one of macVRF or ipVRF must be specified": {cudnSpec(network(netL3Primary, "\n  transport: EVPN\n  evpn: {vtep: vtep-a}"))},
	"macVRF and ipVRF must use different VNIs": {
		cudnSpec(network(netL2Primary, "\n  transport: EVPN\n  evpn: {vtep: vtep-a, macVRF: {vni: 100}, ipVRF: {vni: 100}}"))},
	"RT must contain exactly one colon":                                                                         {cudnSpec(routeTarget("65000"))},
	"RT global administrator must be either '*', an IPv4 address, or a number":                                  {cudnSpec(routeTarget("x:1"))},
	"RT local administrator must be a number":                                                                   {cudnSpec(routeTarget("1:x"))},
	"RT with wildcard global administrator must have format *:OPQR where OPQR <= 4294967295":                    {cudnSpec(routeTarget("*:4294967296"))},
	"RT with IPv4 global administrator must have format A.B.C.D:MN where MN <= 65535":                           {cudnSpec(routeTarget("192.0.2.1:65536"))},
	"RT with 4-byte ASN global administrator must have format GHJK:MN where GHJK <= 4294967295 and MN <= 65535": {cudnSpec(routeTarget("70000:70000"))},
	"RT with 2-byte ASN global administrator must have format EF:OPQR where EF <= 65535 and OPQR <= 4294967295": {cudnSpec(routeTarget("100:4294967296"))},

	"spec.uplinks is supported only for primary Layer2 and Layer3 networks": {cudnSpec(withUplinks("[uplink-a]", netL2Secondary))},
	"spec.uplinks is not supported with EVPN transport":                     {cudnSpec(withUplinks("[uplink-a]", netL2Primary, evpnMACVRF))},
	"uplinks is immutable": {cudnSpec(withUplinks("[uplink-a]", netL2Primary).then("namespaceSelector: {}\nnetwork:" + netL2Primary + "\nuplinks: [uplink-b]"))},
}

func loadUpstreamMessages() []upstreamMessage {
	data, err := os.ReadFile("testdata/upstream-messages.yaml")
	Expect(err).NotTo(HaveOccurred())
	var f struct {
		Messages []upstreamMessage `json:"messages"`
	}
	Expect(yaml.UnmarshalStrict(data, &f)).To(Succeed())
	Expect(f.Messages).NotTo(BeEmpty())
	return f.Messages
}

var _ = Describe("upstream OVN-Kubernetes' rule messages", func() {
	It("has a breaking manifest for every upstream message, and none for a message upstream does not have", func() {
		used := map[string]bool{}
		for _, m := range loadUpstreamMessages() {
			Expect(breakers).To(HaveKey(m.Message), "no manifest breaks upstream's rule at %s of %s", m.Path, m.Kind)
			used[m.Message] = true
		}
		for msg := range breakers {
			Expect(used).To(HaveKey(msg), "breakers holds %q, which is not an upstream message", msg)
		}
	})

	It("refuses each manifest that breaks an upstream rule with upstream's message", func() {
		n := 0
		for _, m := range loadUpstreamMessages() {
			ran := 0
			for _, b := range breakers[m.Message] {
				if b.cudnOnly && m.Kind != "ClusterUserDefinedNetwork" {
					continue
				}
				By(m.Kind + ": " + m.Message)
				run(b.caseFor(m.Kind).rejected(m.Message))
				ran++
			}
			Expect(ran).To(BeNumerically(">", 0), "no %s manifest breaks %q", m.Kind, m.Message)
			n += ran
		}
		GinkgoWriter.Printf("upstream messages: %d manifests refused with upstream's text\n", n)
	})
})
