package policy

import (
	"strings"

	"github.com/udnkit/udnkit/ovnk"
)

// Owner types and controllers of upstream's DbObjectIDs
// (pkg/libovsdb/ops/db_object_types.go, pkg/types/const.go).
const (
	ownerCluster           = "Cluster"
	ownerNetpolDefault     = "NetpolDefault"
	ownerNetpolNode        = "NetpolNode"
	ownerUDNIsolation      = "UDNIsolation"
	ownerEgressIP          = ovnk.EgressIPOwnerType
	ownerEgressService     = "EgressService"
	ownerClusterNodeIPs    = "ClusterNodeIPs"
	ownerUDNEnabledService = "UDNEnabledService"

	// DefaultController is upstream's types.DefaultNetworkControllerName:
	// the owner of the zone's isolation rows and of every EgressIP row.
	DefaultController = ovnk.EgressIPController
	// udnEnabledServiceController owns the UDN-enabled services' address
	// set (ovn/controller/udnenabledsvc).
	udnEnabledServiceController = "udn-enabled-svc"
)

// NetworkController is the name of a user-defined network's controller
// upstream (base_network_controller.go: getNetworkControllerName), the
// owner controller of its port groups and ACLs.
func NetworkController(network string) string { return network + "-network-controller" }

// objectIDs is upstream's DbObjectIDs of one row: its owner controller and
// type and its own keys in the type's order, which the primary ID
// (k8s.ovn.org/id) joins with ":".
type objectIDs struct {
	controller, ownerType string
	keys                  [][2]string
}

func ids(controller, ownerType string, keys ...[2]string) objectIDs {
	return objectIDs{controller: controller, ownerType: ownerType, keys: keys}
}

func kv(k, v string) [2]string { return [2]string{k, v} }

// primary is the k8s.ovn.org/id value (DbObjectIDs.getUniqueID).
func (o objectIDs) primary() string {
	parts := []string{o.controller, o.ownerType}
	for _, k := range o.keys {
		parts = append(parts, k[1])
	}
	return strings.Join(parts, ":")
}

// externalIDs are the row's external_ids (DbObjectIDs.GetExternalIDs).
func (o objectIDs) externalIDs() map[string]string {
	m := map[string]string{
		ovnk.ExternalIDOwnerController: o.controller,
		ovnk.ExternalIDOwnerType:       o.ownerType,
		ovnk.ExternalIDObjectID:        o.primary(),
	}
	for _, k := range o.keys {
		m[k[0]] = k[1]
	}
	return m
}

// hashName is the name upstream gives a port group or address set of
// these IDs (libovsdb/util/port_group.go GetPortGroupName,
// address_set.go buildAddressSet): HashForOVN of the primary ID.
func (o objectIDs) hashName() string { return ovnk.HashForOVN(o.primary()) }
