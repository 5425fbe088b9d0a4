package cel

import (
	"context"
	"fmt"
	"sort"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apiextensionscel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Budgets the apiserver enforces when a CRD is created (apiextensions
// validation) and when a rule runs.
const (
	// RuleCostLimit is the largest estimated cost of one rule, multiplied by
	// how many times it can run in one object (the product of the MaxItems
	// above it).
	RuleCostLimit = crdvalidation.StaticEstimatedCostLimit
	// CRDCostLimit is the largest estimated total of all rules of a CRD.
	CRDCostLimit = crdvalidation.StaticEstimatedCRDCostLimit
	// PerCallLimit is the runtime cost limit of one rule evaluation.
	PerCallLimit = celconfig.PerCallLimit
)

// RuleCost is the estimated worst-case cost of one x-kubernetes-validations
// rule at the schema's list maxima.
type RuleCost struct {
	CRD     string
	Version string
	Path    string
	Message string
	// PerCall is the cost of one evaluation; Cardinality how many evaluations
	// one object can cause; Total their product, compared with RuleCostLimit.
	PerCall, Cardinality, Total uint64
}

// ValidateCRD runs the apiserver's own CRD validation (schema structure, CEL
// compilation, estimated cost per rule and per CRD) and returns its errors.
func ValidateCRD(ctx context.Context, in *apiextensionsv1.CustomResourceDefinition) (field.ErrorList, error) {
	crd := in.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	internal := &apiextensionsinternal.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
		return nil, err
	}
	return crdvalidation.ValidateCustomResourceDefinition(ctx, internal), nil
}

// EstimateCosts compiles every rule of every served version of the CRD the way
// the apiserver does and returns their estimated costs, most expensive first.
func EstimateCosts(crd *apiextensionsv1.CustomResourceDefinition) ([]RuleCost, error) {
	envSet := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	var out []RuleCost
	for _, v := range crd.Spec.Versions {
		if v.Schema == nil {
			continue
		}
		internal := &apiextensionsinternal.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
			return nil, err
		}
		s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if err != nil {
			return nil, err
		}
		var walk func(s *structuralschema.Structural, path string, cardinality uint64, root bool) error
		walk = func(s *structuralschema.Structural, path string, cardinality uint64, root bool) error {
			if len(s.XValidations) > 0 {
				results, err := apiextensionscel.Compile(s, model.SchemaDeclType(s, root), PerCallLimit, envSet, apiextensionscel.NewExpressionsEnvLoader())
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				for i, r := range results {
					if r.Error != nil {
						return fmt.Errorf("%s: rule %q: %s", path, s.XValidations[i].Rule, r.Error.Detail)
					}
					out = append(out, RuleCost{
						CRD: crd.Name, Version: v.Name, Path: path, Message: s.XValidations[i].Message,
						PerCall: r.MaxCost, Cardinality: cardinality, Total: mulSaturating(r.MaxCost, cardinality),
					})
				}
			}
			for name, prop := range s.Properties {
				if err := walk(&prop, path+"."+name, cardinality, false); err != nil {
					return err
				}
			}
			if s.Items != nil {
				n := uint64(1 << 62) // unbounded
				if s.ValueValidation != nil && s.ValueValidation.MaxItems != nil {
					n = uint64(*s.ValueValidation.MaxItems)
				}
				if err := walk(s.Items, path+"[*]", mulSaturating(cardinality, n), false); err != nil {
					return err
				}
			}
			return nil
		}
		if err := walk(s, "", 1, true); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Total > out[j].Total })
	return out, nil
}

func mulSaturating(a, b uint64) uint64 {
	if a != 0 && b > ^uint64(0)/a {
		return ^uint64(0)
	}
	return a * b
}
