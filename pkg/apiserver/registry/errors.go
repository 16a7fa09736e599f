package registry

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/hacp/hacp/pkg/apiserver/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Interpret maps a storage error onto the upstream API error for gr/name.
func Interpret(err error, gr schema.GroupResource, name string) error {
	if err == nil {
		return nil
	}
	var cl *storage.CorruptListError
	if errors.As(err, &cl) && len(cl.Errs) > 0 {
		return corruptListStatus(cl, gr)
	}
	var se *storage.Error
	if !asStorageErr(err, &se) {
		return err
	}
	switch se.Code {
	case storage.ErrCodeNotFound:
		return apierrors.NewNotFound(gr, name)
	case storage.ErrCodeExists:
		return apierrors.NewAlreadyExists(gr, name)
	case storage.ErrCodeConflict:
		if se.Msg != "" {
			return apierrors.NewConflict(gr, name, fmt.Errorf("%s", se.Msg))
		}
		return apierrors.NewConflict(gr, name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	case storage.ErrCodeInvalidObj:
		if se.Msg != "" && len(se.Msg) > 12 && se.Msg[:12] == "Precondition" {
			return apierrors.NewConflict(gr, name, fmt.Errorf("%s", se.Msg))
		}
		return apierrors.NewBadRequest(se.Error())
	case storage.ErrCodeNotCorrupt:
		return apierrors.NewConflict(gr, name, se)
	case storage.ErrCodeExpired:
		e := apierrors.NewResourceExpired(se.Error())
		e.ErrStatus.Continue = se.Continue
		return e
	case storage.ErrCodeTooLargeRV:
		e := apierrors.NewTimeoutError(se.Error(), 1)
		e.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
		return e
	case storage.ErrCodeInvalidRV:
		return apierrors.NewBadRequest(se.Error())
	case storage.ErrCodeTimeout:
		return apierrors.NewTimeoutError(se.Error(), 1)
	case storage.ErrCodeUnknownOutcome:
		// What upstream answers when etcd leaves a write's outcome open.
		return apierrors.NewTimeoutError("request did not complete within requested timeout - "+se.Error(), 0)
	case storage.ErrCodeTooLarge:
		// upstream: 413 with etcd's message
		return apierrors.NewRequestEntityTooLargeError(se.Error())
	case storage.ErrCodeUnreachable:
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusServiceUnavailable, Reason: metav1.StatusReasonServiceUnavailable,
			Message: "storage is unavailable: " + se.Error(),
		}}
	}
	return apierrors.NewInternalError(err)
}
