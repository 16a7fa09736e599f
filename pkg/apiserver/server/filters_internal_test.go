package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Watches are classified from the parsed request, not from the path's text: an object or
// namespace named "watch" is an ordinary request, bounded by the in-flight limit and the
// request timeout like any other.
func TestLongRunningFromRequestInfo(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	h := withRequestInfo(limitInflight(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/namespaces/default/configmaps/held" {
			close(entered)
			<-release
		}
	}), 1, 1))
	held := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/namespaces/default/configmaps/held", nil))
		held <- rec.Code
	}()
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the held request never reached the handler")
	}
	for _, tc := range []struct {
		url  string
		want int
	}{
		{"/api/v1/namespaces/watch/configmaps/watch", http.StatusTooManyRequests},
		{"/api/v1/watch/namespaces/default/configmaps", http.StatusOK},
		{"/api/v1/namespaces/default/configmaps?watch=true", http.StatusOK},
		{"/api/v1/namespaces/default/configmaps?watch=false", http.StatusTooManyRequests},
		{"/healthz", http.StatusOK},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", tc.url, nil))
		if rec.Code != tc.want {
			t.Errorf("GET %s with the read slot taken: %d, want %d", tc.url, rec.Code, tc.want)
		}
	}
	close(release)
	if code := <-held; code != http.StatusOK {
		t.Fatalf("held request: %d", code)
	}

	bounded := map[string]bool{}
	h = withRequestInfo(withTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, ok := r.Context().Deadline()
		bounded[r.URL.String()] = ok
	}), time.Minute))
	for url, want := range map[string]bool{
		"/api/v1/namespaces/watch/pods/watch":         true,
		"/api/v1/namespaces/default/pods?watch=true":  false,
		"/api/v1/watch/namespaces/default/pods/watch": false,
	} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", url, nil))
		if bounded[url] != want {
			t.Errorf("GET %s: request timeout applied %v, want %v", url, bounded[url], want)
		}
	}
}
