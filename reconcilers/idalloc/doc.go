// Package idalloc holds the reconcilers' integer and subnet allocators: an
// IDAllocator hands out integers from a range to named owners (network IDs,
// tunnel keys, node IDs), and the host-subnet allocator carves each Layer3
// network's cluster subnets into per-node subnets. Neither keeps anything
// beyond the process: callers rebuild them from the cluster's annotations
// with Reserve before they allocate.
package idalloc
