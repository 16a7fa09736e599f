package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTooManyRequests(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) { c.MaxMutatingRequestsInflight = 1 })
	e := newHTTPEnv(t, s)
	// One create holds the only mutating slot while its body trickles in.
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", s.URL()+"/api/v1/namespaces/default/configmaps", pr)
	req.Header.Set("Content-Type", "application/json")
	done := make(chan *http.Response, 1)
	go func() {
		resp, err := e.admin.Do(req)
		if err != nil {
			done <- nil
			return
		}
		resp.Body.Close()
		done <- resp
	}()
	if _, err := pw.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap",`)); err != nil {
		t.Fatal(err)
	}
	var resp *http.Response
	var body []byte
	eventually(t, "429 while the slot is taken", func() bool {
		resp, body = e.do(e.admin, "POST", "/api/v1/namespaces/default/configmaps", "application/json", cm("second"), nil)
		return resp.StatusCode == http.StatusTooManyRequests
	})
	if resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), `"reason":"TooManyRequests"`) {
		t.Fatalf("429 response: %v %s", resp.Header, body)
	}
	// Reads have their own budget; health is never limited.
	if r, _ := e.do(e.admin, "GET", "/api/v1/namespaces/default/configmaps", "", nil, nil); r.StatusCode != 200 {
		t.Fatalf("read while writes are full: %d", r.StatusCode)
	}
	_, _ = pw.Write([]byte(`"metadata":{"name":"first"}}`))
	pw.Close()
	if r := <-done; r == nil || r.StatusCode != 201 {
		t.Fatalf("held create: %v", r)
	}
}

func TestRequestTimeout(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) { c.RequestTimeout = time.Nanosecond })
	e := newHTTPEnv(t, s)
	resp, body := e.do(e.admin, "GET", "/api/v1/namespaces/default/configmaps", "", nil, nil)
	if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(body), `"reason":"`+string(metav1.StatusReasonTimeout)+`"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

func TestMetrics(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) { c.MetricsBindAddress = "127.0.0.1:0" })
	e := newHTTPEnv(t, s)
	e.do(e.admin, "GET", "/api/v1/namespaces/default/configmaps", "", nil, nil)
	e.do(e.admin, "GET", "/api/v1/namespaces/default/configmaps/missing", "", nil, nil)
	resp, err := http.Get("http://" + s.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`apiserver_request_total{code="200",group="",resource="configmaps",verb="LIST"} 1`,
		`apiserver_request_total{code="404",group="",resource="configmaps",verb="GET"} 1`,
		`apiserver_request_duration_seconds_bucket`,
	} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("/metrics lacks %s", want)
		}
	}
}
