package cel_test

import (
	. "github.com/onsi/ginkgo/v2"
)

// msgJoinOverlap is the CRD's rule that a network's explicit joinSubnets stay
// clear of its subnets (upstream's SubnetOverlapCheck words).
const msgJoinOverlap = "joinSubnets must not overlap subnets: pod or join subnet overlaps with already configured internal subnets."

var _ = DescribeTable("joinSubnets must not overlap subnets", run,
	Entry("Layer2 join subnet inside the subnet", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.182.0.0/16], joinSubnets: [10.182.0.0/24]}`).
		rejected("spec.layer2.joinSubnets: Invalid value", msgJoinOverlap)),
	Entry("Layer2 subnet inside the join subnet", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [100.66.1.0/24], joinSubnets: [100.66.0.0/16]}`).
		rejected("spec.layer2.joinSubnets", msgJoinOverlap)),
	Entry("Layer2 dual-stack, IPv6 join subnet inside the IPv6 subnet", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.10.0.0/24, "fd00:10::/48"], joinSubnets: [100.66.0.0/16, "fd00:10::/64"]}`).
		rejected("spec.layer2.joinSubnets", msgJoinOverlap)),
	Entry("Layer2 join subnet beside the subnet", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.182.0.0/16], joinSubnets: [10.183.0.0/24]}`).accepted()),
	Entry("Layer2 join subnet of the other family only", udn(`
topology: Layer2
layer2: {role: Primary, subnets: [10.182.0.0/16], joinSubnets: ["fd00:10::/64"]}`).accepted()),
	Entry("Layer3 join subnet inside a subnet", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}], joinSubnets: [10.20.255.0/24]}`).
		rejected("spec.layer3.joinSubnets", msgJoinOverlap)),
	Entry("Layer3 join subnet beside the subnets", udn(`
topology: Layer3
layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}], joinSubnets: [10.21.0.0/24]}`).accepted()),
	Entry("CUDN Layer2 join subnet inside the subnet", cudn(`
namespaceSelector: {}
network:
  topology: Layer2
  layer2: {role: Primary, subnets: [10.182.0.0/16], joinSubnets: [10.182.0.0/24]}`).
		rejected("spec.network.layer2.joinSubnets", msgJoinOverlap)),
	Entry("CUDN Layer3 subnet inside the join subnet", cudn(`
namespaceSelector: {}
network:
  topology: Layer3
  layer3: {role: Primary, subnets: [{cidr: 100.66.0.0/20, hostSubnet: 24}], joinSubnets: [100.66.0.0/16]}`).
		rejected("spec.network.layer3.joinSubnets", msgJoinOverlap)),
)
