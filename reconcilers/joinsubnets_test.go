package reconcilers_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/reconcilers/internal/rtest"
)

// A network whose subnets overlap its join subnets (here the default,
// --udn-join-subnets: admission would refuse it, the suite installs no
// policies) gets no NAD and NetworkCreated=False with upstream's words, as
// upstream's UDN controller reports a NAD it cannot render.
func TestNetworkOverlappingItsJoinSubnetGetsNoNAD(t *testing.T) {
	rtest.Require(t)
	g := NewWithT(t)
	sel := map[string]string{"join-overlap": "yes"}
	ns := newNamespace(t, "join-overlap", sel)
	u := testobj.MakeUDN(ns, "l2").Spec(testobj.Layer2(udnv1.NetworkRolePrimary, "100.65.0.0/24")).Obj()
	cu := testobj.MakeCUDN("join-overlap-l3").SelectLabels(sel).Spec(udnv1.NetworkSpec{Topology: udnv1.NetworkTopologyLayer3, Layer3: &udnv1.Layer3Config{
		Role: udnv1.NetworkRoleSecondary, Subnets: []udnv1.Layer3Subnet{{CIDR: "100.65.0.0/16", HostSubnet: 24}}}}).Obj()
	for _, obj := range []client.Object{u, cu} {
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	}
	expectCondition(t, u, metav1.ConditionFalse, udnv1.ReasonSyncError,
		`invalid subnet configuration: pod or join subnet overlaps with already configured internal subnets: user defined join subnet "100.65.0.0/16" overlaps user defined subnet "100.65.0.0/24"`)
	expectCondition(t, cu, metav1.ConditionFalse, udnv1.ReasonSyncError,
		`invalid subnet configuration: pod or join subnet overlaps with already configured internal subnets: user defined join subnet "100.65.0.0/16" overlaps user defined subnet "100.65.0.0/16"`)
	for _, name := range []string{"l2", "join-overlap-l3"} {
		g.Consistently(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &nadv1.NetworkAttachmentDefinition{}))
		}).WithTimeout(time.Second).WithPolling(interval).Should(BeTrue(), "NAD %s/%s", ns, name)
	}
	for _, obj := range []client.Object{u, cu} {
		g.Expect(k8s.Delete(ctx, obj)).To(Succeed())
		expectGone(t, obj)
	}
}
