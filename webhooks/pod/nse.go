package pod

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
	"github.com/udnkit/udnkit/webhooks/admit"
)

// ValidateNetworkSelection checks a default-network NetworkSelectionElement
// of a pod whose namespace's primary network is the Layer2 network l2
// (OKEP-5233): it must reference the default network's stub
// (ovn-kubernetes/default); each requested IP must parse (with or without a
// prefix length), be the only one of its IP family, lie inside one of the
// subnets and outside the infrastructure subnets, and be neither the default
// gateway nor the network or (IPv4) broadcast address; the MAC must be a
// unicast EUI-48 address other than 00:00:00:00:00:00. path is the
// annotation's path. The referenced IPAMClaim's existence needs a client and
// is checked by the webhook.
func ValidateNetworkSelection(path *field.Path, nse *nadv1.NetworkSelectionElement, l2 *udnv1.Layer2Config) field.ErrorList {
	var errs field.ErrorList
	if nse.Name != ovnk.DefaultNetworkName || nse.Namespace != ovnk.DefaultNetworkNamespace {
		errs = append(errs, field.Invalid(path.Child("name"), nse.Namespace+"/"+nse.Name, fmt.Sprintf(
			"must reference %s/%s (name %q, namespace %q): in a namespace whose primary network is Layer2, the default network's stub NetworkAttachmentDefinition carries the requested addresses.",
			ovnk.DefaultNetworkNamespace, ovnk.DefaultNetworkName, ovnk.DefaultNetworkName, ovnk.DefaultNetworkNamespace)))
	}
	seen := map[bool]bool{}
	ipErrsBefore := len(errs)
	for i, raw := range nse.IPRequest {
		p := path.Child("ips").Index(i)
		ip, err := parseRequestedIP(raw)
		if err != nil {
			errs = append(errs, field.Invalid(p, raw, fmt.Sprintf(
				"must be an IP address with or without a prefix length, such as 10.0.0.5 or 10.0.0.5/24: %v.", err)))
			continue
		}
		if seen[ip.Is4()] {
			errs = append(errs, field.Invalid(p, raw, fmt.Sprintf("is a second %s address; at most one IP per IP family may be requested.", family(ip))))
			continue
		}
		seen[ip.Is4()] = true
		if msg := checkRequestedIP(ip, l2); msg != "" {
			errs = append(errs, field.Invalid(p, raw, msg))
		}
	}
	// Checked once every address is valid, so a request that is refused
	// for an address is not refused for its families too.
	if missing := missingFamilies(seen, l2); len(nse.IPRequest) > 0 && len(errs) == ipErrsBefore && missing != "" {
		errs = append(errs, field.Invalid(path.Child("ips"), nse.IPRequest, fmt.Sprintf(
			"must hold one address for each IP family of the network, %s (subnets %v); it has no %s address.",
			networkFamilies(l2), admit.Strings(l2.Subnets), missing)))
	}
	if nse.MacRequest != "" {
		p := path.Child("mac")
		mac, err := net.ParseMAC(nse.MacRequest)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(p, nse.MacRequest, fmt.Sprintf("must be a MAC address such as 02:00:00:00:00:01: %v.", err)))
		case len(mac) != 6:
			errs = append(errs, field.Invalid(p, nse.MacRequest, "must be a 48-bit MAC address such as 02:00:00:00:00:01."))
		case mac[0]&1 == 1:
			errs = append(errs, field.Invalid(p, nse.MacRequest, "must be a unicast MAC address (the lowest bit of the first octet must be 0)."))
		case bytes.Equal(mac, zeroMAC):
			errs = append(errs, field.Invalid(p, nse.MacRequest, "must not be the all-zero MAC address 00:00:00:00:00:00, which no interface can use; request a unicast address such as 02:00:00:00:00:01."))
		}
	}
	return errs
}

var zeroMAC = net.HardwareAddr{0, 0, 0, 0, 0, 0}

// missingFamilies names the IP families of l2's subnets that requested
// (IPv4: true, IPv6: false, as ValidateNetworkSelection's seen) lacks, or "":
// OVN-Kubernetes gives a pod one address per subnet, so a request must
// name one of each.
func missingFamilies(requested map[bool]bool, l2 *udnv1.Layer2Config) string {
	var out []string
	for _, v4 := range []bool{true, false} {
		if hasFamily(l2, v4) && !requested[v4] {
			out = append(out, familyOf(v4))
		}
	}
	return strings.Join(out, " or ")
}

// networkFamilies is "IPv4", "IPv6" or "IPv4 and IPv6" for l2's subnets.
func networkFamilies(l2 *udnv1.Layer2Config) string {
	var out []string
	for _, v4 := range []bool{true, false} {
		if hasFamily(l2, v4) {
			out = append(out, familyOf(v4))
		}
	}
	return strings.Join(out, " and ")
}

func hasFamily(l2 *udnv1.Layer2Config, v4 bool) bool {
	for _, s := range l2.Subnets {
		if p, err := netip.ParsePrefix(string(s)); err == nil && p.Addr().Is4() == v4 {
			return true
		}
	}
	return false
}

func familyOf(v4 bool) string {
	if v4 {
		return "IPv4"
	}
	return "IPv6"
}

// NetworkSelectionWarnings returns what deserves a second look in an
// element that passes ValidateNetworkSelection: a MAC with the 0a:58 prefix
// OVN-Kubernetes derives pod MACs from their IPs with, which may collide
// with a generated address.
func NetworkSelectionWarnings(path *field.Path, nse *nadv1.NetworkSelectionElement) []string {
	mac, err := net.ParseMAC(nse.MacRequest)
	if err != nil || len(mac) != 6 || mac[0] != 0x0a || mac[1] != 0x58 {
		return nil
	}
	return []string{fmt.Sprintf(
		"%s: MAC %s has the 0a:58 prefix OVN-Kubernetes generates pod MACs with; it may collide with the MAC of a pod whose address is allocated automatically.",
		path.Child("mac"), nse.MacRequest)}
}

func parseRequestedIP(s string) (netip.Addr, error) {
	var ip netip.Addr
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return ip, err
		}
		ip = p.Addr()
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return ip, err
		}
		ip = a
	}
	if ip.Zone() != "" {
		return netip.Addr{}, errors.New("zones are not allowed")
	}
	return ip, nil
}

func family(ip netip.Addr) string { return familyOf(ip.Is4()) }

// checkRequestedIP returns why ip cannot be requested on l2, or "".
func checkRequestedIP(ip netip.Addr, l2 *udnv1.Layer2Config) string {
	var subnet netip.Prefix
	for _, s := range l2.Subnets {
		if p, err := netip.ParsePrefix(string(s)); err == nil && p.Contains(ip) {
			subnet = p.Masked()
			break
		}
	}
	if !subnet.IsValid() {
		return fmt.Sprintf("is not inside any of the network's subnets %v.", admit.Strings(l2.Subnets))
	}
	if ip == subnet.Addr() {
		return fmt.Sprintf("is the network address of subnet %s.", subnet)
	}
	if ip.Is4() && subnet.Bits() < 31 && ip == ovnk.LastAddr(subnet) {
		return fmt.Sprintf("is the broadcast address of subnet %s.", subnet)
	}
	// The gateway and management addresses by upstream's rule, the one the
	// address allocator and the dataplane use.
	var infra []netip.Prefix
	for _, s := range l2.InfrastructureSubnets {
		if p, err := netip.ParsePrefix(string(s)); err == nil {
			infra = append(infra, p)
		}
	}
	var gws []netip.Addr
	for _, g := range l2.DefaultGatewayIPs {
		if a, err := netip.ParseAddr(string(g)); err == nil {
			gws = append(gws, a)
		}
	}
	gw, mgmt, err := ovnk.Layer2GatewayAndManagement([]netip.Prefix{subnet}, infra, gws)
	if err == nil && ip == gw[0] {
		return fmt.Sprintf("is the network's default gateway IP %s.", gw[0])
	}
	for _, s := range l2.InfrastructureSubnets {
		if p, err := netip.ParsePrefix(string(s)); err == nil && p.Contains(ip) {
			return fmt.Sprintf("is inside infrastructureSubnets entry %s, reserved for OVN-Kubernetes.", p)
		}
	}
	if err == nil && ip == mgmt[0] {
		return fmt.Sprintf("is the management port address %s.", mgmt[0])
	}
	return ""
}

// MigrateIPAMClaimAnnotation handles the deprecated
// k8s.ovn.org/primary-udn-ipamclaim annotation (OKEP-5233): without a
// v1.multus-cni.io/default-network annotation it returns a copy of
// annotations with the equivalent NetworkSelectionElement added; with one,
// it returns nil (no change: the NetworkSelectionElement wins). Either way
// it returns a deprecation warning; with no old annotation, nothing.
func MigrateIPAMClaimAnnotation(annotations map[string]string) (map[string]string, []string) {
	claim, ok := annotations[ovnk.AnnotationPrimaryUDNIPAMClaim]
	if !ok {
		return nil, nil
	}
	if _, ok := annotations[ovnk.AnnotationDefaultNetwork]; ok {
		return nil, []string{fmt.Sprintf(
			"annotation %s is deprecated and ignored because %s is set; use its ipam-claim-reference field instead.",
			ovnk.AnnotationPrimaryUDNIPAMClaim, ovnk.AnnotationDefaultNetwork)}
	}
	nse := podannotation.EncodeDefaultNetworkSelection(nadv1.NetworkSelectionElement{
		Name: ovnk.DefaultNetworkName, Namespace: ovnk.DefaultNetworkNamespace, IPAMClaimReference: claim})
	out := make(map[string]string, len(annotations)+1)
	for k, v := range annotations {
		out[k] = v
	}
	out[ovnk.AnnotationDefaultNetwork] = nse
	return out, []string{fmt.Sprintf(
		"annotation %s is deprecated; udnkit set the equivalent %s annotation %s, use it instead.",
		ovnk.AnnotationPrimaryUDNIPAMClaim, ovnk.AnnotationDefaultNetwork, nse)}
}
