package nodes_test

import (
	"os"
	"testing"

	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/reconcilers/internal/rtest"
)

// The suite runs one real control plane and a manager with every
// reconciler: the node controller reads the networks the UDN and CUDN
// controllers publish.
var suite *rtest.Suite

const timeout = testenv.EventuallyTimeout

func TestMain(m *testing.M) {
	os.Exit(rtest.Main(m, "nodes", func(s *rtest.Suite) { suite = s }))
}
