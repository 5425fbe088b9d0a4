package dataplane

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// module is the import path every package of the repository starts with.
const module = "github.com/udnkit/udnkit/"

// stages are the parts of udnkit that data flows through (apis → webhooks →
// reconcilers → API server → dataplane); none imports another, directly or
// through a package it imports.
var stages = []string{"webhooks", "reconcilers", "dataplane"}

// dataplaneLayers ranks the dataplane's packages: a package imports only
// packages of a lower rank (never one of its own rank), so the engine is
// layered downward: models, per-table knowledge, desired rows, connection
// and index, planner, transactions, engine, what the builders share, the
// builders (topology and its per-piece sub-packages), the front, what the
// controllers share, the controllers that use the front, and their wiring.
// A package of the dataplane missing here fails the test until it is given
// its place.
var dataplaneLayers = [][]string{
	{"dataplane/nbdb", "dataplane/sbdb", "dataplane/ovsdbserver"},
	{"dataplane/internal/schema"},
	{"dataplane/rows"},
	{"dataplane/internal/ovsconn", "dataplane/internal/index", "dataplane/internal/plan/refs"},
	{"dataplane/internal/plan"},
	{"dataplane/internal/txn"},
	{"dataplane/internal/engine"},
	{"dataplane/internal/nbtest"}, // test support: only tests import it
	{"dataplane/topology/base"},
	{"dataplane/topology", "dataplane/topology/multivtep", "dataplane/topology/migration", "dataplane/topology/pods",
		"dataplane/topology/policy", "dataplane/topology/services"},
	{"dataplane/topology/networkpolicy"}, // names its rows with topology/policy's IDs
	{"dataplane"},
	{"dataplane/controllers/zone", "dataplane/controllers/internal/ctrltest"},
	{"dataplane/controllers/layer2", "dataplane/controllers/layer3", "dataplane/controllers/multivtep", "dataplane/controllers/migration",
		"dataplane/controllers/pods", "dataplane/controllers/policy", "dataplane/controllers/services", "dataplane/controllers/networkpolicy",
		"dataplane/controllers/internal/benchzone"}, // benchmark support: only the controllers' benchmarks import it
	{"dataplane/controllers", "dataplane/trace"},
}

// onlyImports narrows what some packages import of the module, whatever the
// ranks allow: the builders are pure functions of rows, the models and the
// contract, so they never reach the schema, the connections or the engine.
// (The controllers share a rank, so none imports another; so do the
// builders.)
var onlyImports = map[string][]string{
	"dataplane/topology":               {"dataplane/topology/base", "dataplane/rows", "dataplane/nbdb", "ovnk"},
	"dataplane/topology/base":          {"dataplane/rows", "dataplane/nbdb", "ovnk"},
	"dataplane/topology/multivtep":     {"dataplane/topology/base", "dataplane/rows", "dataplane/nbdb", "ovnk"},
	"dataplane/topology/migration":     {"dataplane/topology/base", "dataplane/rows", "dataplane/nbdb", "ovnk"},
	"dataplane/topology/pods":          {"dataplane/topology/base", "dataplane/rows", "dataplane/nbdb", "ovnk"},
	"dataplane/topology/policy":        {"dataplane/topology/base", "dataplane/rows", "dataplane/nbdb", "ovnk"},
	"dataplane/topology/services":      {"dataplane/topology/base", "dataplane/rows", "dataplane/nbdb", "ovnk"},
	"dataplane/topology/networkpolicy": {"dataplane/topology/base", "dataplane/topology/policy", "dataplane/rows", "dataplane/nbdb", "ovnk"},
}

// pkg is one package of the module with its own packages it imports
// (Imports) and depends on at all (Deps), without the module prefix.
type pkg struct {
	path          string
	imports, deps []string
}

// The packages import one another only downward: stages never import each
// other, and the dataplane's layers only lower layers.
func TestImportsGoOneWay(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for _, p := range checkImports(pkgs) {
		t.Error(p)
	}
}

// The check rejects a stage importing another (also through a package in
// between), a layer importing a higher or its own rank (a controller
// importing another), a dataplane package with no rank, and the builders
// importing more than rows, the models and ovnk.
func TestImportCheckRejects(t *testing.T) {
	pkgs := []pkg{
		{path: "reconcilers", deps: []string{"ovnk", "dataplane/rows"}},
		{path: "dataplane/internal/schema", imports: []string{"dataplane/internal/plan"}},
		{path: "dataplane/internal/index", imports: []string{"dataplane/internal/ovsconn"}},
		{path: "dataplane/extra"},
		{path: "dataplane/internal/plan", imports: []string{"dataplane/internal/schema", "dataplane/rows"}},
		{path: "dataplane/controllers/layer2", imports: []string{"dataplane/controllers/zone", "dataplane/controllers/layer3"}},
		{path: "dataplane/topology", imports: []string{"dataplane/rows", "ovnk", "dataplane/internal/schema"}},
		{path: "dataplane/topology/multivtep", imports: []string{"dataplane/topology/base", "dataplane/topology"}},
	}
	got := checkImports(pkgs)
	want := []string{
		"reconcilers depends on dataplane/rows: a stage never imports another stage",
		"dataplane/internal/schema (rank 1) imports dataplane/internal/plan (rank 4): the dataplane's layers import only lower ones",
		"dataplane/internal/index (rank 3) imports dataplane/internal/ovsconn (rank 3): the dataplane's layers import only lower ones",
		"dataplane/extra: a dataplane package without a layer (dataplaneLayers in layers_test.go)",
		"dataplane/controllers/layer2 (rank 13) imports dataplane/controllers/layer3 (rank 13): the dataplane's layers import only lower ones",
		"dataplane/topology imports dataplane/internal/schema: it imports only dataplane/topology/base, dataplane/rows, dataplane/nbdb, ovnk of the module",
		"dataplane/topology/multivtep (rank 9) imports dataplane/topology (rank 9): the dataplane's layers import only lower ones",
		"dataplane/topology/multivtep imports dataplane/topology: it imports only dataplane/topology/base, dataplane/rows, dataplane/nbdb, ovnk of the module",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// checkImports returns one line per import against the rules.
func checkImports(pkgs []pkg) []string {
	rank := map[string]int{}
	for i, layer := range dataplaneLayers {
		for _, p := range layer {
			rank[p] = i
		}
	}
	var problems []string
	for _, p := range pkgs {
		if s := stageOf(p.path); s != "" {
			for _, d := range p.deps {
				if o := stageOf(d); o != "" && o != s {
					problems = append(problems, fmt.Sprintf("%s depends on %s: a stage never imports another stage", p.path, d))
				}
			}
		}
		if stageOf(p.path) != "dataplane" {
			continue
		}
		r, ok := rank[p.path]
		if !ok {
			problems = append(problems, p.path+": a dataplane package without a layer (dataplaneLayers in layers_test.go)")
			continue
		}
		for _, imp := range p.imports {
			if ri, ok := rank[imp]; ok && ri >= r {
				problems = append(problems, fmt.Sprintf("%s (rank %d) imports %s (rank %d): the dataplane's layers import only lower ones", p.path, r, imp, ri))
			}
			if only, ok := onlyImports[p.path]; ok && !slices.Contains(only, imp) {
				problems = append(problems, fmt.Sprintf("%s imports %s: it imports only %s of the module", p.path, imp, strings.Join(only, ", ")))
			}
		}
	}
	return problems
}

// stageOf is the stage a package belongs to ("" none).
func stageOf(path string) string {
	for _, s := range stages {
		if path == s || strings.HasPrefix(path, s+"/") {
			return s
		}
	}
	return ""
}

// listPackages lists the module's packages with `go list`.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goTool, "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "./...")
	cmd.Dir = filepath.Dir(filepath.Dir(file))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	own := func(list string) []string {
		var out []string
		for _, p := range strings.Fields(list) {
			if rest, ok := strings.CutPrefix(p, module); ok {
				out = append(out, rest)
			}
		}
		return out
	}
	var pkgs []pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "|", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[0], module) {
			continue
		}
		pkgs = append(pkgs, pkg{path: strings.TrimPrefix(parts[0], module), imports: own(parts[1]), deps: own(parts[2])})
	}
	return pkgs
}
