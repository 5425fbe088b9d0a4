// Package datapath runs a real-datapath cluster on one machine for packet
// tests and `make run`: per node a network namespace with its own
// Open_vSwitch database, ovs-vswitchd on the userspace datapath
// (datapath_type=netdev, no kernel module) and ovn-controller bound to the
// node's own OVN zone (a Northbound, a Southbound and ovn-northd per node, as
// OVN-Kubernetes interconnect runs them). The nodes' bridges breth0 hold
// their underlay addresses (192.0.2.0/24) and meet on a Linux bridge in an
// underlay namespace, which carries Geneve between the nodes. For Localnet
// networks the nodes can also have a physical network (AddPhysicalNetwork):
// a bridge brlocalnet per node, mapped in ovn-bridge-mappings and trunked
// to a top-of-rack Open vSwitch in the underlay namespace, whose access
// ports give hosts outside the cluster their VLAN. Each zone's
// Southbound knows the other nodes' chassis as OVN-Kubernetes' zone
// interconnect registers them (other_config:is-remote=true with their geneve
// encap). Pods are network namespaces holding an OVS internal port whose
// external_ids:iface-id is the pod's logical switch port name; the interface
// is configured only from the pod's k8s.ovn.org/pod-networks entry.
//
// Everything a cluster creates is named with the prefix "udnk-" and a run ID:
// its directory /tmp/udnk-<run>/ (every process's sockets, logs and pid
// files), its namespaces udnk-<run>-<name>. A running cluster holds a lock on
// its directory; Start sweeps what unlocked runs left behind (a crash, a
// Ctrl-C): their processes, namespaces and directories. Every process is
// started with a parent-death signal, so a killed test leaves no daemons.
//
// The OVN and Open vSwitch programs are those `make ovn` provisions
// (ovsdbserver.Dir); node.SetupTools puts them first on PATH, and every
// other part of the package runs them by name.
//
// Its sub-packages hold the machinery: netns runs programs and opens
// sockets in network namespaces (pings, probes, TCP streams), node runs
// one node's daemons; this package joins nodes into a cluster, adds pods
// and VMs, writes OVN-Kubernetes' rows and sweeps what crashed runs left.
package datapath
