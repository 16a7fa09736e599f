package request

import (
	"context"
	"sync"
)

// Annotations collects the audit annotations a request gathers on its way
// (the authorizer's decision and reason, admission plugins' and webhooks'
// annotations). The audit backend reads them when it writes the request's
// final stage. It is safe for concurrent use: validating webhooks run in
// parallel.
type Annotations struct {
	mu sync.Mutex
	kv map[string]string
}

type annotationsKey struct{}

// WithAnnotations returns ctx carrying a new, empty annotation set, and the set.
func WithAnnotations(ctx context.Context) (context.Context, *Annotations) {
	a := &Annotations{}
	return context.WithValue(ctx, annotationsKey{}, a), a
}

// AddAnnotation records key=value on the request ctx belongs to. As upstream,
// the first value of a key wins; it does nothing when ctx carries no set (a
// request the audit filter did not see, or audit off).
func AddAnnotation(ctx context.Context, key, value string) {
	a, _ := ctx.Value(annotationsKey{}).(*Annotations)
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.kv == nil {
		a.kv = make(map[string]string)
	}
	if _, ok := a.kv[key]; !ok {
		a.kv[key] = value
	}
}

// Map returns a copy of the annotations recorded so far, nil when none.
func (a *Annotations) Map() map[string]string {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.kv) == 0 {
		return nil
	}
	m := make(map[string]string, len(a.kv))
	for k, v := range a.kv {
		m[k] = v
	}
	return m
}
