package envtest_test

import (
	"context"
	"testing"

	ipamclaimsv1alpha1 "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest"
)

// TestHarnessInstallsEveryCRD starts the shared control plane and creates one
// object of each kind udnkit installs: UDN, CUDN, NetworkAttachmentDefinition
// and IPAMClaim, all from files in the repository (no network).
func TestHarnessInstallsEveryCRD(t *testing.T) {
	env, err := envtest.Start(envtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	if len(env.CRDs) != 4 {
		t.Errorf("installed %d CRDs, want 4 (UDN, CUDN, NAD, IPAMClaim)", len(env.CRDs))
	}
	c := env.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "harness"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	udn := &udnv1.UserDefinedNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: "u", Namespace: "harness"},
		Spec: udnv1.UserDefinedNetworkSpec{Topology: udnv1.NetworkTopologyLayer2,
			Layer2: &udnv1.Layer2Config{Role: udnv1.NetworkRolePrimary, Subnets: udnv1.DualStackCIDRs{"10.0.0.0/24"}}},
	}
	cudn := &udnv1.ClusterUserDefinedNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Spec: udnv1.ClusterUserDefinedNetworkSpec{Network: udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer3,
			Layer3: &udnv1.Layer3Config{Role: udnv1.NetworkRolePrimary, Subnets: []udnv1.Layer3Subnet{{CIDR: "10.1.0.0/16", HostSubnet: 24}}}}},
	}
	nad := &nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "harness"},
		Spec:       nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"0.4.0","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay"}`},
	}
	claim := &ipamclaimsv1alpha1.IPAMClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim", Namespace: "harness"},
		Spec:       ipamclaimsv1alpha1.IPAMClaimSpec{Network: "blue", Interface: "ovn-udn1"},
	}
	if err := c.Create(ctx, udn); err != nil {
		t.Errorf("UDN: %v", err)
	}
	if err := c.Create(ctx, cudn); err != nil {
		t.Errorf("CUDN: %v", err)
	}
	if err := c.Create(ctx, nad); err != nil {
		t.Errorf("NAD: %v", err)
	}
	if err := c.Create(ctx, claim); err != nil {
		t.Errorf("IPAMClaim: %v", err)
	}
	// The CRDs' rules are live: a broken object is refused.
	bad := udn.DeepCopy()
	bad.Name, bad.ResourceVersion = "bad", ""
	bad.Spec.Layer2.Subnets = udnv1.DualStackCIDRs{"10.0.0.0/24", "10.0.1.0/24"}
	if err := c.Create(ctx, bad); err == nil {
		t.Error("a UDN with two IPv4 subnets was accepted")
	}
}
