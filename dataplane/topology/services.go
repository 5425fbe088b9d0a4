package topology

import (
	"fmt"
	"net/netip"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/topology/base"
	"github.com/udnkit/udnkit/ovnk"
)

// UDNEnabledService is one default-network service that Primary
// user-defined networks reach (the manager's --udn-allowed-default-services)
// as it exists now.
type UDNEnabledService struct {
	// Key is the service's namespace/name: the value of the route's
	// k8s.ovn.org/udn-enabled-default-service external ID.
	Key string
	// ClusterIPs are the service's spec.clusterIPs, spec.clusterIP first
	// (headless and ExternalName services have none).
	ClusterIPs []netip.Addr
}

// serviceRoutes are the network's routes to its UDN-enabled services, as
// upstream's configureUDNEnabledServiceRoute (ovn/controller/services)
// writes them on a Primary Layer2 network's transit router: the service's
// spec.clusterIP (the first of its ClusterIPs; a dual-stack service's other
// family is not routed, as upstream), a dst-ip route whose next hop is the
// management port's address of its family, marked with the service's key.
// A ClusterIP of a family the network does not have gets no route.
func (net Layer2Network) serviceRoutes() []nbdb.LogicalRouterStaticRoute {
	return serviceRoutesVia(net.Services, net.managementIP)
}

// serviceRoutesVia are the routes of services' ClusterIPs via the
// management address of each one's family (mgmt: invalid for a family the
// network has no management address of): a Layer2 network's on its transit
// router, a Layer3 network's on its cluster router via its local node's
// management port.
func serviceRoutesVia(services []UDNEnabledService, mgmt func(v6 bool) netip.Addr) []nbdb.LogicalRouterStaticRoute {
	var out []nbdb.LogicalRouterStaticRoute
	for _, svc := range services {
		if len(svc.ClusterIPs) == 0 {
			continue
		}
		ip := svc.ClusterIPs[0]
		mgmt := mgmt(ip.Is6())
		if !mgmt.IsValid() {
			continue
		}
		r := base.StaticRoute(ip.String(), mgmt.String(), nbdb.LogicalRouterStaticRoutePolicyDstIP, nil)
		r.ExternalIDs = map[string]string{ovnk.ExternalIDUDNEnabledService: svc.Key}
		out = append(out, r)
	}
	return out
}

// validateServices refuses a service without a key, an invalid ClusterIP
// and a ClusterIP two services share (one route each would collide).
func (net Layer2Network) validateServices() error { return validateServiceList(net.Services) }

// validateServiceList is validateServices of any network's services.
func validateServiceList(services []UDNEnabledService) error {
	owner := map[netip.Addr]string{}
	for i, svc := range services {
		if svc.Key == "" {
			return fmt.Errorf("network.services[%d].key: must be the service's namespace/name", i)
		}
		for j, ip := range svc.ClusterIPs {
			if !ip.IsValid() {
				return fmt.Errorf("network.services[%d].clusterIPs[%d]: not a valid IP (service %s)", i, j, svc.Key)
			}
			if other, dup := owner[ip]; dup {
				return fmt.Errorf("network.services[%d].clusterIPs[%d]: %s is also service %s's", i, j, ip, other)
			}
			owner[ip] = svc.Key
		}
	}
	return nil
}
