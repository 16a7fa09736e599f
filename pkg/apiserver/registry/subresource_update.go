package registry

import (
	"context"
	"fmt"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MergeFunc makes the object to store from the current one (a copy, free to change) and
// the one a subresource write sent: it takes from the request only what the subresource
// may change, and reports the rules of that change (an error refuses it otherwise).
type MergeFunc func(current, request runtime.Object) (runtime.Object, field.ErrorList, error)

// updateSubresource writes one subresource (finalize, approval, ephemeralcontainers,
// resize, a kind's own status rules) of an existing object: the request's resourceVersion
// is a precondition, metadata comes from the stored object, and the merged result passes
// the kind's validation.
func (s *Store) updateSubresource(ctx context.Context, ns, name string, transform TransformFunc, opts *metav1.UpdateOptions, merge MergeFunc) (runtime.Object, bool, error) {
	if err := s.checkName(name); err != nil {
		return nil, false, err
	}
	dry := opts != nil && DryRun(opts.DryRun)
	var result runtime.Object
	out := s.kind.New()
	err := s.storage.GuaranteedUpdate(ctx, s.key(ns, name), out, true, nil, func(current runtime.Object) (runtime.Object, error) {
		ca, _ := meta.Accessor(current)
		if ca.GetResourceVersion() == "" {
			return nil, apierrors.NewNotFound(s.gr(), name)
		}
		in := current.DeepCopyObject()
		s.setKind(in)
		req, err := transform(ctx, in)
		if err != nil {
			return nil, err
		}
		ra, err := meta.Accessor(req)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if ra.GetName() != name {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", ra.GetName(), name))
		}
		if rv := ra.GetResourceVersion(); rv != "" && rv != ca.GetResourceVersion() {
			return nil, apierrors.NewConflict(s.gr(), name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
		}
		if uid := ra.GetUID(); uid != "" && uid != ca.GetUID() {
			//lint:ignore ST1005 upstream's exact message, which clients may match
			return nil, apierrors.NewConflict(s.gr(), name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, ca.GetUID()))
		}
		merged, errs, err := merge(current.DeepCopyObject(), req)
		if err != nil {
			return nil, err
		}
		if na, err := meta.Accessor(merged); err == nil {
			na.SetManagedFields(ra.GetManagedFields()) // the field manager's record of this write
		}
		// Admission sees the subresource's write as an update of the object (upstream's
		// attributes name the subresource): mutating plugins before validation, validating
		// ones after.
		var updateOpts runtime.Object = &metav1.UpdateOptions{}
		if opts != nil {
			updateOpts = opts
		}
		adm := s.admissionFor(ctx, admission.Update, ns, name, merged, current, updateOpts, dry)
		if adm != nil && len(errs) == 0 {
			s.setKind(merged)
			s.setKind(current)
			if err := s.admitMutating(ctx, adm); err != nil {
				return nil, err
			}
		}
		if len(errs) == 0 {
			na, _ := meta.Accessor(merged)
			errs = apivalidation.ValidateObjectMetaAccessorUpdate(forValidation(na), ca, field.NewPath("metadata"))
			errs = append(errs, s.validateCreate(merged)...)
		}
		if len(errs) > 0 {
			return nil, s.invalid(name, errs)
		}
		s.setKind(merged)
		if adm != nil {
			if err := s.admission().Validate(ctx, adm); err != nil {
				return nil, err
			}
		}
		if dry {
			result = merged
			return nil, errDryRun
		}
		return merged, nil
	})
	switch err {
	case errDryRun:
		return result, false, nil
	case nil:
	default:
		return nil, false, Interpret(err, s.gr(), name)
	}
	s.setKind(out)
	// namespaces/finalize removing the last finalizer of a namespace being deleted deletes
	// it, as upstream's finalize store (it shares the namespace store's rules).
	if del, ok := s.deleteIfReleased(ctx, ns, name, out); ok {
		return del, false, nil
	}
	return out, false, nil
}

// subresourceStore serves a subresource that reads the whole object and writes part of it.
type subresourceStore struct {
	store *Store
	merge MergeFunc
}

func (s *subresourceStore) New() runtime.Object           { return s.store.New() }
func (s *subresourceStore) Kind() schema.GroupVersionKind { return s.store.Kind() }
func (s *subresourceStore) Get(ctx context.Context, ns, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return s.store.Get(ctx, ns, name, opts)
}
func (s *subresourceStore) Update(ctx context.Context, ns, name string, transform TransformFunc, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return s.store.updateSubresource(ctx, ns, name, transform, opts, s.merge)
}

// updateOnlyStore is a subresourceStore without GET (namespaces/finalize is PUT only upstream).
type updateOnlyStore struct {
	store *Store
	merge MergeFunc
}

func (s *updateOnlyStore) New() runtime.Object           { return s.store.New() }
func (s *updateOnlyStore) Kind() schema.GroupVersionKind { return s.store.Kind() }
func (s *updateOnlyStore) Update(ctx context.Context, ns, name string, transform TransformFunc, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return s.store.updateSubresource(ctx, ns, name, transform, opts, s.merge)
}
