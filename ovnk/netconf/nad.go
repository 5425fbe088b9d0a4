package netconf

import (
	"fmt"
	"maps"
	"net/netip"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
)

// NADSource is the UDN or CUDN a NAD is rendered from.
type NADSource struct {
	// Kind is "UserDefinedNetwork" or "ClusterUserDefinedNetwork".
	Kind string
	// Meta is the object's metadata: name, namespace (UDN), UID, labels,
	// annotations.
	Meta metav1.ObjectMeta
	Spec udnv1.NetworkSpec
	// Uplinks is a CUDN's spec.uplinks.
	Uplinks []string
}

// NetworkName is the source's OVN network name.
func (s NADSource) NetworkName() string {
	if s.Kind == udnv1.KindUserDefinedNetwork {
		return ovnk.UDNNetworkName(s.Meta.Namespace, s.Meta.Name)
	}
	return ovnk.CUDNNetworkName(s.Meta.Name)
}

// NewNAD renders the NetworkAttachmentDefinition of src in namespace, as
// upstream's RenderNetAttachDefManifest and nad_controller together write it:
// the NetConf as spec.config; the source's labels plus
// k8s.ovn.org/user-defined-network; the source's annotations except those
// under k8s.ovn.org/, plus k8s.ovn.org/network-name, network-id and
// tunnel-keys; the source as controller owner; the protection finalizer.
// transit are the network's transit subnets (TransitSubnetsFor).
func NewNAD(src NADSource, namespace string, cluster ovnk.ClusterConfig, transit []netip.Prefix, ids ovnk.NetworkIDs) (*nadv1.NetworkAttachmentDefinition, error) {
	if namespace == "" {
		return nil, fmt.Errorf("the NAD's namespace is required")
	}
	conf, err := Render(src.Spec, Options{
		NetworkName: src.NetworkName(), NADName: namespace + "/" + src.Meta.Name,
		DefaultJoinSubnets: cluster.UDNJoinSubnets, ClusterMTU: cluster.MTU,
		TransitSubnets: transit, PredefinedAddresses: cluster.PreconfiguredUDNAddresses,
	}.withUplink(src.Uplinks))
	if err != nil {
		return nil, err
	}
	labels := map[string]string{}
	maps.Copy(labels, src.Meta.Labels)
	labels[ovnk.LabelUserDefinedNetwork] = ""
	annotations := map[string]string{}
	for k, v := range src.Meta.Annotations {
		if !strings.HasPrefix(k, "k8s.ovn.org/") {
			annotations[k] = v
		}
	}
	annotations[ovnk.AnnotationNetworkName] = src.NetworkName()
	ids.Encode(annotations)
	controller, blockOwnerDeletion := true, true
	return &nadv1.NetworkAttachmentDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: "k8s.cni.cncf.io/v1", Kind: "NetworkAttachmentDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name: src.Meta.Name, Namespace: namespace, Labels: labels, Annotations: annotations,
			Finalizers: []string{ovnk.FinalizerUserDefinedNetworkProtection},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: udnv1.GroupVersion.String(), Kind: src.Kind, Name: src.Meta.Name, UID: src.Meta.UID,
				Controller: &controller, BlockOwnerDeletion: &blockOwnerDeletion,
			}},
		},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: conf},
	}, nil
}

// TransitSubnetsFor returns the transit subnets of a Primary Layer2 network
// (OKEP-5094 option 4), nil for every other network: per IP family of its
// subnets, in their order, the cluster's transit subnet or the first one of
// the same size that avoids the network's subnets and join subnets.
func TransitSubnetsFor(spec udnv1.NetworkSpec, cluster ovnk.ClusterConfig) ([]netip.Prefix, error) {
	if spec.Topology != udnv1.NetworkTopologyLayer2 || !spec.IsPrimary() {
		return nil, nil
	}
	subnets, err := ovnk.ParsePrefixes(strings.Join(spec.SubnetCIDRs(), ","))
	if err != nil {
		return nil, fmt.Errorf("spec subnets: %w", err)
	}
	for i := range subnets {
		subnets[i] = subnets[i].Masked()
	}
	avoid := append([]netip.Prefix{}, subnets...)
	join, err := ovnk.ParsePrefixes(strings.Join(spec.JoinSubnetCIDRs(), ","))
	if err != nil {
		return nil, fmt.Errorf("spec joinSubnets: %w", err)
	}
	if len(join) == 0 {
		join = cluster.UDNJoinSubnets
	}
	for _, p := range join {
		avoid = append(avoid, p.Masked())
	}
	return ovnk.TransitSubnets(cluster.TransitSubnets, subnets, avoid)
}

func (o Options) withUplink(uplinks []string) Options {
	if len(uplinks) > 0 {
		o.Uplink = uplinks[0]
	}
	return o
}
