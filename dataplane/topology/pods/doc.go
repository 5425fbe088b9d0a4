// Package pods builds the logical switch ports of pods and KubeVirt VMs on
// user-defined networks as OVN-Kubernetes' pod controller writes them
// (pkg/ovn/base_network_controller_pods.go addLogicalPortToNetwork,
// base_network_controller_user_defined.go addLogicalPortToNetworkForNAD,
// zone_interconnect AddTransitPortConfig), a Localnet network's switch with
// its localnet port (localnet_user_defined_network_controller.go) and a
// Secondary Layer2 network's switch (initializeLogicalSwitch).
//
// Pure: plain inputs (a pod's k8s.ovn.org/pod-networks entry, its node's
// chassis) to a rows.Desired. Invariants: a port is on the switch its
// topology gives it (Layer2: the network's one switch; Layer3: its node's
// switch; Localnet: the Localnet switch), which another piece owns and this
// one only references (rows.Switch.Ref); a zone holds ports of its own
// nodes' pods only, except on Layer2, where every pod of the network has a
// port and those of other zones' nodes are type remote (but for a
// multi-VTEP node's pods, whose remote ports the multi-VTEP piece writes).
package pods
