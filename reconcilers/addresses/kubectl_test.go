package addresses_test

import (
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// kubectl runs the envtest kubectl against the suite's apiserver.
func kubectl(stdin string, args ...string) string {
	kubeconfig := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(env.WriteKubeconfig(kubeconfig)).To(Succeed())
	cmd := exec.Command(filepath.Join(env.AssetsDir, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "kubectl %v: %s", args, out)
	return string(out)
}

// podYAML is a pod in kubectl-demo with a default-network NSE carrying extra.
func podYAML(name, node, extra string) string {
	return `---
apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
  namespace: kubectl-demo
  annotations:
    v1.multus-cni.io/default-network: '{"name": "default", "namespace": "ovn-kubernetes", ` + extra + `}'
spec:
  nodeName: ` + node + `
  containers: [{name: c, image: registry.k8s.io/pause:3.10}]
`
}

var _ = Describe("a pod created with kubectl", func() {
	It("gets its k8s.ovn.org/pod-networks annotation, or a Warning event kubectl shows", func() {
		kubectl(`
apiVersion: v1
kind: Namespace
metadata:
  name: kubectl-demo
  labels:
    k8s.ovn.org/primary-user-defined-network: ""
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata:
  name: blue
  namespace: kubectl-demo
spec:
  topology: Layer2
  layer2:
    role: Primary
    subnets: ["10.80.0.0/24"]
    reservedSubnets: ["10.80.0.200/29"]
`+podYAML("imported", "node-a", `"ips": ["10.80.0.201"], "mac": "02:00:00:00:80:01"`), "apply", "-f", "-")
		Eventually(func() string {
			return kubectl("", "get", "pod", "-n", "kubectl-demo", "imported", "-o", `jsonpath={.metadata.annotations.k8s\.ovn\.org/pod-networks}`)
		}).Should(And(ContainSubstring(`"kubectl-demo/blue"`), ContainSubstring(`"ip_addresses":["10.80.0.201/24"]`),
			ContainSubstring(`"mac_address":"02:00:00:00:80:01"`), ContainSubstring(`"role":"primary"`)))

		kubectl(podYAML("impostor", "node-b", `"ips": ["10.80.0.201"]`), "apply", "-f", "-")
		Eventually(func() string {
			return kubectl("", "get", "events", "-n", "kubectl-demo", "--field-selector", "involvedObject.name=impostor")
		}).Should(And(ContainSubstring("Warning"), ContainSubstring("IPAddressConflict"),
			ContainSubstring("IP address 10.80.0.201 is already in use by pod/kubectl-demo/imported")))
		Expect(kubectl("", "get", "pod", "-n", "kubectl-demo", "impostor", "-o", "jsonpath={.metadata.annotations}")).NotTo(ContainSubstring("pod-networks"))
	})
})
