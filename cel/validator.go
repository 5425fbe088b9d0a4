// Package cel validates k8s.ovn.org objects offline, with no cluster, exactly
// as a kube-apiserver that has udnkit's CRDs installed would: it runs the
// apiextensions-apiserver's own custom-resource strategy (structural schema,
// OpenAPI validation, list-type invariants, ObjectMeta rules and the CRD's
// x-kubernetes-validations CEL rules, including transition rules and
// ratcheting) after the same decoding steps (unknown-field detection as with
// strict field validation, pruning, defaulting).
package cel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	udnkitchart "github.com/udnkit/udnkit/charts/udnkit"
)

// strategy is the part of the apiextensions-apiserver custom-resource strategy
// that admission of a create or update runs (customresource.NewStrategy
// returns an unexported type).
type strategy interface {
	PrepareForCreate(ctx context.Context, obj runtime.Object)
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

type version struct {
	structural *structuralschema.Structural
	strategy   strategy
}

type kind struct {
	crd        *apiextensionsv1.CustomResourceDefinition
	namespaced bool
	versions   map[string]*version
}

// Validator validates objects of the kinds whose CRDs it was given.
type Validator struct {
	kinds map[schema.GroupKind]*kind
}

// Result is the verdict on one object.
type Result struct {
	// GroupKind and Name identify the object, for error messages.
	GroupKind schema.GroupKind
	Name      string
	// UnknownFields are paths the schema does not know. The apiserver rejects
	// them under strict field validation (kubectl's default) with a
	// BadRequest, and drops them otherwise.
	UnknownFields []string
	// Errors are what the apiserver would reject the object for (422 Invalid).
	Errors field.ErrorList
}

// OK reports whether the apiserver would accept the object under strict field
// validation.
func (r Result) OK() bool { return len(r.UnknownFields) == 0 && len(r.Errors) == 0 }

// Err returns the error the apiserver would return under strict field
// validation: BadRequest for unknown fields, otherwise Invalid; nil if the
// object is accepted.
func (r Result) Err() error {
	if len(r.UnknownFields) > 0 {
		msgs := make([]string, len(r.UnknownFields))
		for i, p := range r.UnknownFields {
			msgs[i] = fmt.Sprintf("unknown field %q", p)
		}
		return apierrors.NewBadRequest("strict decoding error: " + strings.Join(msgs, ", "))
	}
	if len(r.Errors) > 0 {
		return apierrors.NewInvalid(r.GroupKind, r.Name, r.Errors)
	}
	return nil
}

// Violations returns one "field: message" line per problem.
func (r Result) Violations() []string {
	var out []string
	for _, p := range r.UnknownFields {
		out = append(out, p+": unknown field")
	}
	for _, e := range r.Errors {
		out = append(out, e.Field+": "+e.ErrorBody())
	}
	return out
}

// NewDefault returns a Validator for the CRDs udnkit ships: UserDefinedNetwork,
// ClusterUserDefinedNetwork, and the IPAMClaim, NetworkAttachmentDefinition and
// MultiNetworkPolicy CRDs installed beside them.
func NewDefault() (*Validator, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, dir := range []string{udnkitchart.CRDDir, udnkitchart.ExternalCRDDir} {
		entries, err := fs.ReadDir(udnkitchart.CRDs, dir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			data, err := fs.ReadFile(udnkitchart.CRDs, path.Join(dir, e.Name()))
			if err != nil {
				return nil, err
			}
			more, err := DecodeCRDs(data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
			crds = append(crds, more...)
		}
	}
	return New(crds...)
}

// DecodeCRDs decodes every CustomResourceDefinition of a (multi-document) YAML.
func DecodeCRDs(data []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	objs, err := DecodeObjects(data)
	if err != nil {
		return nil, err
	}
	for _, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
			return nil, err
		}
		out = append(out, crd)
	}
	return out, nil
}

// DecodeObjects decodes every object of a (multi-document) YAML or JSON
// stream, skipping empty documents.
func DecodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj := map[string]any{}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
}

// New returns a Validator for the given CRDs.
func New(crds ...*apiextensionsv1.CustomResourceDefinition) (*Validator, error) {
	v := &Validator{kinds: map[schema.GroupKind]*kind{}}
	for _, crd := range crds {
		k, err := newKind(crd)
		if err != nil {
			return nil, fmt.Errorf("CRD %s: %w", crd.Name, err)
		}
		v.kinds[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = k
	}
	return v, nil
}

func newKind(crd *apiextensionsv1.CustomResourceDefinition) (*kind, error) {
	k := &kind{
		crd:        crd,
		namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		versions:   map[string]*version{},
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served || v.Schema == nil {
			continue
		}
		internal := &apiextensionsinternal.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
			return nil, err
		}
		s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if err != nil {
			return nil, fmt.Errorf("version %s is not structural: %w", v.Name, err)
		}
		s = s.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(s); err != nil {
			return nil, err
		}
		schemaValidator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
		if err != nil {
			return nil, err
		}
		var status *apiextensionsinternal.CustomResourceSubresourceStatus
		var statusValidator apiservervalidation.SchemaValidator
		if v.Subresources != nil && v.Subresources.Status != nil {
			status = &apiextensionsinternal.CustomResourceSubresourceStatus{}
			if st, ok := internal.OpenAPIV3Schema.Properties["status"]; ok {
				if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&st); err != nil {
					return nil, err
				}
			}
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		k.versions[v.Name] = &version{
			structural: s,
			strategy: customresource.NewStrategy(runtime.NewScheme(), k.namespaced, gvk,
				schemaValidator, statusValidator, s, status, nil, v.SelectableFields),
		}
	}
	return k, nil
}

// Knows reports whether the Validator has the CRD of the object's kind.
func (v *Validator) Knows(obj *unstructured.Unstructured) bool {
	_, ok := v.kinds[obj.GroupVersionKind().GroupKind()]
	return ok
}

// Kinds lists the kinds the Validator knows, sorted.
func (v *Validator) Kinds() []schema.GroupKind {
	var out []schema.GroupKind
	for gk := range v.kinds {
		out = append(out, gk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Validate returns the apiserver's verdict on creating obj, or on updating old
// to obj when old is not nil. Neither argument is modified. The error is for
// objects the Validator cannot judge (unknown kind or version, malformed
// metadata); a rejected object is a Result with errors, not an error.
func (v *Validator) Validate(ctx context.Context, obj, old *unstructured.Unstructured) (Result, error) {
	gvk := obj.GroupVersionKind()
	res := Result{GroupKind: gvk.GroupKind(), Name: obj.GetName()}
	k, ok := v.kinds[gvk.GroupKind()]
	if !ok {
		return res, fmt.Errorf("unknown kind %s: udnctl validates %v", gvk.GroupKind(), v.Kinds())
	}
	ver, ok := k.versions[gvk.Version]
	if !ok {
		return res, fmt.Errorf("%s: version %q is not served", gvk.GroupKind(), gvk.Version)
	}
	if old != nil && old.GroupVersionKind() != gvk {
		return res, fmt.Errorf("old object is a %s, new object a %s", old.GroupVersionKind(), gvk)
	}

	newObj, unknown, err := k.decode(obj, ver, true)
	if err != nil {
		return res, err
	}
	res.UnknownFields = unknown
	if old == nil {
		ver.strategy.PrepareForCreate(ctx, newObj)
		res.Errors = ver.strategy.Validate(ctx, newObj)
		return res, nil
	}
	oldObj, _, err := k.decode(old, ver, false)
	if err != nil {
		return res, fmt.Errorf("old object: %w", err)
	}
	// Files judged offline have no server-set metadata; give them what a
	// stored object and a kubectl update of it would carry.
	if oldObj.GetGeneration() == 0 {
		oldObj.SetGeneration(1)
	}
	if oldObj.GetResourceVersion() == "" {
		oldObj.SetResourceVersion("1")
	}
	if newObj.GetResourceVersion() == "" {
		newObj.SetResourceVersion(oldObj.GetResourceVersion())
	}
	ver.strategy.PrepareForUpdate(ctx, newObj, oldObj)
	res.Errors = ver.strategy.ValidateUpdate(ctx, newObj, oldObj)
	return res, nil
}

// decode does what the apiserver's decoder does to a custom resource before
// admission: ObjectMeta coercion, pruning of unknown fields (reported),
// removal of non-nullable nulls, and defaulting.
func (k *kind) decode(in *unstructured.Unstructured, ver *version, reportUnknown bool) (*unstructured.Unstructured, []string, error) {
	// Decode as the apiserver does: JSON numbers become int64 where integral
	// (YAML and Go callers may hand us float64 or int).
	data, err := json.Marshal(in.Object)
	if err != nil {
		return nil, nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if err := utiljson.Unmarshal(data, &u.Object); err != nil {
		return nil, nil, err
	}
	apiVersion, kindName := u.GetAPIVersion(), u.GetKind()
	meta, found, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{
		ReturnUnknownFieldPaths: reportUnknown,
	})
	if err != nil {
		return nil, nil, err
	}
	unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, ver.structural, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: reportUnknown})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, ver.structural)
	if ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, ver.structural, false,
		schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: reportUnknown}); ferr != nil {
		return nil, nil, ferr
	} else {
		unknown = append(unknown, paths...)
	}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kindName)
	if found {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, meta); err != nil {
			return nil, nil, err
		}
	}
	structuraldefaulting.Default(u.Object, ver.structural)
	if k.namespaced && u.GetNamespace() == "" {
		// kubectl and the apiserver put an unqualified object in "default".
		u.SetNamespace("default")
	}
	if !k.namespaced {
		u.SetNamespace("")
	}
	sort.Strings(unknown)
	return u, unknown, nil
}
