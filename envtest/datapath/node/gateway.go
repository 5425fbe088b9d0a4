package node

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/udnkit/udnkit/envtest/datapath/netns"
)

// BridgeMAC is the MAC of the node's breth0, which StartDaemons pins
// (other-config:hwaddr, as ovnkube-node pins it to its uplink's): the
// l3-gateway-config's mac-address, so the gateway routers' external ports'.
func (n *Node) BridgeMAC() (string, error) {
	if n.mac != "" {
		return n.mac, nil
	}
	out, err := netns.Run("", nil, "ip", "-n", n.Netns, "-br", "link", "show", "breth0")
	if err != nil {
		return "", err
	}
	f := strings.Fields(out)
	if len(f) < 3 {
		return "", fmt.Errorf("ip -br link show breth0 in %s: %q", n.Netns, out)
	}
	return f[2], nil
}

// pinBridgeMAC keeps breth0's MAC what it is now: Open vSwitch would
// otherwise pick it anew from the bridge's ports as they come and go.
func (n *Node) pinBridgeMAC() error {
	mac, err := n.BridgeMAC()
	if err == nil {
		_, err = n.Vsctl("set", "Bridge", "breth0", `other-config:hwaddr="`+mac+`"`)
	}
	if err == nil {
		n.mac = mac
	}
	return err
}

// steered is one gateway router's localnet port on breth0 and the
// router's masquerade IPs, which breth0 SNATs to the node's IPs.
type steered struct {
	localnet   string
	masquerade []netip.Addr
	// nodePorts are the router's Services' node ports, as "tcp:30080":
	// breth0 sends connections to them into the router.
	nodePorts []string
}

// SteerGateway installs on breth0 the flows ovnkube-node's shared gateway
// keeps there (pkg/node/bridgeconfig/bridgeflows.go) for one gateway
// router's localnet port; called again for a port it replaces the port's
// masquerade IPs and finds its patch port anew (ovn-controller recreates
// it when the localnet port returns). The router's external port shares the
// node's IP and breth0's MAC with the host and the other networks' gateway
// routers, so connection tracking tells their traffic apart, with one
// ct_mark per network (here the patch port's number): what leaves the
// router from one of masquerade (a user-defined network's gateway router
// SNATs its pods to its masquerade IP) is SNATed to the node's IP of its
// family, everything else from it is committed as it is, both with the mark
// and sent out eth0; IP arriving on eth0 is un-NATed and goes back to the
// router of its connection's mark, everything else to the host; ARP and
// neighbour discovery from eth0 go to the host and every steered router
// (they answer with one MAC). It waits for ovn-controller to create the
// patch ports.
func (n *Node) SteerGateway(ctx context.Context, localnetPort string, masquerade ...netip.Addr) error {
	s := steered{localnet: localnetPort, masquerade: masquerade}
	found := false
	for i := range n.steered {
		if n.steered[i].localnet == localnetPort {
			s.nodePorts = n.steered[i].nodePorts
			n.steered[i], found = s, true
		}
	}
	if !found {
		n.steered = append(n.steered, s)
	}
	return n.installFlows(ctx)
}

// SteerNodePorts installs on breth0, beside SteerGateway's flows for a
// steered gateway router's localnet port, the flows ovnkube-node's
// nodePortWatcher keeps in shared gateway mode for the node ports of the
// Services of that router's network (pkg/node/gateway_shared_intf.go:
// createLbAndExternalSvcFlows): priority 110, what arrives on eth0 for
// one of ports (as "tcp:30080") goes into the router, and what the router
// sends from it with breth0's MAC goes out eth0. Called again it replaces
// the ports; none removes them.
func (n *Node) SteerNodePorts(ctx context.Context, localnetPort string, ports ...string) error {
	for i := range n.steered {
		if n.steered[i].localnet == localnetPort {
			n.steered[i].nodePorts = ports
			return n.installFlows(ctx)
		}
	}
	return fmt.Errorf("node %s: %s is not steered yet (SteerGateway first)", n.Name, localnetPort)
}

// geneveFlows are the flows ovnkube-node keeps on breth0 for the
// interconnect's Geneve traffic whatever routers it steers
// (pkg/node/bridgeconfig/bridgeflows.go, its default flows): Geneve from
// eth0 to breth0's MAC goes to the host, other Geneve from eth0 is
// switched, and the host's Geneve goes out eth0, none of it through
// conntrack nor by the bridge's learned MACs. Every gateway router's
// external port has breth0's MAC too and answers ARP for the node's IP
// through its patch port, where NORMAL would then learn that MAC: the
// node's Geneve traffic would go into that router (which drops it) until
// the host sent a frame of its own.
func geneveFlows(mac string) []string {
	var flows []string
	for _, udp := range []string{"udp", "udp6"} {
		match := udp + ",udp_dst=" + strconv.Itoa(genevePort)
		flows = append(flows,
			"priority=205,in_port=eth0,dl_dst="+mac+","+match+",actions=output:LOCAL",
			"priority=200,in_port=eth0,"+match+",actions=NORMAL",
			"priority=200,in_port=LOCAL,"+match+",actions=output:eth0")
	}
	return flows
}

// genevePort is the interconnect's Geneve UDP port (OVN's default, which
// ovnkube-node's encap port defaults to).
const genevePort = 6081

// installBaseFlows installs on breth0, beside its NORMAL flow, the flows
// ovnkube-node keeps there before it steers any router (geneveFlows).
func (n *Node) installBaseFlows() error {
	mac, err := n.BridgeMAC()
	if err != nil {
		return err
	}
	return n.replaceFlows(append([]string{"priority=0,actions=NORMAL"}, geneveFlows(mac)...))
}

// replaceFlows makes flows breth0's only flows.
func (n *Node) replaceFlows(flows []string) error {
	file := filepath.Join(n.dir, "breth0.flows")
	if err := os.WriteFile(file, []byte(strings.Join(flows, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	_, err := netns.Run("", n.env(), "ovs-ofctl", "-O", "OpenFlow13", "replace-flows", "unix:"+filepath.Join(n.dir, "breth0.mgmt"), file)
	return err
}

// installFlows replaces breth0's flows with the base ones and those of
// every steered router.
func (n *Node) installFlows(ctx context.Context) error {
	patches := make([]string, len(n.steered))
	for i, s := range n.steered {
		var err error
		if patches[i], err = n.patchPort(ctx, s.localnet); err != nil {
			return err
		}
	}
	arp := "priority=10,in_port=eth0,arp,actions=output:LOCAL"
	for _, p := range patches {
		arp += ",output:" + p
	}
	// Neighbour discovery from eth0 (solicitations and advertisements)
	// goes where ARP goes.
	nd := strings.Replace(arp, ",arp,", ",icmp6,icmp_type=135,", 1)
	nd = strings.Replace(nd, "priority=10,", "priority=60,", 1)
	flows := []string{"priority=0,actions=NORMAL", arp, nd, strings.Replace(nd, "icmp_type=135", "icmp_type=136", 1),
		"table=1,priority=0,actions=output:LOCAL"}
	for _, proto := range []string{"ip", "ipv6"} {
		flows = append(flows, "priority=50,in_port=eth0,"+proto+",actions=ct(zone=64000,nat,table=1)")
	}
	mac, err := n.BridgeMAC()
	if err != nil {
		return err
	}
	flows = append(flows, geneveFlows(mac)...)
	for i, s := range n.steered {
		flows = append(flows, n.steerFlows(patches[i], s.masquerade)...)
		for _, np := range s.nodePorts {
			proto, port, ok := strings.Cut(np, ":")
			if !ok {
				return fmt.Errorf("node port %q: want protocol:port", np)
			}
			flows = append(flows, "priority=110,in_port=eth0,"+proto+",tp_dst="+port+",actions=output:"+patches[i],
				"priority=110,in_port="+patches[i]+",dl_src="+mac+","+proto+",tp_src="+port+",actions=output:eth0")
		}
	}
	return n.replaceFlows(flows)
}

// steerFlows are one steered router's flows: out through eth0 (its
// masquerade IPs SNATed to the node's), and back by its connections' mark.
func (n *Node) steerFlows(patch string, masquerade []netip.Addr) []string {
	var flows []string
	for _, m := range masquerade {
		proto, node := "ip,nw_src=", n.UnderlayIP
		if m.Is6() {
			proto, node = "ipv6,ipv6_src=", n.UnderlayIP6
		}
		flows = append(flows, "priority=100,in_port="+patch+","+proto+m.String()+
			",actions=ct(commit,zone=64000,nat(src="+node.String()+"),exec(set_field:"+patch+"->ct_mark)),output:eth0")
	}
	for _, proto := range []string{"ip", "ipv6"} {
		flows = append(flows,
			"priority=99,in_port="+patch+","+proto+",actions=ct(commit,zone=64000,exec(set_field:"+patch+"->ct_mark)),output:eth0",
			"table=1,priority=100,ct_state=+trk+est,ct_mark="+patch+","+proto+",actions=output:"+patch,
			"table=1,priority=100,ct_state=+trk+rel,ct_mark="+patch+","+proto+",actions=output:"+patch)
	}
	return flows
}

// patchPort is the OpenFlow number of the patch port ovn-controller
// creates for a localnet port on breth0 (OpenFlow names ports with at most
// 15 characters: the flows use its number).
func (n *Node) patchPort(ctx context.Context, localnetPort string) (string, error) {
	name, patch := "patch-"+localnetPort+"-to-br-int", ""
	err := waitFor(ctx, 30*time.Second, "patch port "+name, nil, func() error {
		out, err := n.Vsctl("--if-exists", "get", "Interface", name, "ofport")
		if err == nil && (out == "" || out == "-1" || out == "[]") {
			err = errors.New("no patch port yet")
		}
		patch = out
		return err
	})
	return patch, err
}

// HoldBridgeMACOn makes breth0's MAC table hold breth0's own MAC on the
// patch port of a gateway router's localnet port (a static entry), as
// NORMAL learns it there once that router has answered ARP for the node's
// IP; the returned func removes the entry. Only geneveFlows then keep the
// node's Geneve traffic going to its host.
func (n *Node) HoldBridgeMACOn(ctx context.Context, localnetPort string) (func() error, error) {
	if _, err := n.patchPort(ctx, localnetPort); err != nil {
		return nil, err
	}
	mac, err := n.BridgeMAC()
	if err != nil {
		return nil, err
	}
	ctl := filepath.Join(n.dir, "ovs-vswitchd.ctl")
	if _, err := netns.Run("", n.env(), "ovs-appctl", "-t", ctl, "fdb/add", "breth0", "patch-"+localnetPort+"-to-br-int", "0", mac); err != nil {
		return nil, err
	}
	return func() error {
		_, err := netns.Run("", n.env(), "ovs-appctl", "-t", ctl, "fdb/del", "breth0", "0", mac)
		return err
	}, nil
}
