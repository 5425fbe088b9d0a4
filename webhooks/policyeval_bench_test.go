package webhooks_test

import (
	"context"
	"encoding/json"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	admissioncel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/netconf"
)

// compiledPolicy is one ValidatingAdmissionPolicy compiled as the
// apiserver's validating plugin compiles it (validating.compilePolicy).
func compiledPolicy(tb testing.TB, policy *admissionregistrationv1.ValidatingAdmissionPolicy) validating.Validator {
	tb.Helper()
	opt := admissioncel.OptionalVariableDeclarations{HasParams: policy.Spec.ParamKind != nil, HasAuthorizer: true}
	msgOpt := admissioncel.OptionalVariableDeclarations{HasParams: policy.Spec.ParamKind != nil}
	compiler, err := admissioncel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		tb.Fatal(err)
	}
	vars := make([]admissioncel.NamedExpressionAccessor, len(policy.Spec.Variables))
	for i, v := range policy.Spec.Variables {
		vars[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	compiler.CompileAndStoreVariables(vars, opt, environment.StoredExpressions)
	var matcher matchconditions.Matcher
	if mc := policy.Spec.MatchConditions; len(mc) > 0 {
		acc := make([]admissioncel.ExpressionAccessor, len(mc))
		for i := range mc {
			acc[i] = (*matchconditions.MatchCondition)(&mc[i])
		}
		matcher = matchconditions.NewMatcher(compiler.CompileCondition(acc, opt, environment.StoredExpressions), policy.Spec.FailurePolicy, "policy", "validate", policy.Name)
	}
	validations := make([]admissioncel.ExpressionAccessor, len(policy.Spec.Validations))
	messages := make([]admissioncel.ExpressionAccessor, len(policy.Spec.Validations))
	for i, v := range policy.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	return validating.NewValidator(compiler.CompileCondition(validations, opt, environment.StoredExpressions), matcher,
		compiler.CompileCondition(nil, opt, environment.StoredExpressions),
		compiler.CompileCondition(messages, msgOpt, environment.StoredExpressions), policy.Spec.FailurePolicy, nil)
}

// BenchmarkPolicyEvaluation evaluates, in process with the apiserver's own
// validator, each of udnkit's ValidatingAdmissionPolicies that matches a
// UserDefinedNetwork create, on a Secondary and a Primary Layer2 UDN that
// every policy admits: the CPU each policy costs the apiserver per create
// (per param object, for those with several), without the apiserver's
// other work (BenchmarkCreateUDN measures the whole).
func BenchmarkPolicyEvaluation(b *testing.B) {
	objs, err := envtest.PolicyObjects(envtest.AnnotationWriters{Users: []string{"admin"}}, "udnkit")
	if err != nil {
		b.Fatal(err)
	}
	// One param of each kind, as the apiserver's informers hand them over:
	// the manager's ConfigMap; for the policies that evaluate once per
	// network of the namespace, one other (Secondary) UDN and a Secondary
	// CUDN's NAD.
	other := testobj.MakeUDN("bench", "other").Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.101.0.0/16")).Obj()
	other.SetGroupVersionKind(udnv1.GroupVersion.WithKind(udnv1.KindUserDefinedNetwork))
	cu := testobj.MakeCUDN("bench-secondary").SelectLabels(nil).Spec(testobj.Layer2(udnv1.NetworkRoleSecondary, "10.102.0.0/16")).Obj()
	nad, err := netconf.NewNAD(netconf.NADSource{Kind: udnv1.KindClusterUserDefinedNetwork, Meta: cu.ObjectMeta, Spec: cu.Spec.Network},
		"bench", testConfig(), nil, ovnk.NetworkIDs{})
	if err != nil {
		b.Fatal(err)
	}
	paramsOf := map[string]runtime.Object{
		"ConfigMap":                   &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "udnkit"}, Data: testConfig().AdmissionParams()},
		"UserDefinedNetwork":          asUnstructured(b, other),
		"NetworkAttachmentDefinition": asUnstructured(b, nad),
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench", Labels: map[string]string{ovnk.LabelPrimaryUserDefinedNetwork: ""}}}
	gvr := schema.GroupVersionResource{Group: "k8s.ovn.org", Version: "v1", Resource: "userdefinednetworks"}
	for _, role := range []udnv1.NetworkRole{udnv1.NetworkRoleSecondary, udnv1.NetworkRolePrimary} {
		u := testobj.MakeUDN("bench", "n").Spec(testobj.Layer2(role, "10.100.0.0/16")).Obj()
		u.SetGroupVersionKind(udnv1.GroupVersion.WithKind(udnv1.KindUserDefinedNetwork))
		obj := asUnstructured(b, u)
		// A request's attributes, made anew for each evaluation as the
		// apiserver does (VersionedObject caches its CEL value).
		attr := func() *admission.VersionedAttributes {
			return &admission.VersionedAttributes{
				Attributes: admission.NewAttributesRecord(obj, nil, obj.GroupVersionKind(), "bench", "n", gvr, "", admission.Create,
					&metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "admin"}),
				VersionedKind: obj.GroupVersionKind(), VersionedObject: admission.NewLazyObject(obj),
			}
		}
		for _, o := range objs {
			if o.GetKind() != "ValidatingAdmissionPolicy" {
				continue
			}
			var policy admissionregistrationv1.ValidatingAdmissionPolicy
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &policy); err != nil {
				b.Fatal(err)
			}
			if !matchesUDNCreate(&policy) {
				continue
			}
			v := compiledPolicy(b, &policy)
			var p runtime.Object
			if policy.Spec.ParamKind != nil {
				p = paramsOf[policy.Spec.ParamKind.Kind]
				if p == nil {
					b.Fatalf("%s: no param of kind %s", policy.Name, policy.Spec.ParamKind.Kind)
				}
			}
			b.Run(string(role)+"/"+policy.Name, func(b *testing.B) {
				for b.Loop() {
					r := v.Validate(context.Background(), gvr, attr(), p, ns, celconfig.RuntimeCELCostBudget, nil)
					for _, d := range r.Decisions {
						if d.Action != validating.ActionAdmit {
							b.Fatalf("%s: %+v", policy.Name, d)
						}
					}
				}
			})
		}
	}
}

func asUnstructured(tb testing.TB, obj runtime.Object) *unstructured.Unstructured {
	tb.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		tb.Fatal(err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(raw); err != nil {
		tb.Fatal(err)
	}
	return out
}

func matchesUDNCreate(p *admissionregistrationv1.ValidatingAdmissionPolicy) bool {
	if p.Spec.MatchConstraints == nil {
		return false
	}
	for _, r := range p.Spec.MatchConstraints.ResourceRules {
		for _, res := range r.Resources {
			for _, op := range r.Operations {
				if res == "userdefinednetworks" && (op == "CREATE" || op == "*") {
					return true
				}
			}
		}
	}
	return false
}
