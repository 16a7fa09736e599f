package endpoints

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/hacp/hacp/pkg/apiserver/openapi"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/yaml"
)

// Field management is kube-apiserver's: one managedfields.FieldManager per kind and
// subresource, whose TypeConverter comes from the kind's OpenAPI v3 models (with
// x-kubernetes-list-type, list-map-keys and map-type driving the merges), and whose reset
// fields are those upstream's strategies list (GetResetFields).

// builtinFieldManagers caches the field managers of built-in kinds, whose schemas never
// change: by kind and subresource.
var builtinFieldManagers sync.Map // fieldManagerKey -> *fieldManagerResult

type fieldManagerKey struct {
	gvk         schema.GroupVersionKind
	subresource string
}

type fieldManagerResult struct {
	once sync.Once
	fm   *managedfields.FieldManager
	err  error
}

// fieldManager returns the scope's field manager, built on first use; nil (and the error)
// when the kind has no models to build it from.
func (s *scope) fieldManager() (*managedfields.FieldManager, error) {
	s.fmOnce.Do(func() {
		if _, custom := s.storage.New().(*unstructured.Unstructured); custom {
			s.fm, s.fmErr = s.newFieldManager()
			return
		}
		v, _ := builtinFieldManagers.LoadOrStore(fieldManagerKey{s.kind, s.subresource}, &fieldManagerResult{})
		r := v.(*fieldManagerResult)
		r.once.Do(func() { r.fm, r.err = s.newFieldManager() })
		s.fm, s.fmErr = r.fm, r.err
	})
	return s.fm, s.fmErr
}

// definition is the kind the scope's writes are of: its store's, or the parent's for a
// subresource of the same kind (status); nil for scale and kinds without one.
func (s *scope) definition() *registry.Kind {
	if d, ok := s.storage.(interface{ Definition() *registry.Kind }); ok {
		return d.Definition()
	} else if d, ok := s.parent.(interface{ Definition() *registry.Kind }); ok && s.subresource != "scale" {
		return d.Definition()
	}
	return nil
}

func (s *scope) newFieldManager() (*managedfields.FieldManager, error) {
	def := s.definition()
	reset := resetFields(s.names.GroupResource(), s.subresource, s.kind.GroupVersion(), def)
	if _, custom := s.storage.New().(*unstructured.Unstructured); custom {
		// Every served version's schema: managedFields entries recorded at another version
		// are converted to it and kept (a version without a schema would drop them).
		versions := []*registry.Kind{def}
		if def != nil && len(def.Versions) > 0 {
			versions = def.Versions
		}
		models := map[string]*spec.Schema{}
		preserveUnknown := false
		for _, v := range versions {
			var structural map[string]any // the definition's schema; nil: any content
			gvk := s.kind
			if v != nil {
				structural, gvk = v.OpenAPISchema, v.GVK()
			}
			preserveUnknown = preserveUnknown || structural == nil
			m, err := openapi.Models(&unstructured.Unstructured{}, gvk, structural)
			if err != nil {
				return nil, err
			}
			maps.Copy(models, m)
		}
		tc, err := managedfields.NewTypeConverter(models, preserveUnknown)
		if err != nil {
			return nil, fmt.Errorf("field manager of %s: %w", s.kind, err)
		}
		conv := unstructuredConverter{}
		if def != nil {
			conv.convertTo = def.ConvertTo
		}
		return managedfields.NewDefaultCRDFieldManager(tc, conv, objectDefaulter{def}, unstructuredCreater{}, s.kind, s.kind.GroupVersion(), s.subresource, reset)
	}
	obj, err := registry.Scheme.New(s.kind)
	if err != nil {
		return nil, fmt.Errorf("field manager of %s: %w", s.kind, err)
	}
	models, err := openapi.Models(obj, s.kind, nil)
	if err != nil {
		return nil, err
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		return nil, fmt.Errorf("field manager of %s: %w", s.kind, err)
	}
	if s.subresource != "status" && s.subresource != "" {
		def = nil // the defaults of the main kind are not the subresource's (Scale)
	}
	return managedfields.NewDefaultFieldManager(tc, registry.Scheme, objectDefaulter{def}, registry.Scheme, s.kind, s.kind.GroupVersion(), s.subresource, reset)
}

// resetFields are the fields a write through subresource of gr may not own, as upstream's
// strategies list them (GetResetFields in k8s.io/kubernetes/pkg/registry/*/strategy.go
// and apiextensions-apiserver's): the main resource does not own status, a status write
// does not own spec (nor, for some kinds, metadata).
func resetFields(gr schema.GroupResource, subresource string, gv schema.GroupVersion, def *registry.Kind) map[fieldpath.APIVersion]fieldpath.Filter {
	if def == nil {
		def = &registry.Kind{New: func() runtime.Object { return nil }}
	}
	var paths [][]any
	_, custom := def.New().(*unstructured.Unstructured)
	switch subresource {
	case "":
		switch {
		case gr.Resource == "certificatesigningrequests":
			paths = [][]any{{"spec"}, {"status"}}
		case custom && def.Status, !custom && resetsStatus[gr.Resource]:
			paths = [][]any{{"status"}}
		}
	case "status":
		switch {
		case custom:
			paths = [][]any{{"metadata"}, {"spec"}}
		case gr.Resource == "certificatesigningrequests":
			paths = [][]any{{"spec"}, {"status", "conditions"}}
		case gr.Resource == "deployments":
			paths = [][]any{{"spec"}, {"metadata", "labels"}}
		case gr.Resource == "pods":
			paths = [][]any{{"spec"}, {"metadata", "deletionTimestamp"}, {"metadata", "ownerReferences"}}
		case statusResetsMetadata[gr.Resource]:
			paths = [][]any{{"metadata"}, {"spec"}}
		default:
			paths = [][]any{{"spec"}}
		}
	case "approval":
		paths = [][]any{{"spec"}, {"status", "certificate"}}
	case "finalize":
		paths = [][]any{{"status"}}
	}
	if len(paths) == 0 {
		return nil
	}
	set := fieldpath.NewSet()
	for _, p := range paths {
		set.Insert(fieldpath.MakePathOrDie(p...))
	}
	return fieldpath.NewExcludeFilterSetMap(map[fieldpath.APIVersion]*fieldpath.Set{fieldpath.APIVersion(gv.String()): set})
}

// resetsStatus are the kinds whose main resource upstream resets status for.
var resetsStatus = map[string]bool{
	"servicecidrs": true, "ingresses": true, "poddisruptionbudgets": true, "volumeattachments": true,
	"horizontalpodautoscalers": true, "flowschemas": true, "prioritylevelconfigurations": true,
	"daemonsets": true, "statefulsets": true, "deployments": true, "replicasets": true, "jobs": true,
	"cronjobs": true, "nodes": true, "resourcequotas": true, "persistentvolumes": true,
	"persistentvolumeclaims": true, "namespaces": true, "pods": true, "services": true,
	"replicationcontrollers": true, "validatingadmissionpolicies": true, "customresourcedefinitions": true,
}

// statusResetsMetadata are the kinds whose status writes own neither spec nor metadata.
var statusResetsMetadata = map[string]bool{
	"volumeattachments": true, "flowschemas": true, "prioritylevelconfigurations": true,
	"validatingadmissionpolicies": true, "servicecidrs": true, "csinodes": true,
}

// managerOrUserAgent is the manager of a write: fieldManager, or the User-Agent up to its
// first "/" (printable characters, at most 128 bytes), as upstream.
func managerOrUserAgent(manager, userAgent string) string {
	if manager != "" {
		return manager
	}
	m, _, _ := strings.Cut(userAgent, "/")
	var buf bytes.Buffer
	for _, r := range m {
		if !unicode.IsPrint(r) {
			continue
		}
		if buf.Len()+utf8.RuneLen(r) > metav1validation.FieldManagerMaxLength {
			break
		}
		buf.WriteRune(r)
	}
	return buf.String()
}

// objectDefaulter applies a kind's defaults to what an apply merged, as upstream's scheme
// defaulter does. A custom object's maps are copied first, which upstream's converter did
// at this point: structured-merge-diff does not promise that the merged object it hands
// over shares no maps with the live one (no longer copied by unstructuredConverter), and
// pruning, defaulting and the managedFields then written into its metadata change it in
// place.
type objectDefaulter struct{ def *registry.Kind }

func (d objectDefaulter) Default(obj runtime.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.Object = runtime.DeepCopyJSON(u.Object)
	}
	if d.def != nil && d.def.Strategy.Default != nil {
		d.def.Strategy.Default(obj)
	}
}

// unstructuredCreater makes the empty object an apply creates a custom resource from.
type unstructuredCreater struct{}

func (unstructuredCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// unstructuredConverter converts custom resources between the versions of one kind for
// their field managers, as the definition converts them (its webhook, or apiVersion alone).
type unstructuredConverter struct {
	convertTo func(ctx context.Context, obj map[string]any, apiVersion string) (map[string]any, error) // nil: by apiVersion
}

func (unstructuredConverter) Convert(in, out, _ any) error {
	u, ok := in.(*unstructured.Unstructured)
	o, ok2 := out.(*unstructured.Unstructured)
	if !ok || !ok2 {
		return fmt.Errorf("unstructured converter: %T to %T", in, out)
	}
	o.Object = runtime.DeepCopyJSON(u.Object)
	return nil
}

// ConvertToVersion returns in itself when it is already at target's version: the field
// manager converts objects only to read them (its type converter's view of the live and new
// objects), or converts objects it has just made (an apply's result, which it defaults), so
// the copy upstream's converter makes for every call would be made for nothing on every
// create and update.
func (c unstructuredConverter) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unstructured converter: %T", in)
	}
	gvk := u.GroupVersionKind()
	t, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{gvk})
	if !ok || t == gvk {
		return u, nil
	}
	if c.convertTo == nil {
		out := u.DeepCopy()
		out.SetGroupVersionKind(t)
		return out, nil
	}
	m, err := c.convertTo(context.Background(), u.Object, t.GroupVersion().String())
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(m)}
	out.SetGroupVersionKind(t)
	return out, nil
}

func (unstructuredConverter) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// newLive is the empty object a create is tracked (or an apply merged) against.
func (s *scope) newLive() runtime.Object {
	obj := s.storage.New()
	obj.GetObjectKind().SetGroupVersionKind(s.kind)
	return obj
}

// trackUpdate records manager's Update operation in obj's managedFields, given the object
// it replaces (nil: a create), as upstream's handlers do before the store sees obj. obj is
// defaulted first, as upstream's decoder defaults it, so that the writer owns the fields
// defaulting set (kube-apiserver lists them; the diff-upstream harness compares it). A kind
// without a field manager keeps obj as it is.
func (s *scope) trackUpdate(live, obj runtime.Object, manager string) runtime.Object {
	fm, _ := s.fieldManager()
	if fm == nil {
		return obj
	}
	if s.subresource == "" || s.subresource == "status" {
		if def := s.definition(); def != nil && def.Strategy.Default != nil {
			def.Strategy.Default(obj)
		}
	}
	if live == nil {
		live = s.newLive()
	}
	if obj.GetObjectKind().GroupVersionKind().Empty() {
		obj.GetObjectKind().SetGroupVersionKind(s.kind)
	}
	return fm.UpdateNoErrors(live, obj, manager)
}

// statusApplyCreates are the resources whose status an apply creates when the object is
// missing: upstream's status storages refuse to create on update but for
// ValidatingAdmissionPolicies', which passes the apply's forceAllowCreate on.
var statusApplyCreates = map[schema.GroupResource]bool{{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}: true}

// apply serves a server-side apply (PATCH with application/apply-patch+yaml): the body is
// merged into the live object (an empty one when there is none: apply creates) by the
// field manager, which refuses fields other managers own unless force is set.
func (s *scope) apply(w http.ResponseWriter, r *http.Request, ns, name string, patch []byte, opts *metav1.PatchOptions) {
	fm, err := s.fieldManager()
	if fm == nil {
		writeError(w, r, apierrors.NewInternalError(fmt.Errorf("server-side apply is not available for %s: %v", s.kind, err)))
		return
	}
	patchObj := &unstructured.Unstructured{Object: map[string]any{}}
	decode := func(data []byte, v any) error { return yaml.Unmarshal(data, v) }
	if trimmed := bytes.TrimLeft(patch, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
		// JSON, as client-go sends: its own decoder (integers as int64, as YAML's) is
		// cheaper than YAML's parser, and YAML means the same for it.
		decode = func(data []byte, v any) error { return utiljson.Unmarshal(data, v) }
	}
	if err := decode(patch, &patchObj.Object); err != nil {
		writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err)))
		return
	}
	force := opts.Force != nil && *opts.Force
	validation, _ := fieldValidation(r)
	ctx := r.Context()
	if s.subresource == "" || s.subresource == "status" && statusApplyCreates[s.gr()] {
		ctx = registry.WithCreateOnUpdate(ctx)
	}
	uopts := &metav1.UpdateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager, FieldValidation: opts.FieldValidation}
	out, created, err := s.storage.(registry.Updater).Update(ctx, ns, name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		live := cur
		if live == nil {
			live = s.newLive()
		}
		obj, err := fm.Apply(live, patchObj.DeepCopy(), opts.FieldManager, force)
		if err != nil {
			return nil, err
		}
		if validation == "Strict" || validation == "Warn" {
			if err := yaml.UnmarshalStrict(patch, &map[string]any{}); err != nil {
				if validation == "Strict" {
					return nil, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding patch: %v", err))
				}
				addWarning(w, err.Error())
			}
		}
		if err := checkName(obj, name); err != nil {
			return nil, err
		}
		return obj, nil
	}, uopts)
	if err != nil {
		writeError(w, r, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	writeObject(w, r, code, out)
}
