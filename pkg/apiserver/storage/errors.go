package storage

import (
	"errors"
	"fmt"
)

// ErrCode classifies storage errors; the registry maps them onto API errors.
type ErrCode int

const (
	ErrCodeNotFound       ErrCode = iota + 1 // nothing at the key
	ErrCodeExists                            // create over an existing key
	ErrCodeConflict                          // precondition on resourceVersion failed
	ErrCodeInvalidObj                        // precondition on UID failed or the object is malformed
	ErrCodeExpired                           // requested revision was compacted
	ErrCodeTooLargeRV                        // requested revision is in the future
	ErrCodeInvalidRV                         // unparsable resourceVersion or continue token
	ErrCodeUnreachable                       // etcd did not answer
	ErrCodeTimeout                           // the caller's deadline passed
	ErrCodeUnknownOutcome                    // a write may or may not have been applied
	ErrCodeTooLarge                          // the request is over etcd's (or its client's) size limit
)

// Error is returned by every storage operation that fails for a reason the caller may act on.
type Error struct {
	Code ErrCode
	Key  string
	RV   int64
	Msg  string
	// Continue is a token that continues an expired paged list where it stopped, at a
	// newer revision (ErrCodeExpired only).
	Continue string
}

func (e *Error) Error() string {
	if e.Code == ErrCodeCorruptObj {
		return storageErrorText("corrupt object", 7, e.Key, e.Msg)
	}
	if e.Msg != "" {
		return e.Msg
	}
	switch e.Code {
	case ErrCodeNotFound:
		return fmt.Sprintf("key not found: %s", e.Key)
	case ErrCodeExists:
		return fmt.Sprintf("key exists: %s", e.Key)
	case ErrCodeConflict:
		return fmt.Sprintf("resource version conflict on %s", e.Key)
	case ErrCodeExpired:
		return fmt.Sprintf("too old resource version: %d", e.RV)
	case ErrCodeTooLargeRV:
		return fmt.Sprintf("too large resource version: %d", e.RV)
	}
	return fmt.Sprintf("storage error %d on %s", e.Code, e.Key)
}

func hasCode(err error, c ErrCode) bool { return withCode(err, c) != nil }

// withCode returns the storage error in err's chain if its code is c, else nil.
func withCode(err error, c ErrCode) *Error {
	var se *Error
	if errors.As(err, &se) && se.Code == c {
		return se
	}
	return nil
}

// IsNotFound reports a missing key.
func IsNotFound(err error) bool { return hasCode(err, ErrCodeNotFound) }

// IsExists reports a create over an existing key.
func IsExists(err error) bool { return hasCode(err, ErrCodeExists) }

// IsConflict reports a failed resourceVersion precondition.
func IsConflict(err error) bool { return hasCode(err, ErrCodeConflict) }

// IsExpired reports a compacted revision.
func IsExpired(err error) bool { return hasCode(err, ErrCodeExpired) }

// IsUnknownOutcome reports a write whose outcome etcd could not prove.
func IsUnknownOutcome(err error) bool { return hasCode(err, ErrCodeUnknownOutcome) }

// Code returns the storage error code of err, or 0.
func Code(err error) ErrCode {
	var se *Error
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}
