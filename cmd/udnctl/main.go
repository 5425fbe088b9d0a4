// Command udnctl works with UserDefinedNetwork and ClusterUserDefinedNetwork
// manifests without a cluster.
//
//	udnctl validate -f FILE [--old OLDFILE]
//	udnctl render -f FILE [--namespaces a,b]
//	udnctl plan -f FILE [--nodes N] [--service NS/NAME=CLUSTERIP[,CLUSTERIP] ...]
//
// validate judges every object in FILE exactly as a kube-apiserver with
// udnkit's CRDs would (schema, CEL rules, strict unknown-field checks), then
// runs the admission webhook's checks that need no cluster (overlap with the
// cluster-internal ranges given by the same flags as the manager's). With
// --old, each object is judged as an update of the object of the same kind,
// namespace and name in OLDFILE, so transition rules (immutability,
// append-only Layer3 subnets) apply. Each violation is printed as
// "field: message"; the exit code is 1 when any object is rejected and 2 when
// the input cannot be read.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/cel"
	"github.com/udnkit/udnkit/ovnk"
	networkwebhook "github.com/udnkit/udnkit/webhooks/network"
)

const usage = `udnctl validates k8s.ovn.org manifests offline.

Usage:
  udnctl validate -f FILE [--old OLDFILE] [--cluster-subnets=...] [--service-cidrs=...] ...
  udnctl render -f FILE [--namespaces a,b] [--preconfigured-udn-addresses-enable]
  udnctl plan -f FILE [--nodes N] [--service NS/NAME=CLUSTERIP[,CLUSTERIP] ...]

Commands:
  validate   judge every object of FILE as the apiserver would, plus the
             admission webhook's checks that need no cluster; with --old, as
             updates of the objects of the same kind, namespace and name
  render     print the NetworkAttachmentDefinitions the reconcilers would write
  plan       print the OVN Northbound rows the dataplane would program on N nodes,
             with routes to the UDN-enabled services given by --service
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	switch args[0] {
	case "validate":
		return validate(ctx, args[1:], stdout, stderr)
	case "render":
		return render(ctx, args[1:], stdout, stderr)
	case "plan":
		return plan(ctx, args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "udnctl: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

func validate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "manifest to validate (YAML or JSON, several documents allowed; - for stdin)")
	oldFile := fs.String("old", "", "the objects as they are stored now; FILE is then judged as their update")
	ranges := ovnk.DefaultClusterConfig()
	ranges.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *file == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "udnctl validate: -f FILE is required (and nothing else)")
		return 2
	}
	objs, err := readObjects(*file)
	if err != nil {
		fmt.Fprintf(stderr, "udnctl validate: %v\n", err)
		return 2
	}
	if len(objs) == 0 {
		fmt.Fprintf(stderr, "udnctl validate: %s holds no objects\n", *file)
		return 2
	}
	olds := map[string]*unstructured.Unstructured{}
	if *oldFile != "" {
		oldObjs, err := readObjects(*oldFile)
		if err != nil {
			fmt.Fprintf(stderr, "udnctl validate: --old: %v\n", err)
			return 2
		}
		for _, o := range oldObjs {
			olds[identity(o)] = o
		}
	}
	v, err := cel.NewDefault()
	if err != nil {
		fmt.Fprintf(stderr, "udnctl validate: loading the CRDs: %v\n", err)
		return 2
	}

	rejected, judged := 0, 0
	for _, obj := range objs {
		if !v.Knows(obj) {
			fmt.Fprintf(stderr, "%s: skipped (udnctl judges only %v)\n", identity(obj), v.Kinds())
			continue
		}
		judged++
		var old *unstructured.Unstructured
		if *oldFile != "" {
			if old = olds[identity(obj)]; old == nil {
				fmt.Fprintf(stderr, "udnctl validate: %s is not in %s; judging it as a create\n", identity(obj), *oldFile)
			}
		}
		res, err := v.Validate(ctx, obj, old)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", identity(obj), err)
			rejected++
			continue
		}
		violations := res.Violations()
		// The webhook's checks that need no cluster: overlap with the
		// cluster-internal ranges (the flags) and the Layer3 rules.
		static, warnings := staticChecks(obj, old, ranges)
		for _, e := range static {
			// The webhook repeats the CRD's Layer3 rules (for apiservers
			// without CEL's network libraries); report each problem once.
			if line := e.Field + ": " + e.ErrorBody(); !slices.Contains(violations, line) {
				violations = append(violations, line)
			}
		}
		for _, w := range warnings {
			fmt.Fprintf(stderr, "%s: warning: %s\n", identity(obj), w)
		}
		if len(violations) == 0 {
			fmt.Fprintf(stderr, "%s: valid\n", identity(obj))
			continue
		}
		rejected++
		fmt.Fprintf(stderr, "%s: rejected\n", identity(obj))
		for _, line := range violations {
			fmt.Fprintln(stdout, line)
		}
	}
	if judged == 0 {
		fmt.Fprintf(stderr, "udnctl validate: %s holds no object udnctl can judge\n", *file)
		return 2
	}
	if rejected > 0 {
		return 1
	}
	return 0
}

func readObjects(file string) ([]*unstructured.Unstructured, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, err
	}
	objs, err := cel.DecodeObjects(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return objs, nil
}

// staticChecks runs the admission webhook's cluster-independent checks on a
// UDN or CUDN (not on other kinds, and not on objects that do not decode).
func staticChecks(obj, old *unstructured.Unstructured, cfg ovnk.ClusterConfig) (field.ErrorList, []string) {
	spec, path, ok := networkSpec(obj)
	if !ok {
		return nil, nil
	}
	var oldSpec *udnv1.NetworkSpec
	if old != nil {
		if s, _, ok := networkSpec(old); ok {
			oldSpec = &s
		}
	}
	// Offline, also what the reconciler reports after admission: transit
	// subnets it will move.
	return networkwebhook.ValidateNetworkSpec(path, oldSpec, spec, cfg), append(networkwebhook.NetworkWarnings(path, spec, cfg), networkwebhook.TransitNotes(path, spec, cfg)...)
}

func networkSpec(u *unstructured.Unstructured) (udnv1.NetworkSpec, *field.Path, bool) {
	switch u.GetKind() {
	case "UserDefinedNetwork":
		var udn udnv1.UserDefinedNetwork
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &udn) != nil {
			return udnv1.NetworkSpec{}, nil, false
		}
		return udn.Spec.Network(), field.NewPath("spec"), true
	case "ClusterUserDefinedNetwork":
		var cudn udnv1.ClusterUserDefinedNetwork
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cudn) != nil {
			return udnv1.NetworkSpec{}, nil, false
		}
		return cudn.Spec.Network, field.NewPath("spec", "network"), true
	}
	return udnv1.NetworkSpec{}, nil, false
}

// identity names an object as kubectl does, with its namespace when it has one.
func identity(o *unstructured.Unstructured) string {
	name := o.GetKind() + "/" + o.GetName()
	if ns := o.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return name
}
