// Package services builds the load balancers of the Services of a primary
// user-defined network's namespaces, as upstream's per-network services
// controller writes them (go-controller/pkg/ovn/controller/services:
// lb_config.go buildServiceLBConfigs and buildClusterLBs, loadbalancer.go
// buildLB, utils.go getExternalIDsForLoadBalancer): one cluster-wide load
// balancer per Service and protocol, "<prefix>Service_<ns>/<name>_<PROTO>_cluster",
// whose vips map each ClusterIP (and ExternalIP and LoadBalancer ingress IP)
// and port to the Service's endpoints on the network, read from the
// EndpointSlices upstream's mirror controller writes for the network, and
// which the network's cluster-wide load balancer group holds.
//
// The groups themselves, and their attachment to the network's switches
// and gateway routers, are the network's topology's (package topology);
// this piece references the cluster-wide group by name.
//
// Per node (buildPerNodeLBs: NodePort vips, externalTrafficPolicy and
// internalTrafficPolicy Local, host-network endpoints) the piece writes the
// zone's nodes' load balancers and references the node's switch and
// gateway router by name, which hold them in their load_balancer column.
//
// A Service's part of the piece (ServiceLoadBalancers, owner
// ServiceOwner: rows.Owner.Only by k8s.ovn.org/owner) holds the same rows
// for that Service alone, so a controller applies one Service's change
// without building or planning the others'; the whole piece (LoadBalancers)
// and its parts write byte-identical rows.
//
// Invariants: only mirrored slices labelled with the Service's name and
// annotated with this network feed its load balancers (a slice for another
// network never does); headless and ExternalName Services have none;
// templates are never used (upstream turns them off on user-defined
// networks).
package services
