package nbtest

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Only tests import the package: no package's own (non-test) files do.
func TestOnlyTestsImportIt(t *testing.T) {
	const self = "github.com/udnkit/udnkit/dataplane/internal/nbtest"
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`,
		"github.com/udnkit/udnkit/...").Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, out)
	}
	found := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		found++
		if slices.Contains(fields[1:], self) {
			t.Errorf("%s imports %s, which only tests may import", fields[0], self)
		}
	}
	if found < 10 {
		t.Fatalf("go list found only %d packages", found)
	}
}
