package controllers

import (
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/ovnk"
)

// The manager starts while the Northbound database is down: Setup does not
// wait for it, the dataplane reports what it waits for, and once the
// database serves, the controllers start and program what the apiserver
// already holds.
func TestDataplaneStartsBeforeOVNAndCatchesUp(t *testing.T) {
	s := newStack(t)
	s.db.NB.Stop()
	started := time.Now()
	rs, err := Setup(s.ctx, s.mgr, s.opts())
	if err != nil {
		t.Fatalf("Setup with the Northbound database down: %v", err)
	}
	if d := time.Since(started); d > 2*time.Second {
		t.Errorf("Setup took %v with the database down: it should not connect", d)
	}
	s.start()
	s.create(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", Annotations: map[string]string{ovnk.AnnotationNodeID: "2"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1"}})
	s.createNAD(&nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "tenant-blue",
			Labels:      map[string]string{ovnk.LabelUserDefinedNetwork: ""},
			Annotations: map[string]string{ovnk.AnnotationNetworkID: "1", ovnk.AnnotationTunnelKeys: "[16711685,16715780]"}},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: l2Config},
	})

	waiting := func() bool {
		err := rs.OVN.Check(nil)
		return err != nil && strings.Contains(err.Error(), "OVN NB database "+s.db.NB.Address()+": not connected")
	}
	for deadline := time.Now().Add(30 * time.Second); !waiting(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the dataplane does not report the missing Northbound database: %v", rs.OVN.Check(nil))
		}
	}
	if rs.OVN.Connected() {
		t.Fatal("connected with the Northbound database down")
	}

	if err := s.db.NB.Restart(s.ctx); err != nil {
		t.Fatal(err)
	}
	s.eventually("the network programmed once the database serves", func() bool {
		return strings.Contains(s.nbctl("show"), "trtor-GR_ns1_tenant.blue_node1")
	})
	if err := rs.OVN.Check(nil); err != nil {
		t.Errorf("connected dataplane reports %v", err)
	}
}
