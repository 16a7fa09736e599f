package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/endpoints"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// longRunning reports requests exempt from the in-flight limit and the
// request timeout: watches.
func longRunning(r *http.Request) bool {
	if strings.Contains(r.URL.Path, "/watch/") {
		return true
	}
	q := r.URL.Query()
	return q.Get("watch") == "true" || q.Get("watch") == "1"
}

// limitInflight answers 429 with Retry-After when too many read-only or
// mutating requests are being served, like upstream's max-in-flight filter.
func limitInflight(next http.Handler, readOnly, mutating int) http.Handler {
	var ro, mu chan struct{}
	if readOnly > 0 {
		ro = make(chan struct{}, readOnly)
	}
	if mutating > 0 {
		mu = make(chan struct{}, mutating)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if longRunning(r) || publicPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		sem := ro
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			sem = mu
		}
		if sem == nil {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
			next.ServeHTTP(w, r)
		default:
			endpoints.WriteStatusError(w, r, apierrors.NewTooManyRequests("Too many requests, please try again later.", 1))
		}
	})
}

// withTimeout bounds every request but watches; storage calls that run out of
// time answer 504 Timeout.
func withTimeout(next http.Handler, timeout time.Duration) http.Handler {
	if timeout <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if longRunning(r) {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
