package audit

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/request"
)

// BenchmarkAudit is the filter's cost per request at each level, writing to a real file
// (blocking mode), for a GET answered with a 1 KiB object: go test -bench Audit -run x.
func BenchmarkAudit(b *testing.B) {
	body := []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","namespace":"n"},"data":{"k":"` + strings.Repeat("v", 1000) + `"}}`)
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	for _, level := range []Level{"off", LevelNone, LevelMetadata, LevelRequestResponse} {
		b.Run(string(level), func(b *testing.B) {
			var a *Auditor
			if level != "off" {
				lb, err := NewLogBackend(LogConfig{Path: filepath.Join(b.TempDir(), "audit.log")})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = lb.Close() })
				a = New(&Policy{Rules: []PolicyRule{{Level: LevelNone, NonResourceURLs: []string{"/healthz*"}}, {Level: level}}}, lb)
			}
			h := WithAuditID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx := request.WithInfo(request.WithUser(r.Context(), &request.User{Name: "alice", Groups: []string{"system:authenticated"}}),
					&request.Info{IsResourceRequest: true, Verb: "get", Resource: "configmaps", Namespace: "n", Name: "c", APIVersion: "v1"})
				a.WithAudit(inner).ServeHTTP(w, r.WithContext(ctx))
			}))
			req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/n/configmaps/c", nil)
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}
