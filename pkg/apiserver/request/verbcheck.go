package request

import "context"

// VerbCheck reports whether the request's user may also do verb on the request's resource
// (the same namespace, name and selectors): a handler's check of an extra permission, as
// upstream's unsafe deletion checks unsafe-delete-ignore-read-errors.
type VerbCheck func(ctx context.Context, verb string) (allowed bool, reason string, err error)

type verbCheckKey struct{}

// WithVerbCheck returns ctx carrying check.
func WithVerbCheck(ctx context.Context, check VerbCheck) context.Context {
	return context.WithValue(ctx, verbCheckKey{}, check)
}

// VerbCheckFrom returns the check ctx carries.
func VerbCheckFrom(ctx context.Context) (VerbCheck, bool) {
	c, ok := ctx.Value(verbCheckKey{}).(VerbCheck)
	return c, ok && c != nil
}
