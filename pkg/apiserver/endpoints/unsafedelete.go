package endpoints

import (
	"fmt"
	"net/http"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/request"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The unsafe deletion of an object that cannot be read back from etcd (upstream's
// AllowUnsafeMalformedObjectDeletion, on by default since Kubernetes 1.37): a DELETE with
// ignoreStoreReadErrorWithClusterBreakingPotential, which also needs the verb
// unsafeDeleteVerb on the resource.

// unsafeDeleteVerb is the permission an unsafe deletion needs besides delete.
const unsafeDeleteVerb = "unsafe-delete-ignore-read-errors"

// unsafeDeleteAnnotation marks an unsafe deletion in the audit log, as upstream.
const unsafeDeleteAnnotation = "apiserver.k8s.io/unsafe-delete-ignore-read-error"

var deleteOptionsKind = schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}

func unsafeDelete(opts *metav1.DeleteOptions) bool {
	return opts != nil && opts.IgnoreStoreReadErrorWithClusterBreakingPotential != nil && *opts.IgnoreStoreReadErrorWithClusterBreakingPotential
}

// unsafeCollectionError is upstream's answer to a DELETECOLLECTION with the option: the
// options' own errors first, then the option itself.
func unsafeCollectionError(opts *metav1.DeleteOptions) error {
	errs := metav1validation.ValidateDeleteOptions(opts)
	if len(errs) == 0 {
		errs = field.ErrorList{field.Invalid(field.NewPath("ignoreStoreReadErrorWithClusterBreakingPotential"), true,
			"is not allowed with DELETECOLLECTION, try again after removing the option")}
	}
	return apierrors.NewInvalid(deleteOptionsKind, "", errs)
}

// deleteCorrupt serves an unsafe deletion as upstream's delete handler: the options
// validated (the option goes with no precondition, grace period or propagation), the extra
// verb authorized, then the key removed without reading it; the answer is a Status naming
// the object and its kind.
func (s *scope) deleteCorrupt(w http.ResponseWriter, r *http.Request, ns, name string, opts *metav1.DeleteOptions) {
	if errs := metav1validation.ValidateDeleteOptions(opts); len(errs) > 0 {
		writeError(w, r, apierrors.NewInvalid(deleteOptionsKind, "", errs))
		return
	}
	request.AddAnnotation(r.Context(), unsafeDeleteAnnotation, "")
	cd, ok := s.storage.(registry.CorruptObjectDeleter)
	if !ok || !cd.DeletesCorrupt() {
		writeError(w, r, registry.ErrNoCorruptDeleter)
		return
	}
	if err := s.authorizeUnsafeDelete(r, name); err != nil {
		writeError(w, r, err)
		return
	}
	if err := cd.DeleteCorrupt(r.Context(), ns, name, opts); err != nil {
		writeError(w, r, err)
		return
	}
	writeObject(w, r, http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusSuccess, Code: http.StatusOK, Details: &metav1.StatusDetails{Name: name, Kind: s.kind.Kind}})
}

// authorizeUnsafeDelete checks that the user may also do unsafeDeleteVerb on the object.
func (s *scope) authorizeUnsafeDelete(r *http.Request, name string) error {
	if s.subresource != "" {
		return apierrors.NewForbidden(s.gr(), name, fmt.Errorf("ignoreStoreReadErrorWithClusterBreakingPotential delete option is not allowed on a subresource or non-resource request"))
	}
	check, ok := request.VerbCheckFrom(r.Context())
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("no authorizer provided, unable to authorize unsafe delete"))
	}
	allowed, reason, err := check(r.Context(), unsafeDeleteVerb)
	switch {
	case err != nil:
		return apierrors.NewForbidden(s.gr(), name, fmt.Errorf("error while checking permission for %q, %w", unsafeDeleteVerb, err))
	case !allowed:
		return apierrors.NewForbidden(s.gr(), name, fmt.Errorf("not permitted to do %q, reason: %s", unsafeDeleteVerb, reason))
	}
	return nil
}
