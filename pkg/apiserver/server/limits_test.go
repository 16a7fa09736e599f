package server_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTooManyRequests: with API Priority and Fairness off, the max-in-flight limits apply,
// to everyone but system:masters (here the admin; the others are the admin impersonating
// alice), with upstream's plain-text 429 and Retry-After 1.
func TestTooManyRequests(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) {
		c.MaxMutatingRequestsInflight = 1
		c.EnablePriorityAndFairness = false
		c.AuthorizationMode, c.AnonymousAuth = "AlwaysAllow", false
	})
	alice := map[string]string{"Impersonate-User": "alice"}
	e := newHTTPEnv(t, s)
	// One create holds the only mutating slot while its body trickles in. Until the server has
	// it, the probing creates below may take the slot themselves, and then it is the held
	// create that gets the 429: it is started again until it is the one holding the slot.
	type held struct {
		pw   *io.PipeWriter
		done chan *http.Response
	}
	hold := func() held {
		pr, pw := io.Pipe()
		req, _ := http.NewRequest("POST", s.URL()+"/api/v1/namespaces/default/configmaps", pr)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Impersonate-User", "alice")
		h := held{pw: pw, done: make(chan *http.Response, 1)}
		go func() {
			resp, err := e.admin.Do(req)
			if err != nil {
				t.Errorf("held create: %v", err)
				h.done <- nil
				return
			}
			resp.Body.Close()
			h.done <- resp
		}()
		if _, err := pw.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap",`)); err != nil {
			t.Fatal(err)
		}
		return h
	}
	// The held create is being served (past authentication, about to take or holding the
	// slot) once the mutating in-flight gauge counts it; probing before that lets the probe
	// win the slot every time on a loaded machine.
	heldInServer := func() bool {
		_, b := e.do(e.admin, "GET", "/metrics", "", nil, nil)
		return strings.Contains(string(b), `apiserver_current_inflight_requests{request_kind="mutating"} 1`)
	}
	h := hold()
	var resp *http.Response
	var body []byte
	eventually(t, "429 while the slot is taken", func() bool {
		select {
		case r := <-h.done:
			if r == nil || r.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("held create ended before its body was sent: %v", r)
			}
			h.pw.Close()
			h = hold()
		default:
		}
		if !heldInServer() {
			return false
		}
		resp, body = e.do(e.admin, "POST", "/api/v1/namespaces/default/configmaps", "application/json", cm("second"), alice)
		return resp.StatusCode == http.StatusTooManyRequests
	})
	if got, want := fmt.Sprintf("%s %q retry-after=%q content-type=%q nosniff=%q", resp.Status, body, resp.Header.Get("Retry-After"),
		resp.Header.Get("Content-Type"), resp.Header.Get("X-Content-Type-Options")),
		`429 Too Many Requests "Too many requests, please try again later.\n" retry-after="1" content-type="text/plain; charset=utf-8" nosniff="nosniff"`; got != want {
		t.Fatalf("429 response:\n%s\nwant\n%s", got, want)
	}
	if r, b := e.do(e.admin, "POST", "/api/v1/namespaces/default/configmaps", "application/json", cm("masters"), nil); r.StatusCode != http.StatusCreated {
		t.Fatalf("system:masters create while writes are full: %d %s", r.StatusCode, b)
	}
	// Reads have their own budget; health is never limited.
	if r, _ := e.do(e.admin, "GET", "/api/v1/namespaces/default/configmaps", "", nil, nil); r.StatusCode != 200 {
		t.Fatalf("read while writes are full: %d", r.StatusCode)
	}
	if r, _ := e.do(e.admin, "GET", "/healthz", "", nil, nil); r.StatusCode != 200 {
		t.Fatalf("healthz while writes are full: %d", r.StatusCode)
	}
	_, _ = h.pw.Write([]byte(`"metadata":{"name":"first"}}`))
	h.pw.Close()
	if r := <-h.done; r == nil || r.StatusCode != 201 {
		t.Fatalf("held create: %v", r)
	}
}

func TestRequestTimeout(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) { c.RequestTimeout = time.Nanosecond })
	e := newHTTPEnv(t, s)
	// A 1ns deadline has nearly always passed when the list reaches etcd; but when it is
	// set, it may still lie ahead, and then its timer may fire after a list that finishes
	// quickly on a loaded machine. So a list may succeed now and then, but one must time out.
	for i := 0; ; i++ {
		resp, body := e.do(e.admin, "GET", "/api/v1/namespaces/default/configmaps", "", nil, nil)
		if resp.StatusCode == http.StatusGatewayTimeout {
			if !strings.Contains(string(body), `"reason":"`+string(metav1.StatusReasonTimeout)+`"`) {
				t.Fatalf("504 without reason Timeout: %s", body)
			}
			return
		}
		if resp.StatusCode != http.StatusOK || i == 20 {
			t.Fatalf("attempt %d: %d %s", i, resp.StatusCode, body)
		}
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
		`hacp_cert_expiry_seconds{cert="generated:`, // the generated certificates, for the expiry alert
		`etcd_server_has_leader 1`,                  // the embedded member's metrics, for the etcd alerts
		`etcd_mvcc_db_total_size_in_bytes`,
		`etcd_server_quota_backend_bytes`,
	} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("/metrics lacks %s", want)
		}
	}
}
