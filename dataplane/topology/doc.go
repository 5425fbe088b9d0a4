// Package topology builds the desired Northbound rows of udnkit's networks:
// pure functions from plain inputs (a network, its nodes, pods or VMs) to a
// rows.Desired, one per piece a design document names. Nothing here talks
// to a database; package dataplane applies what these functions return.
//
// One file per piece:
//
//   - layer2.go: the OKEP-5094 Layer2 topology of one network for one zone
//     (Layer2Topology), its inputs, validation and the order of its steps;
//   - transit_router.go, transit_switch.go: the transit router with its
//     trtos-/trtor- ports and routes, and the layer2 switch with its
//     stotr- and remote ports;
//   - gateway_router.go: a local node's gateway router, its rtotr- port and
//     route back, and the node's source routes and node-IP reroutes;
//   - management_port.go, snat.go: the management port's addresses and its
//     SNAT to the masquerade IPs;
//   - policies.go: the subnet-pair and allow-mark policies (Layer2 and
//     Layer3);
//   - upgrade.go: the temporary upgrade pair while nodes still run the old
//     topology, and which old rows are adopted (Layer2Legacy);
//   - services.go: routes of UDN-enabled default-network services;
//   - layer3.go: the OKEP-5377 Layer3 subnet policies;
//   - isolate.go: which nodes a network's rows can hold, and why not.
//
// Two pieces that follow where pods and VMs run have packages of their own
// beside this one: multivtep (the OKEP-5535 multi-VTEP ports and routes)
// and migration (the KubeVirt live-migration routes, policies and DHCP).
// What all builders share is in base below them: the topology and piece
// names of rows.Owner, the zone's control plane protection (DefaultCOPP),
// a Layer3 cluster router, and the address and route helpers.
//
// The builders import only base, rows, nbdb and ovnk (layers_test.go
// enforces it); every name shared with OVN-Kubernetes comes from ovnk. Invalid input
// yields an error naming the field, and nothing is built then.
package topology
