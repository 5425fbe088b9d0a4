// Package pods is the dataplane controller of pod and VM ports: for every
// network of udnkit's NADs (Primary and Secondary Layer2 and Layer3, and
// Localnet), the logical switch port of each pod attached to it in this
// zone, built by dataplane/topology/pods from the pod's
// k8s.ovn.org/pod-networks entry, its node's chassis and its VM's live
// migration; a Primary Layer2 network's VM ports' DHCP options (the
// network's MTU, the pod's gateway, the DNS service's ClusterIPs); a
// Localnet network's switch with its localnet port, and a Secondary Layer2
// network's switch.
//
// A request is one NAD and programs its network's ports (every NAD of it:
// a CUDN has one per namespace) as one piece, so a port whose pod is gone,
// finished or no longer attached is removed by the next Apply. A pod's
// event queues the NADs of its namespace: a queue that serves namespaces
// in turn (zone.ControllerOptions) keeps a flood of pods in one namespace
// from holding up another's. Reconciles of one network take turns
// (networks).
//
// A pod whose entry cannot be read keeps the port last built for it
// (lastGood, guarded by mu) and a Warning Event says why; a pod whose node
// has no chassis ID yet waits for the node's update.
package pods
