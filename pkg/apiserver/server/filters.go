package server

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/endpoints"
	"github.com/hacp/hacp/pkg/apiserver/request"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// longRunning reports requests exempt from the in-flight limit and the request timeout:
// watches (and, later, proxy-type subresources), classified from the parsed request as
// upstream does, so that an object or namespace named "watch" is an ordinary request.
func longRunning(r *http.Request) bool {
	info, _ := request.InfoFrom(r.Context())
	return info.LongRunning()
}

// withRequestInfo parses what the request asks for (request.Parse) once, for every filter
// and handler after it.
func withRequestInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, err := request.Parse(r)
		if err != nil {
			endpoints.WriteStatusError(w, r, apierrors.NewBadRequest(err.Error()))
			return
		}
		next.ServeHTTP(w, r.WithContext(request.WithInfo(r.Context(), info)))
	})
}

// withWarnings lets admission (webhooks, PodSecurity) send warnings to the client as
// `Warning: 299 - "..."` headers (request.AddWarning), each text once, as upstream.
func withWarnings(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var mu sync.Mutex
		seen := map[string]bool{}
		ctx := request.WithWarnings(r.Context(), func(msg string) {
			mu.Lock()
			defer mu.Unlock()
			if seen[msg] {
				return
			}
			seen[msg] = true
			w.Header().Add("Warning", "299 - "+strconv.Quote(msg))
		})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// limitInflight answers 429 when too many read-only (get, list, watch) or mutating
// requests are being served, as upstream's max-in-flight filter: a member of
// system:masters is served even then, and the answer is its plain-text one with
// Retry-After 1 (not a Status).
func limitInflight(next http.Handler, readOnly, mutating int) http.Handler {
	var ro, mu chan struct{}
	if readOnly > 0 {
		ro = make(chan struct{}, readOnly)
	}
	if mutating > 0 {
		mu = make(chan struct{}, mutating)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, _ := request.InfoFrom(r.Context())
		if info.LongRunning() || publicPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		sem := mu
		if info != nil && (info.Verb == "get" || info.Verb == "list" || info.Verb == "watch") {
			sem = ro
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
			if u, ok := request.UserFrom(r.Context()); ok && slices.Contains(u.Groups, request.SystemPrivilegedGrp) {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
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

// withGrownStack grows the request goroutine's stack once, up front, to the size a request
// through the storage layer needs. net/http starts every request on a new goroutine with a
// small stack, which the runtime doubles several times as the request goes deeper, each time
// copying the stack and adjusting every frame already on it: a quarter of a GET's CPU time in
// the handler went to that. Growing it here, while the stack is shallow, is one cheap copy.
// (CockroachDB's growstack package does the same for its RPC handlers.)
func withGrownStack(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		growStack()
		next.ServeHTTP(w, r)
	})
}

// growStackBytes is what a request needs: enough for etcd's in-process read and write paths.
const growStackBytes = 16 << 10

// stackSink keeps growStack's buffer from being optimized away. touch reads the buffer's
// last byte, which is always zero, so the store never happens: no request goroutine writes
// shared memory (it used to be a plain byte that every request wrote, a data race).
var stackSink atomic.Bool

//go:noinline
func growStack() {
	var buf [growStackBytes]byte
	touch(buf[:])
}

//go:noinline
func touch(b []byte) {
	if b[len(b)-1] != 0 {
		stackSink.Store(true)
	}
}
