package cel_test

import (
	"errors"
	"fmt"
	"sort"
	"sync/atomic"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// celCase is one row of the suite: an object to create and, for transition
// rules, the spec it is then updated to.
type celCase struct {
	kind string // UserDefinedNetwork or ClusterUserDefinedNetwork
	spec string // YAML of .spec
	// update, when set, is the spec the created object is updated to; the
	// create must then succeed and the verdict is about the update.
	update string
	// mutate, when set, edits the object (after spec) before it is sent,
	// for what YAML of the spec cannot say (metadata, generated sizes).
	mutate func(map[string]any)
	// want are substrings every error must contain; empty means accepted.
	want []string
	// class is the expected error class (default: Invalid, HTTP 422).
	class func(error) bool
}

var caseCounter atomic.Int64

func udn(spec string) celCase  { return celCase{kind: "UserDefinedNetwork", spec: spec} }
func cudn(spec string) celCase { return celCase{kind: "ClusterUserDefinedNetwork", spec: spec} }

// then makes the case an update of the created object to spec.
func (c celCase) then(spec string) celCase { c.update = spec; return c }

// rejected expects the apiserver to answer 422 Invalid naming every message.
func (c celCase) rejected(messages ...string) celCase {
	c.want = messages
	c.class = apierrors.IsInvalid
	return c
}

// badRequest expects a 400 (strict field validation of unknown fields).
func (c celCase) badRequest(messages ...string) celCase {
	c.want = messages
	c.class = apierrors.IsBadRequest
	return c
}

func (c celCase) accepted() celCase { c.want = nil; c.class = nil; return c }

func (c celCase) with(mutate func(map[string]any)) celCase { c.mutate = mutate; return c }

func (c celCase) object(name, spec string) *unstructured.Unstructured {
	s := map[string]any{}
	Expect(yaml.Unmarshal([]byte(spec), &s)).To(Succeed(), "spec YAML of the case")
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.ovn.org/v1",
		"kind":       c.kind,
		"metadata":   map[string]any{"name": name},
		"spec":       s,
	}}
	if c.kind == "UserDefinedNetwork" {
		u.SetNamespace(testNamespace)
	}
	if c.mutate != nil {
		c.mutate(u.Object)
	}
	return u
}

// verdict is an error reduced to what both paths must agree on.
type verdict struct {
	ok     bool
	status int32
	causes []string
	text   string
}

func verdictOf(err error) verdict {
	if err == nil {
		return verdict{ok: true}
	}
	v := verdict{text: err.Error()}
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		v.status = se.ErrStatus.Code
		if d := se.ErrStatus.Details; d != nil {
			for _, c := range d.Causes {
				v.causes = append(v.causes, fmt.Sprintf("%s|%s|%s", c.Type, c.Field, c.Message))
			}
		}
		sort.Strings(v.causes)
	}
	return v
}

// run executes the case against the offline evaluator and, unless the
// suite runs without an apiserver (-short), against the apiserver too, and
// checks that both give the case's verdict and agree with each other.
func run(c celCase) {
	name := fmt.Sprintf("case-%04d", caseCounter.Add(1))
	tally.cases++
	obj := c.object(name, c.spec)

	var apiErr, offErr error
	if env == nil {
		offErr = runOffline(c, name, obj)
	} else {
		apiErr, offErr = runBoth(c, name, obj)
		api, off := verdictOf(apiErr), verdictOf(offErr)
		Expect(off.ok).To(Equal(api.ok), "apiserver and offline evaluator disagree:\n apiserver: %v\n offline:   %v", apiErr, offErr)
		Expect(off.status).To(Equal(api.status), "status codes differ:\n apiserver: %v\n offline:   %v", apiErr, offErr)
		Expect(off.causes).To(Equal(api.causes), "error causes differ:\n apiserver: %v\n offline:   %v", apiErr, offErr)
	}

	if len(c.want) == 0 {
		tally.accepted++
		Expect(offErr).NotTo(HaveOccurred(), "the object should be accepted offline")
		if env != nil {
			Expect(apiErr).NotTo(HaveOccurred(), "the object should be accepted")
		}
		return
	}
	tally.rejected++
	Expect(offErr).To(HaveOccurred(), "the object should be rejected offline with %q", c.want)
	Expect(c.class(offErr)).To(BeTrue(), "wrong offline error class: %v", offErr)
	for _, w := range c.want {
		Expect(verdictOf(offErr).text).To(ContainSubstring(w))
	}
	if env == nil {
		return
	}
	Expect(apiErr).To(HaveOccurred(), "the object should be rejected with %q", c.want)
	Expect(c.class(apiErr)).To(BeTrue(), "wrong error class: %v", apiErr)
	for _, w := range c.want {
		Expect(verdictOf(apiErr).text).To(ContainSubstring(w))
	}
	if c.update == "" {
		// A rejected create leaves nothing behind.
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		err := env.Client.Get(ctx, key(obj), got)
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a rejected create must not store the object: %v", err)
	}
}

// validateOffline is the offline evaluator's error for creating obj, or for
// updating old to obj.
func validateOffline(obj, old *unstructured.Unstructured) error {
	tally.offlineCalls++
	res, err := offline.Validate(ctx, obj, old)
	Expect(err).NotTo(HaveOccurred())
	return res.Err()
}

// runOffline is the offline evaluator's verdict on the case, with no
// apiserver: an update is judged against the created object with the
// generation the apiserver gives it, and carries that generation, as an
// update of a read object does.
func runOffline(c celCase, name string, obj *unstructured.Unstructured) error {
	if c.update == "" {
		return validateOffline(obj, nil)
	}
	Expect(validateOffline(obj, nil)).NotTo(HaveOccurred(), "offline create before update")
	stored := obj.DeepCopy()
	stored.SetGeneration(1)
	updated := stored.DeepCopy()
	updated.Object["spec"] = c.object(name, c.update).Object["spec"]
	return validateOffline(updated, stored)
}

// runBoth sends the case to the apiserver and to the offline evaluator; an
// update is judged offline against the object the apiserver stored.
func runBoth(c celCase, name string, obj *unstructured.Unstructured) (apiErr, offErr error) {
	if c.update == "" {
		tally.apiserverCalls++
		apiErr = env.Client.Create(ctx, obj.DeepCopy())
		return apiErr, validateOffline(obj, nil)
	}
	// The created object must be valid on both paths.
	tally.apiserverCalls++
	Expect(env.Client.Create(ctx, obj.DeepCopy())).To(Succeed(), "create before update")
	Expect(validateOffline(obj, nil)).NotTo(HaveOccurred(), "offline create before update")

	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(obj.GroupVersionKind())
	Expect(env.Client.Get(ctx, key(obj), stored)).To(Succeed())
	updated := stored.DeepCopy()
	next := c.object(name, c.update)
	updated.Object["spec"] = next.Object["spec"]

	tally.apiserverCalls++
	apiErr = env.Client.Update(ctx, updated.DeepCopy())
	offErr = validateOffline(updated, stored)

	if apiErr != nil {
		// A rejected update changes nothing.
		after := &unstructured.Unstructured{}
		after.SetGroupVersionKind(obj.GroupVersionKind())
		Expect(env.Client.Get(ctx, key(obj), after)).To(Succeed())
		Expect(after.Object["spec"]).To(Equal(stored.Object["spec"]), "a rejected update must not change the stored spec")
		Expect(after.GetResourceVersion()).To(Equal(stored.GetResourceVersion()))
	}
	return apiErr, offErr
}

func key(u *unstructured.Unstructured) types.NamespacedName {
	return types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
}

// subnetsL3 returns n disjoint Layer3 subnets as YAML flow entries, IPv4 /24s
// with hostSubnet 26.
func subnetsL3(n int) []any {
	out := make([]any, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, map[string]any{"cidr": fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256), "hostSubnet": int64(26)})
	}
	return out
}

func setPath(obj map[string]any, value any, path ...string) {
	Expect(unstructured.SetNestedField(obj, value, path...)).To(Succeed())
}
