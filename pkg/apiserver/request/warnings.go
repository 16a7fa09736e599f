package request

import "context"

type warningsKey struct{}

// WithWarnings returns ctx whose AddWarning calls go to sink (the server's filter adds them
// as Warning response headers, as upstream's warning recorder).
func WithWarnings(ctx context.Context, sink func(msg string)) context.Context {
	return context.WithValue(ctx, warningsKey{}, sink)
}

// AddWarning sends msg to the client of the request ctx belongs to, as a `Warning: 299`
// header; nothing when ctx has no sink.
func AddWarning(ctx context.Context, msg string) {
	if sink, _ := ctx.Value(warningsKey{}).(func(string)); sink != nil && msg != "" {
		sink(msg)
	}
}
