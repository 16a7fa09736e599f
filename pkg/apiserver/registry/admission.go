package registry

import (
	"context"
	"fmt"
	"reflect"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/jsonvalue"
	"github.com/hacp/hacp/pkg/apiserver/request"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// objectSubresources are subresources whose request body is an object of their own
// (a Binding, an Eviction, a TokenRequest): admission sees that object, as upstream, through
// admittedCreater, and not the writes of the main kind that serving it makes.
var objectSubresources = map[string]bool{"binding": true, "eviction": true, "token": true}

// admissionChain boxes the chain for an atomic pointer.
type admissionChain struct{ admission.Interface }

// admission is the installed chain, nil when none.
func (s *Store) admission() admission.Interface {
	if c := s.adm.Load(); c != nil {
		return c.Interface
	}
	return nil
}

// admittedCreater runs admission on a create-only subresource (pods/binding, pods/eviction,
// serviceaccounts/token) with the request's own object.
type admittedCreater struct {
	Storage
	inner    Creater
	adm      admission.Interface
	resource schema.GroupVersionResource
	sub      string
}

func (c *admittedCreater) Create(ctx context.Context, ns, name string, obj runtime.Object, opts *metav1.CreateOptions) (runtime.Object, error) {
	if _, ok := request.InfoFrom(ctx); ok {
		u, _ := request.UserFrom(ctx)
		a := &admission.Attributes{Operation: admission.Create, Kind: c.Storage.Kind(), Resource: c.resource, Subresource: c.sub,
			Namespace: ns, Name: name, Object: obj, Options: optionsObject(opts), DryRun: opts != nil && DryRun(opts.DryRun), User: u}
		if err := c.adm.Admit(ctx, a); err != nil {
			return nil, err
		}
		if err := c.adm.Validate(ctx, a); err != nil {
			return nil, err
		}
	}
	return c.inner.Create(ctx, ns, name, obj, opts)
}

// admissionFor returns the attributes of this store's part of the request in ctx, or nil
// when admission does not apply: no chain installed, a write the server makes on its own
// (no request), a write of another resource that a request causes, or a subresource
// admitted with its own object (objectSubresources).
func (s *Store) admissionFor(ctx context.Context, op admission.Operation, ns, name string, obj, old, opts runtime.Object, dry bool) *admission.Attributes {
	if s.admission() == nil {
		return nil
	}
	info, ok := request.InfoFrom(ctx)
	if !ok || !info.IsResourceRequest || info.Resource != s.kind.Plural || info.APIGroup != s.kind.Group || objectSubresources[info.Subresource] {
		return nil
	}
	u, _ := request.UserFrom(ctx)
	return &admission.Attributes{Operation: op, Kind: s.kind.GVK(), Resource: s.kind.GroupVersion().WithResource(s.kind.Plural),
		Subresource: info.Subresource, Namespace: ns, Name: name, Object: obj, OldObject: old, Options: opts, DryRun: dry, User: u}
}

// invalidManagedFieldsWarning is upstream's warning when mutating admission left
// managedFields that do not decode (k8s.io/apiserver's fieldmanager admission wrapper).
const invalidManagedFieldsWarning = ".metadata.managedFields was in an invalid state after admission; this could be caused by an outdated mutating admission controller; please fix your requests: %v"

// admitMutating runs the mutating half of the chain on a create or update. managedFields that a
// plugin (a webhook's patch, typically) leaves undecodable are put back as they were, with
// a warning, as upstream's handlers wrap their admission.
func (s *Store) admitMutating(ctx context.Context, a *admission.Attributes) error {
	obj, err := meta.Accessor(a.Object)
	if err != nil {
		return s.admission().Admit(ctx, a)
	}
	before, unchanged := managedFieldsBefore(a.Object, obj)
	if err := s.admission().Admit(ctx, a); err != nil {
		return err
	}
	if unchanged() {
		return nil // the field manager's, which it wrote valid
	}
	if after := obj.GetManagedFields(); len(after) > 0 {
		if err := managedfields.ValidateManagedFields(after); err != nil {
			obj.SetManagedFields(before())
			request.AddWarning(ctx, fmt.Sprintf(invalidManagedFieldsWarning, err))
		}
	}
	return nil
}

// managedFieldsBefore returns what obj's GetManagedFields returns now, for when admission
// must be undone, and whether they are still the same: an unstructured object's are kept as
// they are and decoded only then (the decoding is a conversion by reflection, and every
// write of a custom resource comes here).
func managedFieldsBefore(obj runtime.Object, a metav1.Object) (before func() []metav1.ManagedFieldsEntry, unchanged func() bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		cur := a.GetManagedFields()
		saved := make([]metav1.ManagedFieldsEntry, len(cur))
		for i := range cur {
			cur[i].DeepCopyInto(&saved[i])
		}
		if cur == nil {
			saved = nil
		}
		return func() []metav1.ManagedFieldsEntry { return saved },
			func() bool { return reflect.DeepEqual(a.GetManagedFields(), saved) }
	}
	items, found, err := unstructured.NestedSlice(u.Object, "metadata", "managedFields") // a copy
	unchanged = func() bool {
		if err != nil {
			return false // not a list: let the validation say so
		}
		after, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "managedFields")
		return ok == found && (!found || jsonvalue.Equal(after, items))
	}
	if !found || err != nil {
		return func() []metav1.ManagedFieldsEntry { return nil }, unchanged
	}
	return func() []metav1.ManagedFieldsEntry {
		saved := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"managedFields": items}}}
		return saved.GetManagedFields()
	}, unchanged
}

// admitDelete runs the whole chain on the deletion of cur.
func (s *Store) admitDelete(ctx context.Context, ns, name string, cur runtime.Object, opts *metav1.DeleteOptions, dry bool) error {
	var o runtime.Object
	if opts != nil {
		o = opts
	}
	a := s.admissionFor(ctx, admission.Delete, ns, name, nil, cur, o, dry)
	if a == nil {
		return nil
	}
	if err := s.admission().Admit(ctx, a); err != nil {
		return err
	}
	return s.admission().Validate(ctx, a)
}

func optionsObject(opts *metav1.CreateOptions) runtime.Object {
	if opts == nil {
		return nil
	}
	return opts
}
