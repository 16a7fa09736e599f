package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/hacp/hacp/pkg/apiserver/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CorruptObjectDeleter is a storage that deletes an object it cannot read back, as
// upstream's DeleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential asks.
type CorruptObjectDeleter interface {
	// DeleteCorrupt removes the corrupt object ns/name without reading it: no
	// preconditions, admission, finalizers, graceful deletion or after-delete hooks, as
	// upstream's corruptObjectDeleter. An object that reads back fine is a 409, a missing
	// one a 404; a dry run only checks.
	DeleteCorrupt(ctx context.Context, ns, name string, opts *metav1.DeleteOptions) error
	// DeletesCorrupt reports whether the storage offers unsafe deletion at all.
	DeletesCorrupt() bool
}

// ErrNoCorruptDeleter is upstream's answer where a resource has no unsafe deleter.
var ErrNoCorruptDeleter = apierrors.NewInternalError(errors.New("no unsafe deleter provided, can not honor ignoreStoreReadErrorWithClusterBreakingPotential"))

var _ CorruptObjectDeleter = (*Store)(nil)

// DeleteCorrupt is CorruptObjectDeleter's. A namespace has none, as upstream's namespace
// storage offers none.
func (s *Store) DeleteCorrupt(ctx context.Context, ns, name string, opts *metav1.DeleteOptions) error {
	if err := s.checkName(name); err != nil {
		return err
	}
	if !s.DeletesCorrupt() {
		return ErrNoCorruptDeleter
	}
	return Interpret(s.storage.(storage.CorruptDeleter).DeleteCorrupt(ctx, s.key(ns, name), opts != nil && DryRun(opts.DryRun)), s.gr(), name)
}

// DeletesCorrupt is CorruptObjectDeleter's: every kind but namespaces.
func (s *Store) DeletesCorrupt() bool {
	_, ok := s.storage.(storage.CorruptDeleter)
	return ok && s.onTerminate == nil
}

// corruptListStatus is upstream's answer to a list that met corrupt objects: 500
// StorageReadError naming the first (and how many more) in its message and each one's full
// etcd key in a cause.
func corruptListStatus(e *storage.CorruptListError, gr schema.GroupResource) *apierrors.StatusError {
	causes := make([]metav1.StatusCause, 0, len(e.Errs)+1)
	for _, err := range e.Errs {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeUnexpectedServerResponse, Field: err.Key, Message: err.Error()})
	}
	switch {
	case e.TooMany():
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeTooMany, Message: e.Abort.Error()})
	case e.Abort != nil:
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeUnexpectedServerResponse, Message: e.Abort.Error()})
	}
	msg := fmt.Sprintf("failed to read one or more %s from the storage: %v", gr.String(), e.Errs[0])
	if len(e.Errs) > 1 {
		msg = fmt.Sprintf("%s (and %d more)", msg, len(e.Errs)-1)
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonStoreReadError, Message: msg,
		Details: &metav1.StatusDetails{Group: gr.Group, Kind: gr.Resource, Name: "list", Causes: causes},
	}}
}
