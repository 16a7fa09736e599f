package endpoints

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func asStatusError(err error, target **apierrors.StatusError) bool { return errors.As(err, target) }
