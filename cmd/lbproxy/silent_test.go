package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/pkg/lb"
)

var sysHUP = syscall.SIGHUP

func fetchStatus(c *http.Client, addr string) (lb.Status, error) {
	var st lb.Status
	resp, err := c.Get("http://" + addr + "/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// waitStatus polls lbproxy's /status until cond holds.
func waitStatus(t *testing.T, addr string, cond func(lb.Status) bool) lb.Status {
	t.Helper()
	return waitStatusVia(t, &http.Client{Timeout: 5 * time.Second}, addr, cond)
}

func waitStatusVia(t *testing.T, c *http.Client, addr string, cond func(lb.Status) bool) lb.Status {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := fetchStatus(c, addr)
		if err == nil && cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting on lbproxy status (last: %+v, err %v)", st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nsDialer dials from inside host h's network namespace.
func nsDialer(h *netns.Host) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := h.Do(func() (err error) {
			var d net.Dialer
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
}

// TestSilentBackendHost is issue 7's lbproxy case: three apiserver stand-ins on three
// namespace hosts, lbproxy on a fourth. One backend host goes silent (its link drops: no
// RST, no ICMP). The first connect to it times out, marks it DOWN at once, and is retried
// on another backend, so every client request succeeds and only that one waited; the
// stream that was open through the silent host is closed so its client can reconnect.
// When the link returns, active checks bring the backend back after rise.
func TestSilentBackendHost(t *testing.T) {
	n := netns.New(t, "hl-", "10.77.2")
	lbHost := n.AddHost("lb", 10)
	var masters []*netns.Host
	for i := 1; i <= 3; i++ {
		h := n.AddHost(fmt.Sprintf("m%d", i), 10+i)
		masters = append(masters, h)
		startNSBackend(t, h)
	}

	const connectTimeout = 300 * time.Millisecond
	args := []string{"LBPROXY_TEST_MAIN=1", self(t),
		"--listen", "127.0.0.1:8443", "--status-addr", "127.0.0.1:9000",
		"--check-insecure", "--check-interval", "2s", "--check-fast-interval", "200ms",
		"--check-timeout", "1s", "--rise", "2", "--fall", "3",
		"--connect-timeout", connectTimeout.String(), "--retries", "2", "--log-level", "debug"}
	for _, m := range masters {
		args = append(args, "--backend", m.Addr.String()+":6443")
	}
	lbHost.Start("env", args...)

	// httpc makes each request on a new connection through lbproxy; statusc reads /status.
	httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return nsDialer(lbHost)(ctx, network, "127.0.0.1:8443")
		},
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
	}}
	statusc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: nsDialer(lbHost), DisableKeepAlives: true}}
	waitStatusVia(t, statusc, "127.0.0.1:9000", func(st lb.Status) bool {
		up := 0
		for _, b := range st.Backends {
			if b.State == "UP" {
				up++
			}
		}
		return up == 3
	})

	victim := masters[1]
	victimAddr := victim.Addr.String() + ":6443"

	// A long stream (a watch) open through the victim before it goes silent.
	var watch *bufio.Reader
	var watchConn net.Conn
	for i := 0; watch == nil; i++ {
		if i == 3 {
			t.Fatal("no stream landed on the victim in a full rotation")
		}
		c, err := nsDialer(lbHost)(context.Background(), "tcp", "127.0.0.1:8443")
		if err != nil {
			t.Fatal(err)
		}
		tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true})
		fmt.Fprintf(tc, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
		_ = tc.SetReadDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(tc)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		name, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(name) == victim.Addr.String() {
			watch, watchConn = br, tc
			t.Cleanup(func() { tc.Close() })
		} else {
			tc.Close()
		}
	}

	victim.SetLink(false)
	fault := time.Now()

	// New requests, one after another: each must succeed, and at most one may be delayed
	// by the timed-out connect to the silent host.
	var waits []time.Duration
	for i := range 12 {
		start := time.Now()
		resp, err := httpc.Get("https://lbproxy/name")
		if err != nil {
			t.Fatalf("request %d after the fault: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		waits = append(waits, time.Since(start))
		if string(body) == victim.Addr.String() {
			t.Fatalf("request %d answered by the silent host", i)
		}
	}
	t.Logf("waits of the 12 requests after the fault (connect timeout %v): %v", connectTimeout, waits)
	for i, w := range waits {
		// A generous bound (connect timeout + one retry + 5 s of scheduling slack): only a
		// hang on the silent host could exceed it.
		if w > connectTimeout+5*time.Second {
			t.Errorf("request %d waited %v", i, w)
		}
	}

	st, err := fetchStatus(statusc, "127.0.0.1:9000")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range st.Backends {
		if b.Addr != victimAddr {
			continue
		}
		t.Logf("victim after the fault: state=%s connectFailures=%d checks=%d lastError=%q", b.State, b.ConnectFailure, b.Check.Checks, b.Check.LastError)
		if b.State != "DOWN" {
			t.Errorf("silent backend is %s, want DOWN", b.State)
		}
		// Exactly one connect went to the silent host: the first timeout marked it DOWN.
		if b.ConnectFailure != 1 {
			t.Errorf("silent backend saw %d connect failures, want 1", b.ConnectFailure)
		}
	}
	if st.Retries != 1 {
		t.Errorf("%d client connections were retried, want exactly 1 (the one that met the silent host)", st.Retries)
	}

	// The watch through the silent host was closed by lbproxy, not left to TCP timeouts.
	_ = watchConn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, err := watch.ReadString('\n')
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("stream through the silent host still open 10 s after the fault")
		}
		t.Logf("stream through the silent host closed %v after the fault: %v", time.Since(fault).Round(time.Millisecond), err)
		break
	}

	// Back on the network: active checks bring it UP after rise successes.
	victim.SetLink(true)
	waitStatusVia(t, statusc, "127.0.0.1:9000", func(st lb.Status) bool {
		for _, b := range st.Backends {
			if b.Addr == victimAddr {
				return b.State == "UP"
			}
		}
		return false
	})
	seen := false
	for range 3 {
		resp, err := httpc.Get("https://lbproxy/name")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		seen = seen || string(body) == victim.Addr.String()
	}
	if !seen {
		t.Error("recovered backend got no request in a full rotation")
	}
}

// startNSBackend serves an apiserver stand-in on h's address, port 6443: /healthz, /name
// (the host's address) and /stream (a line every 50 ms).
func startNSBackend(t *testing.T, h *netns.Host) {
	t.Helper()
	var ln net.Listener
	if err := h.Do(func() (err error) {
		ln, err = net.Listen("tcp", h.Addr.String()+":6443")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	name := h.Addr.String()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/name", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, name) })
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, name)
		w.(http.Flusher).Flush()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				fmt.Fprintln(w, "event")
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.Listener.Close()
	srv.Listener = ln
	srv.StartTLS()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
}
