//lint:file-ignore SA1019 services/proxy reads core/v1 Endpoints, as kube-apiserver 1.33 does

package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/internal/testenv"
	"github.com/hacp/hacp/internal/testpki"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// fakeKubelet is a real HTTPS server shaped like a kubelet's API: it requires a client
// certificate from the test CA, serves containerLogs (following when asked), answers
// exec/attach/portForward upgrades with 101 and then echoes bytes, and serves other paths
// with a description of the request.
type fakeKubelet struct {
	srv  *httptest.Server
	port int

	mu       sync.Mutex
	requests []string // "METHOD path?query client-CN auth=..."
	follows  int      // log follows open now
}

func newFakeKubelet(t *testing.T, ca *testpki.CA) *fakeKubelet {
	t.Helper()
	k := &fakeKubelet{}
	certPEM, keyPEM := ca.Serving(t, "kubelet")
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	k.srv = httptest.NewUnstartedServer(http.HandlerFunc(k.serve))
	k.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: ca.Pool, ClientAuth: tls.RequireAndVerifyClientCert}
	k.srv.StartTLS()
	t.Cleanup(k.srv.Close)
	k.port = k.srv.Listener.Addr().(*net.TCPAddr).Port
	return k
}

func (k *fakeKubelet) record(r *http.Request) {
	cn := ""
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		cn = r.TLS.PeerCertificates[0].Subject.CommonName
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.requests = append(k.requests, fmt.Sprintf("%s %s client=%s auth=%q", r.Method, r.URL.RequestURI(), cn, r.Header.Get("Authorization")))
}

func (k *fakeKubelet) last() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.requests) == 0 {
		return ""
	}
	return k.requests[len(k.requests)-1]
}

func (k *fakeKubelet) openFollows() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.follows
}

func (k *fakeKubelet) serve(w http.ResponseWriter, r *http.Request) {
	k.record(r)
	switch {
	case strings.HasPrefix(r.URL.Path, "/containerLogs/"):
		if strings.HasSuffix(r.URL.Path, "/broken") {
			http.Error(w, "container broken is waiting to start", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "log of %s\n", r.URL.Path)
		if r.URL.Query().Get("follow") != "true" {
			return
		}
		w.(http.Flusher).Flush()
		k.mu.Lock()
		k.follows++
		k.mu.Unlock()
		<-r.Context().Done() // until the apiserver hangs up
		k.mu.Lock()
		k.follows--
		k.mu.Unlock()
	case strings.HasPrefix(r.URL.Path, "/exec/"), strings.HasPrefix(r.URL.Path, "/attach/"), strings.HasPrefix(r.URL.Path, "/portForward/"):
		if r.Header.Get("Upgrade") == "" {
			http.Error(w, "upgrade required", http.StatusBadRequest)
			return
		}
		if r.Header.Get("Upgrade") == "websocket" {
			http.Error(w, "websocket not supported", http.StatusBadRequest) // a kubelet older than v5 WebSocket
			return
		}
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\nX-Stream-Path: %s\r\n\r\n", r.Header.Get("Upgrade"), r.URL.RequestURI())
		if buf.Flush() != nil {
			return
		}
		_, _ = io.Copy(conn, buf) // echo until the apiserver closes
	default:
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "kubelet %s %s", r.Method, r.URL.RequestURI())
	}
}

// proxyEnv is hacp configured with a kubelet client certificate, a node whose kubelet is a
// fakeKubelet, and pods on it.
type proxyEnv struct {
	s       *server.Server
	cs      *kubernetes.Clientset
	http    *httpEnv
	kubelet *fakeKubelet
	ctx     context.Context
}

func newProxyEnv(t *testing.T, mutate ...func(*server.Config)) *proxyEnv {
	t.Helper()
	ca := testpki.NewCA(t, "kubelet-ca")
	dir := t.TempDir()
	certPEM, keyPEM := ca.Client(t, "kube-apiserver-kubelet-client")
	certFile, keyFile := testpki.WriteFile(t, dir, "kc.crt", certPEM), testpki.WriteFile(t, dir, "kc.key", keyPEM)
	caFile := testpki.WriteFile(t, dir, "ca.crt", ca.PEM)
	s := servertest.New(t, func(c *server.Config) {
		c.KubeletClientCertificate, c.KubeletClientKey, c.KubeletCertificateAuthority = certFile, keyFile, caFile
		c.KubeletPreferredAddressType = []string{"InternalIP", "Hostname"}
		c.ProxyAllowLoopback = true
		for _, m := range mutate {
			m(c)
		}
	})
	e := &proxyEnv{s: s, cs: kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s)), http: newHTTPEnv(t, s), kubelet: newFakeKubelet(t, ca)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	e.ctx = ctx
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	node, err := e.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n1.invalid"}, {Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(e.kubelet.port)
	if _, err := e.cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "two"}, Spec: corev1.PodSpec{NodeName: "n1",
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.36"}},
			Containers:     []corev1.Container{{Name: "a", Image: "nginx:1.27"}, {Name: "broken", Image: "nginx:1.27"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "pending"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}},
	} {
		if _, err := e.cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// upgrade opens a raw TLS connection to hacp as admin and asks path to switch to proto; it
// returns the connection (with its reader) after the response's head, and the status code.
func (e *proxyEnv) upgrade(t *testing.T, method, path, proto string, header map[string]string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	conn, req := e.sendUpgrade(t, method, path, proto, header)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		t.Fatal(err)
	}
	return conn, br, resp
}

// sendUpgrade opens a raw TLS connection to hacp as admin and sends a request asking path
// to switch to proto, without waiting for the answer.
func (e *proxyEnv) sendUpgrade(t *testing.T, method, path, proto string, header map[string]string) (net.Conn, *http.Request) {
	t.Helper()
	u, _ := url.Parse(e.s.URL())
	conn, err := tls.Dial("tcp", u.Host, e.s.Certs().ClientTLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(method, e.s.URL()+path, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", proto)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if err := req.Write(conn); err != nil {
		conn.Close()
		t.Fatal(err)
	}
	return conn, req
}

// waitUntil polls cond until it holds, failing with what after a minute.
func waitUntil(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(time.Minute); ; {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, last)
		}
		time.Sleep(20 * time.Millisecond) // poll
	}
}

func statusOf(t *testing.T, body []byte) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("not a Status (%v): %s", err, body)
	}
	return st
}

// TestProxySubresourcesKubelet: pods/log, exec, attach, portforward and nodes/proxy reach the
// node's kubelet (found from the Node's InternalIP and kubelet port) with the apiserver's
// kubelet client certificate, never with the caller's credentials, and answer upstream's
// errors for what cannot be connected.
func TestProxySubresourcesKubelet(t *testing.T) {
	// With an audit policy, so that requests go through the audit filter's response writer.
	auditDir := t.TempDir()
	policy := testpki.WriteFile(t, auditDir, "policy.yaml", []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"))
	e := newProxyEnv(t, func(c *server.Config) {
		c.AuditPolicyFile, c.AuditLogPath = policy, filepath.Join(auditDir, "audit.log")
	})
	k := e.kubelet

	t.Run("log options", func(t *testing.T) {
		tail, limit, since := int64(3), int64(100), int64(60)
		b, err := e.cs.CoreV1().Pods("default").GetLogs("two", &corev1.PodLogOptions{Container: "a", TailLines: &tail, LimitBytes: &limit,
			SinceSeconds: &since, Timestamps: true, Previous: true}).DoRaw(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != "log of /containerLogs/default/two/a\n" {
			t.Fatalf("log body %q", b)
		}
		want := "GET /containerLogs/default/two/a?limitBytes=100&previous=true&sinceSeconds=60&tailLines=3&timestamps=true client=kube-apiserver-kubelet-client auth=\"\""
		if got := k.last(); got != want {
			t.Fatalf("kubelet saw %q, want %q", got, want)
		}
		// One container: it is the default.
		if b, err := e.cs.CoreV1().Pods("default").GetLogs("p", &corev1.PodLogOptions{}).DoRaw(e.ctx); err != nil || string(b) != "log of /containerLogs/default/p/c\n" {
			t.Fatalf("log of the only container: %q %v", b, err)
		}
		// Not scheduled: empty, as upstream.
		if b, err := e.cs.CoreV1().Pods("default").GetLogs("pending", &corev1.PodLogOptions{}).DoRaw(e.ctx); err != nil || len(b) != 0 {
			t.Fatalf("log of a pending pod: %q %v", b, err)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			method, path string
			code         int
			msg          string
		}{
			{"GET", "/api/v1/namespaces/default/pods/two/log", 400, "a container name must be specified for pod two, choose one of: [a broken] or one of the init containers: [init]"},
			{"GET", "/api/v1/namespaces/default/pods/two/log?container=nope", 400, "container nope is not valid for pod two"},
			{"GET", "/api/v1/namespaces/default/pods/two/log?container=broken", 400, "container broken is waiting to start"},
			{"GET", "/api/v1/namespaces/default/pods/p/log?tailLines=-1", 422, "tailLines: Invalid value: -1: must be greater than or equal to 0"},
			{"GET", "/api/v1/namespaces/default/pods/p/log?limitBytes=0", 422, "limitBytes: Invalid value: 0: must be greater than 0"},
			{"GET", "/api/v1/namespaces/default/pods/p/log?follow=maybe", 400, "follow"},
			{"GET", "/api/v1/namespaces/default/pods/nope/log", 404, `pods "nope" not found`},
			{"POST", "/api/v1/namespaces/default/pods/pending/exec?command=ls&stdout=true", 400, "pod pending does not have a host assigned"},
			{"POST", "/api/v1/namespaces/default/pods/two/exec?command=ls&stdout=true&container=nope", 400, "container nope is not valid for pod two"},
			{"POST", "/api/v1/namespaces/default/pods/p/portforward?ports=0", 400, "invalid port"},
			{"POST", "/api/v1/namespaces/default/pods/p/exec?command=ls&stdout=true", 400, "Upgrade request required"},
			{"POST", "/api/v1/namespaces/default/pods/p/exec?command=ls&stdout=maybe", 400, "stdout"},
			{"GET", "/api/v1/nodes/nope/proxy/healthz", 404, `nodes "nope" not found`},
			{"GET", "/api/v1/nodes/a:b:c:d/proxy/", 400, "invalid node request"},
			{"PUT", "/api/v1/namespaces/default/pods/p/log", 405, "not allow"},
		} {
			resp, body := e.http.do(e.http.admin, tc.method, tc.path, "", nil, nil)
			st := statusOf(t, body)
			if resp.StatusCode != tc.code || int(st.Code) != tc.code || !strings.Contains(st.Message, tc.msg) {
				t.Errorf("%s %s: %d %s, want %d %q", tc.method, tc.path, resp.StatusCode, body, tc.code, tc.msg)
			}
		}
	})

	t.Run("nodes/proxy", func(t *testing.T) {
		resp, body := e.http.do(e.http.admin, "GET", "/api/v1/nodes/n1/proxy/stats/summary/?only=cpu", "", nil, map[string]string{"Authorization": "Bearer caller-token"})
		if resp.StatusCode != 200 || string(body) != "kubelet GET /stats/summary/?only=cpu" {
			t.Fatalf("nodes/proxy: %d %q", resp.StatusCode, body)
		}
		if got := k.last(); !strings.Contains(got, "client=kube-apiserver-kubelet-client auth=\"\"") {
			t.Fatalf("kubelet saw %q: want the apiserver's certificate and no caller token", got)
		}
		// Without a trailing slash after proxy: a redirect to it, as upstream.
		noRedirect := &http.Client{Transport: e.http.admin.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, _ = e.http.do(noRedirect, "GET", "/api/v1/nodes/n1/proxy?x=1", "", nil, nil)
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/api/v1/nodes/n1/proxy/?x=1" {
			t.Fatalf("nodes/n1/proxy: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		resp, body = e.http.do(e.http.admin, "POST", "/api/v1/nodes/https:n1:"+strconv.Itoa(k.port)+"/proxy/", "", nil, nil)
		if resp.StatusCode != 200 || string(body) != "kubelet POST /" {
			t.Fatalf("nodes/https:n1:port/proxy/: %d %q", resp.StatusCode, body)
		}
	})

	t.Run("exec upgrade", func(t *testing.T) {
		for _, sub := range []string{"exec?container=a&command=sh&command=-c&command=echo+hi&stdin=true&stdout=true&stderr=false&tty=1", "attach?container=a&stdout=true", "portforward?ports=80&ports=8080"} {
			path := "/api/v1/namespaces/default/pods/two/" + sub
			conn, br, resp := e.upgrade(t, "POST", path, "SPDY/3.1", map[string]string{"X-Stream-Protocol-Version": "v4.channel.k8s.io"})
			if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Upgrade") != "SPDY/3.1" {
				conn.Close()
				t.Fatalf("%s: %s", path, resp.Status)
			}
			// The kubelet gets the options in its own form.
			wantPath := map[string]string{"exec": "/exec/default/two/a?command=sh&command=-c&command=echo+hi&input=1&output=1&tty=1",
				"attach": "/attach/default/two/a?output=1", "portforward": "/portForward/default/two?port=80&port=8080"}[strings.Split(sub, "?")[0]]
			if got := resp.Header.Get("X-Stream-Path"); got != wantPath {
				t.Errorf("%s reached the kubelet at %q, want %q", sub, got, wantPath)
			}
			for _, msg := range []string{"hello\n", strings.Repeat("x", 100000) + "\n"} {
				if _, err := conn.Write([]byte(msg)); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, len(msg))
				if _, err := io.ReadFull(br, got); err != nil || string(got) != msg {
					t.Fatalf("%s echo: %d bytes, %v", sub, len(got), err)
				}
			}
			conn.Close()
		}
		// A v5 WebSocket exec is the apiserver's to answer (it translates to SPDY for the
		// kubelet, which this stand-in does not speak; kubectl then reads the error on the
		// error channel). Older WebSocket protocols go to the kubelet, whose refusal comes back.
		ws := map[string]string{"Sec-WebSocket-Protocol": "v5.channel.k8s.io", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
		conn, _, resp := e.upgrade(t, "GET", "/api/v1/namespaces/default/pods/p/exec?command=ls&stdout=true", "websocket", ws)
		conn.Close()
		if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Protocol") != "v5.channel.k8s.io" {
			t.Fatalf("v5 websocket exec: %s %v", resp.Status, resp.Header)
		}
		ws["Sec-WebSocket-Protocol"] = "v4.channel.k8s.io"
		conn, _, resp = e.upgrade(t, "GET", "/api/v1/namespaces/default/pods/p/exec?command=ls&stdout=true", "websocket", ws)
		conn.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("v4 websocket to a kubelet without it: %s", resp.Status)
		}
	})
}

// TestProxySubresourcesStreamsEnd: a closed stream leaves no goroutine behind in the
// apiserver, whether the client or the kubelet hangs up, and a kubelet that never answers
// holds nothing once its caller gives up.
func TestProxySubresourcesStreamsEnd(t *testing.T) {
	e := newProxyEnv(t)
	k := e.kubelet
	// A warm-up round, so that connections and pools that stay are in the baseline.
	round := func(n int) {
		var conns []net.Conn
		for range n {
			conn, br, resp := e.upgrade(t, "POST", "/api/v1/namespaces/default/pods/p/exec?command=sh&stdin=true&stdout=true", "SPDY/3.1", nil)
			if resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("exec: %s", resp.Status)
			}
			if _, err := conn.Write([]byte("ping\n")); err != nil {
				t.Fatal(err)
			}
			if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
				t.Fatalf("echo %q %v", line, err)
			}
			conns = append(conns, conn)
		}
		waitUntil(t, "streams open", func() (bool, string) {
			open := e.s.Connector().Tracker.Open()
			return open == n, fmt.Sprintf("%d of %d open", open, n)
		})
		var cancels []context.CancelFunc
		for range n {
			ctx, cancel := context.WithCancel(e.ctx)
			cancels = append(cancels, cancel)
			rc, err := e.cs.CoreV1().Pods("default").GetLogs("p", &corev1.PodLogOptions{Follow: true}).Stream(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if line, err := bufio.NewReader(rc).ReadString('\n'); err != nil || line != "log of /containerLogs/default/p/c\n" {
				t.Fatalf("follow: %q %v", line, err)
			}
			defer rc.Close()
		}
		waitUntil(t, "follows open", func() (bool, string) {
			return k.openFollows() == n, fmt.Sprintf("%d of %d follows at the kubelet", k.openFollows(), n)
		})
		for _, c := range conns {
			c.Close()
		}
		for _, c := range cancels {
			c()
		}
		waitUntil(t, "streams closed", func() (bool, string) {
			open, follows := e.s.Connector().Tracker.Open(), k.openFollows()
			return open == 0 && follows == 0, fmt.Sprintf("%d streams and %d follows open", open, follows)
		})
	}
	round(2)
	e.http.admin.CloseIdleConnections()
	base := runtime.NumGoroutine()
	round(20)
	e.http.admin.CloseIdleConnections()
	// 20 exec streams and 20 log follows took at least two goroutines each in the
	// apiserver; all must be gone (a few may come and go with the server's own work).
	waitUntil(t, "goroutines back", func() (bool, string) {
		n := runtime.NumGoroutine()
		return n <= base+5, fmt.Sprintf("%d goroutines, %d before the streams", n, base)
	})

	// A kubelet that accepts connections and never answers: the caller gives up, and the
	// apiserver lets go of it too.
	dead := testenv.NewSilentListener(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dead"}}
	node, err := e.cs.CoreV1().Nodes().Create(e.ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(dead.Addr().(*net.TCPAddr).Port)
	if _, err := e.cs.CoreV1().Nodes().UpdateStatus(e.ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stuck"}, Spec: corev1.PodSpec{NodeName: "dead", Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}
	if _, err := e.cs.CoreV1().Pods("default").Create(e.ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.http.admin.CloseIdleConnections()
	base = runtime.NumGoroutine()
	for range 10 {
		before := dead.Accepted()
		conn, _ := e.sendUpgrade(t, "POST", "/api/v1/namespaces/default/pods/stuck/exec?command=ls&stdout=true", "SPDY/3.1", nil)
		ctx, cancel := context.WithCancel(e.ctx)
		done := make(chan error, 1)
		go func() {
			_, err := e.cs.CoreV1().Pods("default").GetLogs("stuck", &corev1.PodLogOptions{}).DoRaw(ctx)
			done <- err
		}()
		waitUntil(t, "kubelet connections", func() (bool, string) {
			n := dead.Accepted() - before
			return n >= 2, fmt.Sprintf("%d accepted", n)
		})
		conn.Close()
		cancel()
		if err := <-done; err == nil {
			t.Fatal("log of a pod on a dead kubelet succeeded")
		}
	}
	e.http.admin.CloseIdleConnections()
	waitUntil(t, "goroutines back after a dead kubelet", func() (bool, string) {
		n := runtime.NumGoroutine()
		return n <= base+5, fmt.Sprintf("%d goroutines, %d before", n, base)
	})
}

// TestProxySubresourcesBackends: services/proxy picks an endpoint that is its pod's IP and
// port by name or number; pods/proxy goes to the pod's IP; both pass the path, query and
// method through, and rewrite links in HTML and redirects under the proxy path. The backend
// has a global unicast address (10.77.91.2), the only kind upstream proxies to, so the test
// runs again inside a namespace of its own that has it.
func TestProxySubresourcesBackends(t *testing.T) {
	addr, inHost := netns.RerunInHost(t, "hpb-", "10.77.91")
	if !inHost {
		return
	}
	e := newProxyEnv(t, func(c *server.Config) { c.ProxyAllowLoopback = false })
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Access-Control-Allow-Origin", "*")
			fmt.Fprintf(w, `<html><body><a href="/other?x=1">root link</a> <img src="rel.png"> <a href="http://example.invalid/x">away</a> forwarded=%s</body></html>`,
				r.Header.Get("X-Forwarded-Uri"))
			return
		case "/moved":
			http.Redirect(w, r, "/page", http.StatusFound)
			return
		}
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "backend %s %s body=%s auth=%q", r.Method, r.URL.RequestURI(), b, r.Header.Get("Authorization"))
	}))
	ln, err := net.Listen("tcp", net.JoinHostPort(addr.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	backend.Listener.Close()
	backend.Listener = ln
	backend.Start()
	t.Cleanup(backend.Close)
	port := ln.Addr().(*net.TCPAddr).Port

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}
	pod, err = e.cs.CoreV1().Pods("default").Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.PodIP = addr.String()
	pod.Status.PodIPs = []corev1.PodIP{{IP: addr.String()}}
	if _, err := e.cs.CoreV1().Pods("default").UpdateStatus(e.ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "other", Port: 81}}}}
	if _, err := e.cs.CoreV1().Services("default").Create(e.ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eps := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: addr.String(), TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0"}}},
		Ports:     []corev1.EndpointPort{{Name: "http", Port: int32(port)}},
	}, {
		// Not a pod's address: never proxied to.
		Addresses: []corev1.EndpointAddress{{IP: addr.String()}},
		Ports:     []corev1.EndpointPort{{Name: "other", Port: int32(port)}},
	}}}
	if _, err := e.cs.CoreV1().Endpoints("default").Create(e.ctx, eps, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		method, path string
		code         int
		want         string
	}{
		{"GET", "/api/v1/namespaces/default/services/web:http/proxy/hello/?q=1", 200, `backend GET /hello/?q=1 body= auth=""`},
		{"POST", "/api/v1/namespaces/default/services/http:web:80/proxy/a/b", 200, `backend POST /a/b body=payload auth=""`},
		{"DELETE", "/api/v1/namespaces/default/pods/web-0:" + strconv.Itoa(port) + "/proxy/x", 200, `backend DELETE /x body= auth=""`},
		{"GET", "/api/v1/namespaces/default/services/web:other/proxy/", 503, `no endpoints available for service \"web:other\"`},
		{"GET", "/api/v1/namespaces/default/services/web:82/proxy/", 503, `no service port 82 found for service \"web\"`},
		{"GET", "/api/v1/namespaces/default/services/nope/proxy/", 404, `services \"nope\" not found`},
		{"GET", "/api/v1/namespaces/default/services/ftp:web:http/proxy/", 400, `invalid service request`},
		{"GET", "/api/v1/namespaces/default/pods/p:80/proxy/", 400, `address not allowed`}, // no IP yet
	} {
		body := ""
		if tc.method == "POST" {
			body = "payload"
		}
		resp, got := e.http.do(e.http.admin, tc.method, tc.path, "text/plain", []byte(body), map[string]string{"Authorization": "Bearer caller-token"})
		if resp.StatusCode != tc.code || !strings.Contains(string(got), tc.want) {
			t.Errorf("%s %s: %d %s, want %d %s", tc.method, tc.path, resp.StatusCode, got, tc.code, tc.want)
		}
	}

	// HTML comes back with its links to the backend's root under the proxy path, as
	// upstream's proxy transport rewrites them; redirects likewise; CORS headers are dropped.
	const svcPrefix = "/api/v1/namespaces/default/services/web:http/proxy"
	resp, got := e.http.do(e.http.admin, "GET", svcPrefix+"/page", "", nil, nil)
	for _, want := range []string{`href="` + svcPrefix + `/other?x=1"`, `src="rel.png"`, `href="http://example.invalid/x"`, "forwarded=" + svcPrefix + "/page"} {
		if resp.StatusCode != 200 || !strings.Contains(string(got), want) {
			t.Errorf("services/proxy HTML: %d %s, want %s in it", resp.StatusCode, got, want)
		}
	}
	if v := resp.Header.Get("Access-Control-Allow-Origin"); v != "" {
		t.Errorf("services/proxy passed the backend's Access-Control-Allow-Origin %q", v)
	}
	podPrefix := "/api/v1/namespaces/default/pods/web-0:" + strconv.Itoa(port) + "/proxy"
	resp, got = e.http.do(e.http.admin, "GET", podPrefix+"/page", "", nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(got), `href="`+podPrefix+`/other?x=1"`) {
		t.Errorf("pods/proxy HTML: %d %s", resp.StatusCode, got)
	}
	noFollow := *e.http.admin
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, _ = e.http.do(&noFollow, "GET", svcPrefix+"/moved", "", nil, nil)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != svcPrefix+"/page" {
		t.Errorf("services/proxy redirect: %d Location %q, want %s/page", resp.StatusCode, loc, svcPrefix)
	}
}

// TestProxySubresourcesRBAC: the subresources authorize as upstream: get on pods/log, create
// on pods/exec (POST), get on nodes/proxy.
func TestProxySubresourcesRBAC(t *testing.T) {
	e := newProxyEnv(t)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "logs"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"get"}}}}
	if _, err := e.cs.RbacV1().Roles("default").Create(e.ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "logs"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "logs"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"}}}
	if _, err := e.cs.RbacV1().RoleBindings("default").Create(e.ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	as := map[string]string{"Impersonate-User": "alice"}
	waitUntil(t, "alice reads logs", func() (bool, string) {
		resp, body := e.http.do(e.http.admin, "GET", "/api/v1/namespaces/default/pods/p/log", "", nil, as)
		return resp.StatusCode == 200, fmt.Sprintf("%d %s", resp.StatusCode, body)
	})
	for _, tc := range []struct{ method, path, msg string }{
		{"POST", "/api/v1/namespaces/default/pods/p/exec?command=ls", `cannot create resource "pods/exec"`},
		{"POST", "/api/v1/namespaces/default/pods/p/portforward", `cannot create resource "pods/portforward"`},
		{"GET", "/api/v1/nodes/n1/proxy/healthz", `cannot get resource "nodes/proxy"`},
	} {
		resp, body := e.http.do(e.http.admin, tc.method, tc.path, "", nil, as)
		if st := statusOf(t, body); resp.StatusCode != 403 || st.Reason != metav1.StatusReasonForbidden || !strings.Contains(st.Message, tc.msg) {
			t.Errorf("%s %s as alice: %d %s, want 403 %q", tc.method, tc.path, resp.StatusCode, body, tc.msg)
		}
	}
	// get on pods/exec is not enough for a WebSocket exec (a GET): it needs create, as upstream.
	conn, _, resp := e.upgrade(t, "GET", "/api/v1/namespaces/default/pods/p/exec?command=ls&stdout=true", "websocket",
		map[string]string{"Impersonate-User": "alice", "Sec-WebSocket-Protocol": "v5.channel.k8s.io", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
	body, _ := io.ReadAll(resp.Body)
	conn.Close()
	if st := statusOf(t, body); resp.StatusCode != 403 || !strings.Contains(st.Message, `cannot create resource "pods/exec"`) {
		t.Fatalf("WebSocket exec with only get on pods/exec: %d %s", resp.StatusCode, body)
	}
	if _, err := e.cs.CoreV1().Pods("default").GetLogs("p", &corev1.PodLogOptions{}).DoRaw(e.ctx); apierrors.IsForbidden(err) {
		t.Fatal("admin was refused")
	}
}

// TestProxySubresourcesAdmission: a connect request goes through admission as a CONNECT with
// its options object, and a webhook can refuse it.
func TestProxySubresourcesAdmission(t *testing.T) {
	e := newProxyEnv(t)
	var mu sync.Mutex
	var seen []string
	hook, caPEM := newTLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rev admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&rev); err != nil || rev.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		var opts corev1.PodExecOptions
		_ = json.Unmarshal(rev.Request.Object.Raw, &opts)
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s/%s %s %v", rev.Request.Operation, rev.Request.Resource.Resource, rev.Request.SubResource, rev.Request.Kind.Kind, opts.Command))
		mu.Unlock()
		resp := &admissionv1.AdmissionResponse{UID: rev.Request.UID, Allowed: !slices.Contains(opts.Command, "forbidden")}
		if !resp.Allowed {
			resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: "no forbidden commands"}
		}
		rev.Response, rev.Request = resp, nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&rev)
	}))
	vwc := &admissionregv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "exec"},
		Webhooks: []admissionregv1.ValidatingWebhook{{
			Name:         "exec.hacp.test",
			ClientConfig: admissionregv1.WebhookClientConfig{URL: ptr.To(hook.URL + "/"), CABundle: caPEM},
			Rules: []admissionregv1.RuleWithOperations{{Operations: []admissionregv1.OperationType{admissionregv1.Connect},
				Rule: admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/exec"}}}},
			SideEffects:             ptr.To(admissionregv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}}}
	if _, err := e.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(e.ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The configuration reaches the server by watch.
	waitUntil(t, "the webhook refuses", func() (bool, string) {
		conn, _, resp := e.upgrade(t, "POST", "/api/v1/namespaces/default/pods/p/exec?command=forbidden&stdout=true", "SPDY/3.1", nil)
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		conn.Close()
		return resp.StatusCode == http.StatusForbidden && strings.Contains(string(body), "no forbidden commands"), fmt.Sprintf("%s %s", resp.Status, body)
	})
	conn, _, resp := e.upgrade(t, "POST", "/api/v1/namespaces/default/pods/p/exec?command=ls&stdout=true", "SPDY/3.1", nil)
	conn.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("allowed exec: %s", resp.Status)
	}
	mu.Lock()
	defer mu.Unlock()
	if last := seen[len(seen)-1]; last != "CONNECT pods/exec PodExecOptions [ls]" {
		t.Fatalf("the webhook saw %q", last)
	}
}
