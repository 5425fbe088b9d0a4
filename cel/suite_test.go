package cel_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udnkit/udnkit/cel"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testenv"
)

// The CEL suite runs every case twice, through a real kube-apiserver with
// udnkit's CRDs installed and through the offline evaluator (package cel), and
// fails when the two disagree. Under -short it starts no apiserver and runs
// every case through the offline evaluator alone.

const testNamespace = "cel-suite"

var (
	env     *envtest.Environment
	offline *cel.Validator
	ctx     = context.Background()
	tally   struct{ cases, accepted, rejected, apiserverCalls, offlineCalls int }
)

func TestCEL(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "CEL rules: apiserver and offline evaluator")
}

var _ = BeforeSuite(func() {
	var err error
	offline, err = cel.NewDefault()
	Expect(err).NotTo(HaveOccurred())
	if testenv.Skipping() {
		return // the offline half only
	}
	env, err = envtest.Start(envtest.Options{})
	Expect(err).NotTo(HaveOccurred())
	Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}})).To(Succeed())
})

var _ = AfterSuite(func() {
	GinkgoWriter.Printf("CEL suite: %d cases (%d accepted, %d rejected); %d objects sent to the apiserver, %d to the offline evaluator\n",
		tally.cases, tally.accepted, tally.rejected, tally.apiserverCalls, tally.offlineCalls)
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
