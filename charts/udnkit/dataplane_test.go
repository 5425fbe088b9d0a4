package udnkitchart_test

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/udnkit/udnkit/cmd/udnkit/app"
)

// daemonSetValues are OVN-Kubernetes' interconnect layout: a zone per node,
// its databases on the node's /var/run/ovn sockets.
var daemonSetValues = map[string]any{
	"dataplane": map[string]any{"mode": "daemonset"},
	"ovn":       map[string]any{"socketHostPath": "/var/run/ovn"},
}

func container(t *testing.T, o *unstructured.Unstructured) map[string]any {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("%s %s has %d containers", o.GetKind(), o.GetName(), len(containers))
	}
	return containers[0].(map[string]any)
}

// dataplane.mode=daemonset: the Deployment keeps the cluster-scoped
// components and no OVN settings; a DaemonSet runs only the dataplane with
// --zone from the downward API on the node's OVN sockets (hostPath), under
// its own ServiceAccount with only the dataplane's generated rules, with pods
// that the webhook Service and the PodDisruptionBudget do not select; the
// manager accepts its arguments.
func TestRenderDataplaneDaemonSet(t *testing.T) {
	objs, err := render(t, daemonSetValues)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(managerArgs(t, objs), " ")
	if !strings.Contains(args, "--controllers=admission,nad,nodes,ipam ") || strings.Contains(args, "--ovn-") || strings.Contains(args, "--zone") {
		t.Errorf("Deployment args: %s", args)
	}
	if got := readinessPath(t, objs); got != "/readyz" {
		t.Errorf("Deployment readiness path %q: no dataplane runs there", got)
	}
	if vols, _, _ := unstructured.NestedSlice(podSpec(t, objs), "volumes"); len(vols) != 1 {
		t.Errorf("the Deployment mounts %d volumes, want only the webhook certificate: %v", len(vols), vols)
	}

	ds := find(objs, "DaemonSet", "udnkit-dataplane")
	if ds == nil {
		t.Fatalf("no DaemonSet rendered: %v", kinds(objs))
	}
	c := container(t, ds)
	dsArgs, _, _ := unstructured.NestedStringSlice(c, "args")
	for _, want := range []string{"--controllers=dataplane", "--zone=$(NODE_NAME)", "--leader-elect=false",
		"--ovn-nb-address=unix:/var/run/ovn/ovnnb_db.sock", "--ovn-sb-address=unix:/var/run/ovn/ovnsb_db.sock", "--ovn-connect-timeout=5m",
		// The cluster's facts the dataplane reads: the management SNAT's
		// masquerade IPs, the multi-VTEP transit subnets, the services.
		"--masquerade-subnets=169.254.0.0/17,fd69::/112", "--transit-subnets=100.88.0.0/16,fd97::/64",
		"--udn-allowed-default-services=default/kubernetes,kube-system/kube-dns"} {
		if !slices.Contains(dsArgs, want) {
			t.Errorf("DaemonSet args lack %s: %v", want, dsArgs)
		}
	}
	env, _, _ := unstructured.NestedSlice(c, "env")
	if len(env) != 1 {
		t.Fatalf("DaemonSet env = %v", env)
	}
	if name, _, _ := unstructured.NestedString(env[0].(map[string]any), "name"); name != "NODE_NAME" {
		t.Errorf("env name %q", name)
	}
	if path, _, _ := unstructured.NestedString(env[0].(map[string]any), "valueFrom", "fieldRef", "fieldPath"); path != "spec.nodeName" {
		t.Errorf("NODE_NAME comes from %q, want the downward API's spec.nodeName", path)
	}
	mounts, _, _ := unstructured.NestedSlice(c, "volumeMounts")
	vols, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "volumes")
	if len(mounts) != 1 || len(vols) != 1 {
		t.Fatalf("DaemonSet mounts %v volumes %v, want the OVN sockets only", mounts, vols)
	}
	if p, _, _ := unstructured.NestedString(vols[0].(map[string]any), "hostPath", "path"); p != "/var/run/ovn" {
		t.Errorf("hostPath = %q", p)
	}
	if p, _, _ := unstructured.NestedString(mounts[0].(map[string]any), "mountPath"); p != "/var/run/ovn" {
		t.Errorf("mountPath = %q", p)
	}

	// Its own identity and only the dataplane's rules.
	sa, _, _ := unstructured.NestedString(ds.Object, "spec", "template", "spec", "serviceAccountName")
	if sa != "udnkit-dataplane" || find(objs, "ServiceAccount", "udnkit-dataplane") == nil {
		t.Errorf("DaemonSet ServiceAccount %q (rendered: %v)", sa, kinds(objs))
	}
	binding := find(objs, "ClusterRoleBinding", "udnkit-dataplane")
	if subj, _, _ := unstructured.NestedSlice(binding.Object, "subjects"); len(subj) != 1 || subj[0].(map[string]any)["name"] != "udnkit-dataplane" {
		t.Errorf("binding subjects %v", subj)
	}
	rules, _, _ := unstructured.NestedSlice(find(objs, "ClusterRole", "udnkit-dataplane").Object, "rules")
	var granted []string
	for _, r := range rules {
		rm := r.(map[string]any)
		for _, res := range toStrings(rm["resources"]) {
			granted = append(granted, res+":"+strings.Join(toStrings(rm["verbs"]), ","))
		}
	}
	slices.Sort(granted)
	// UDNs and CUDNs are read to verify each NAD's owner (ovnk/nadtrust);
	// their status takes the DataplaneProgrammed condition when
	// OVN-Kubernetes programs the network. Services: the UDN-enabled ones'
	// ClusterIPs are routed; with their mirrored EndpointSlices they make
	// the load balancers. NetworkPolicies, MultiNetworkPolicies and
	// namespaces (their labels and acl-logging) make the policy rows.
	want := []string{"clusteruserdefinednetworks/status:patch", "clusteruserdefinednetworks:get,list,watch", "endpointslices:get,list,watch", "events:create,patch",
		"multi-networkpolicies:get,list,watch", "namespaces:get,list,watch", "network-attachment-definitions:get,list,watch", "networkpolicies:get,list,watch",
		"nodes:get,list,patch,watch", "pods:get,list,watch", "services:get,list,watch", "subjectaccessreviews:create",
		"tokenreviews:create", "userdefinednetworks/status:patch", "userdefinednetworks:get,list,watch"}
	if !slices.Equal(granted, want) {
		t.Errorf("dataplane rules = %v, want %v", granted, want)
	}

	// Its pods are not the manager's: the webhook Service and the PDB skip them.
	podLabels, _, _ := unstructured.NestedStringMap(ds.Object, "spec", "template", "metadata", "labels")
	for _, o := range []*unstructured.Unstructured{find(objs, "Service", "-webhook"), find(objs, "PodDisruptionBudget", "udnkit")} {
		if o == nil {
			t.Fatalf("webhook Service or PDB not rendered: %v", kinds(objs))
		}
		sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector")
		if len(sel) == 0 {
			sel, _, _ = unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels")
		}
		matches := len(sel) > 0
		for k, v := range sel {
			matches = matches && podLabels[k] == v
		}
		if matches {
			t.Errorf("%s %s selects the dataplane pods (%v)", o.GetKind(), o.GetName(), sel)
		}
	}

	// The manager accepts the DaemonSet's arguments (with NODE_NAME expanded).
	opts := app.NewOptions()
	fs := flag.NewFlagSet("udnkit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts.BindFlags(fs)
	expanded := slices.Clone(dsArgs)
	for i, a := range expanded {
		expanded[i] = strings.ReplaceAll(a, "$(NODE_NAME)", "node-a")
	}
	if err := fs.Parse(expanded); err != nil {
		t.Fatalf("the manager refuses the DaemonSet's arguments: %v", err)
	}
	if sel, err := opts.Selected(); err != nil || len(sel) != 1 || sel[0].Name != "dataplane" {
		t.Errorf("DaemonSet components %v (%v)", sel, err)
	}

	// The default is the centralized Deployment: no DaemonSet.
	if objs, err := render(t, nil); err != nil || find(objs, "DaemonSet", "") != nil {
		t.Errorf("the default renders a DaemonSet (err %v)", err)
	}
	// Without dataplane in controllers there is nothing to run per node.
	if objs, err := render(t, map[string]any{"dataplane": map[string]any{"mode": "daemonset"}, "controllers": []any{"admission"}}); err != nil ||
		find(objs, "DaemonSet", "") != nil {
		t.Errorf("a DaemonSet without the dataplane component (err %v)", err)
	}
}

// A per-node dataplane on unix: sockets needs the host directory; a mode
// that does not exist is refused by the schema.
func TestRenderDataplaneDaemonSetRejects(t *testing.T) {
	for name, c := range map[string]struct {
		vals map[string]any
		want string
	}{
		"no socket path": {map[string]any{"dataplane": map[string]any{"mode": "daemonset"}},
			"dataplane.mode=daemonset with unix: OVN addresses needs ovn.socketHostPath"},
		"unknown mode": {map[string]any{"dataplane": map[string]any{"mode": "sidecar"}}, "/dataplane/mode': value must be one of"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := render(t, c.vals); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
	// Over TCP no host directory is needed.
	objs, err := render(t, map[string]any{"dataplane": map[string]any{"mode": "daemonset"},
		"ovn": map[string]any{"nbAddress": "tcp:127.0.0.1:6641", "sbAddress": "tcp:127.0.0.1:6642"}})
	if err != nil || find(objs, "DaemonSet", "udnkit-dataplane") == nil {
		t.Errorf("daemonset over tcp: err %v", err)
	}
}
