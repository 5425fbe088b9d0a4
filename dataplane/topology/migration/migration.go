package migration

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// PolicyPriorityLiveMigration is the priority of the reroute policy that sends
// a migrated VM's outbound traffic to the node it runs on.
const PolicyPriorityLiveMigration = 10

// LiveMigrationNetwork is the network side of the kubevirt point-to-point routing design.
type LiveMigrationNetwork struct {
	// Name is the network's k8s.ovn.org/network value.
	Name string
	// Topology is the network's topology ("layer3" or "layer2"); the routes go
	// on its cluster router (layer3) or transit router (layer2), found by name.
	Topology string
	// NodePerZone says every node is its own zone (OVN-Kubernetes'
	// interconnect): a Layer2 VM then needs no reroute (see
	// LiveMigrationRoutes). In one zone of many nodes the transit router's
	// src-ip routes to the gateway routers are equal-cost, and the reroute
	// pins the VM's egress to its node.
	NodePerZone bool
	// DHCP configures the DHCP_Options rows of the network's VMs (optional).
	DHCP *VMDHCP
}

// VMDHCP are the DHCP options of a network's VMs, as upstream's ensureDHCP
// and kubevirt/dhcp.go compose them (UpstreamVMDHCP).
type VMDHCP struct {
	// LeaseTime is the DHCPv4 lease in seconds.
	LeaseTime int
	// ServerID is the DHCPv4 server's address and ServerMAC its MAC;
	// ServerMACv6 is the DHCPv6 server's DUID MAC (its server_id).
	ServerID               netip.Addr
	ServerMAC, ServerMACv6 string
	// DNSServers are the cluster DNS service's ClusterIPs (the first of
	// each family is the family's dns_server).
	DNSServers []netip.Addr
	// MTU is the network's MTU (0: no mtu option).
	MTU int
}

// UpstreamVMDHCP is upstream's VM DHCP configuration for a network of mtu
// whose cluster DNS service has the ClusterIPs dns: lease 3500 s, the
// server the ARP proxy's link-local addresses with their derived MACs
// (kubevirt/dhcp.go ComposeDHCPv4Options, ComposeDHCPv6Options).
func UpstreamVMDHCP(mtu int, dns []netip.Addr) VMDHCP {
	return VMDHCP{LeaseTime: ovnk.KubeVirtDHCPLeaseTime, ServerID: ovnk.KubeVirtARPProxyIPv4,
		ServerMAC: ovnk.MACFromIP(ovnk.KubeVirtARPProxyIPv4).String(), ServerMACv6: ovnk.MACFromIP(ovnk.KubeVirtARPProxyIPv6).String(),
		DNSServers: dns, MTU: mtu}
}

// LiveMigrationNode is a node as the point-to-point routes see it.
type LiveMigrationNode struct {
	Name string
	// RouterPort is the router port towards the node's switch, the routes' output port.
	RouterPort string
	// GatewayIPs are the node gateway router's join IPs: the reroute nexthops.
	GatewayIPs []netip.Addr
}

// VM is a KubeVirt VM with its addresses and where it runs.
type VM struct {
	Namespace, Name string
	// IPs are the VM's addresses with their subnet's prefix length.
	IPs []netip.Prefix
	// Node runs the VM now; OwnerNode owns the subnet its IPs came from.
	Node, OwnerNode string
	// Gateways are its pod's gateways (k8s.ovn.org/pod-networks
	// gateway_ips): the IPv4 one is the DHCPv4 router (none: no router).
	Gateways []netip.Addr
}

// LiveMigrationRoutes computes the point-to-point routing of migrated VMs:
// for each VM on a node that does not own its IPs, a /32 (/128) static route
// to the VM via the node's switch port and, unless a Layer2 network's zones
// hold one node each, a reroute policy of its outbound traffic to the node's
// gateway router; for
// every VM, one DHCP_Options row per IP family. A VM back on its owner node,
// or deleted, has no routes.
func LiveMigrationRoutes(net LiveMigrationNetwork, nodes []LiveMigrationNode, vms []VM) (*rows.Desired, error) {
	if net.Name == "" {
		return nil, fmt.Errorf("network.name: must not be empty")
	}
	names := ovnk.NamesFor(net.Name)
	router := names.ClusterRouter()
	switch net.Topology {
	case base.TopologyLayer3:
	case base.TopologyLayer2:
		router = names.TransitRouter()
	default:
		return nil, fmt.Errorf("network.topology: %q is not layer2 or layer3", net.Topology)
	}
	byName := map[string]LiveMigrationNode{}
	for i, n := range nodes {
		if n.Name == "" || n.RouterPort == "" || len(n.GatewayIPs) == 0 {
			return nil, fmt.Errorf("nodes[%d]: name, routerPort and gatewayIPs are required", i)
		}
		byName[n.Name] = n
	}
	r := rows.Router{Row: nbdb.LogicalRouter{Name: router}, Ref: true}
	d := &rows.Desired{Owner: rows.Owner{Network: net.Name, Topology: net.Topology, Piece: base.PieceLiveMigration}}
	for i, vm := range vms {
		field := fmt.Sprintf("vms[%d] (%s/%s)", i, vm.Namespace, vm.Name)
		if vm.Namespace == "" || vm.Name == "" || len(vm.IPs) == 0 {
			return nil, fmt.Errorf("%s: namespace, name and ips are required", field)
		}
		for _, ip := range vm.IPs {
			if !ip.IsValid() {
				return nil, fmt.Errorf("%s.ips: not a valid address/prefix", field)
			}
		}
		if net.DHCP != nil {
			d.DHCPOptions = append(d.DHCPOptions, net.DHCP.Rows(vm)...)
		}
		if vm.Node == vm.OwnerNode {
			continue
		}
		node, ok := byName[vm.Node]
		if !ok {
			return nil, fmt.Errorf("%s.node: node %q is not known", field, vm.Node)
		}
		for _, ip := range vm.IPs {
			a := ip.Addr()
			r.Routes = append(r.Routes, base.StaticRoute(a.String(), a.String(), nbdb.LogicalRouterStaticRoutePolicyDstIP, base.Ptr(node.RouterPort)))
			if net.Topology == base.TopologyLayer2 && net.NodePerZone {
				// The zone's transit router has one src-ip route of the
				// network's subnets, to its one local gateway router: the VM's
				// egress goes there already. A reroute would also override the
				// routes to other nodes' join IPs, so the VM's replies to
				// traffic that came in through another node's gateway router
				// (NodePort, EgressIP) would be lost.
				continue
			}
			gw := slices.IndexFunc(node.GatewayIPs, func(g netip.Addr) bool { return g.Is6() == a.Is6() })
			if gw < 0 {
				return nil, fmt.Errorf("%s: node %s has no %s gateway IP", field, node.Name, base.IPFamily(a))
			}
			r.Policies = append(r.Policies, nbdb.LogicalRouterPolicy{
				Priority: PolicyPriorityLiveMigration, Action: nbdb.LogicalRouterPolicyActionReroute,
				Match:    fmt.Sprintf("%s.src == %s", base.IPFamily(a), a),
				Nexthops: []string{node.GatewayIPs[gw].String()},
			})
		}
	}
	d.Routers = []rows.Router{r}
	return d, nil
}

// Rows are a VM's DHCP_Options, one per family of its IPs, as upstream's
// ensureDHCP writes them: for IPv4 lease_time, server_id, server_mac,
// hostname (the VM's name, quoted), router (its IPv4 gateway), mtu and
// dns_server; for IPv6 server_id (the server's MAC), fqdn and dns_server.
func (o VMDHCP) Rows(vm VM) []nbdb.DHCPOptions {
	var out []nbdb.DHCPOptions
	for _, ip := range vm.IPs {
		v4 := ip.Addr().Is4()
		opts := map[string]string{}
		if v4 {
			opts["lease_time"] = strconv.Itoa(o.LeaseTime)
			opts["server_id"] = o.ServerID.String()
			opts["server_mac"] = o.ServerMAC
			opts["hostname"] = strconv.Quote(vm.Name)
			if gw := slices.IndexFunc(vm.Gateways, netip.Addr.Is4); gw >= 0 {
				opts["router"] = vm.Gateways[gw].String()
			}
			if o.MTU > 0 {
				opts["mtu"] = strconv.Itoa(o.MTU)
			}
		} else {
			opts["server_id"] = o.ServerMACv6
			opts["fqdn"] = strconv.Quote(vm.Name)
		}
		if dns := slices.IndexFunc(o.DNSServers, func(a netip.Addr) bool { return a.Is4() == v4 }); dns >= 0 {
			opts["dns_server"] = o.DNSServers[dns].String()
		}
		out = append(out, nbdb.DHCPOptions{
			Cidr:        ip.Masked().String(),
			ExternalIDs: map[string]string{ovnk.ExternalIDVM: vm.Namespace + "/" + vm.Name},
			Options:     opts,
		})
	}
	return out
}
