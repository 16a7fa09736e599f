package aggregator_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// extensionServer is a minimal extension API server for fake.example.com/v1: it answers its
// discovery, echoes what it was sent on /echo, and speaks an upgraded echo protocol on
// /upgrade.
func extensionServer(t *testing.T) (caPEM []byte, port int) {
	t.Helper()
	dir := t.TempDir()
	caPEM, certFile, keyFile := servingCert(t, dir, "fake.ext.svc", "127.0.0.1")
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /apis/fake.example.com/v1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"fake.example.com/v1","resources":[]}`)
	})
	mux.HandleFunc("/apis/fake.example.com/v1/echo", func(w http.ResponseWriter, r *http.Request) {
		client := ""
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			client = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"headers": r.Header, "clientCert": client, "proto": r.Proto, "query": r.URL.RawQuery})
	})
	mux.HandleFunc("/apis/fake.example.com/v1/upgrade", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "want Upgrade: echo", http.StatusBadRequest)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprint(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = rw.Flush()
		line, err := rw.ReadString('\n')
		if err != nil {
			return
		}
		fmt.Fprint(rw, "echo: "+line)
		_ = rw.Flush()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert, NextProtos: []string{"h2", "http/1.1"}},
		ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return caPEM, ln.Addr().(*net.TCPAddr).Port
}

// register points an APIService for fake.example.com/v1 at loopback port through a Service
// and Endpoints in namespace "ext", and waits until it is available. The Endpoints hold addr
// (an endpoint may not be loopback), where a relay to the port listens.
func register(t *testing.T, cfg *rest.Config, caPEM []byte, addr netip.Addr, port int) {
	t.Helper()
	port = netns.ForwardTCP(t, addr, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ext"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services("ext").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "fake"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8443, TargetPort: intstr.FromInt32(int32(port))}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 the aggregator resolves Services through core/v1 Endpoints, as upstream's
	eps := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "fake"}, Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: addr.String()}}, Ports: []corev1.EndpointPort{{Port: int32(port)}}}}}
	if _, err := cs.CoreV1().Endpoints("ext").Create(ctx, eps, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1.fake.example.com"},
		"spec": map[string]any{"group": "fake.example.com", "version": "v1", "groupPriorityMinimum": int64(100), "versionPriority": int64(10),
			"caBundle": caPEM, "service": map[string]any{"namespace": "ext", "name": "fake", "port": int64(8443)}}}}
	apiServices := dynamic.NewForConfigOrDie(cfg).Resource(apiServicesGVR)
	if _, err := apiServices.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() (bool, string) {
		u, err := apiServices.Get(ctx, "v1.fake.example.com", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st, reason := availability(u)
		return st == "True", fmt.Sprintf("Available=%s (%s)", st, reason)
	})
}

// TestProxyIdentity: the extension server sees the caller (here an impersonated user with
// groups and extra), never the caller's own credentials, on a connection authenticated with
// the front-proxy client certificate, over HTTP/2.
func TestProxyIdentity(t *testing.T) {
	addr, inHost := netns.RerunInHost(t, "hai-", "10.77.94") // the Service's endpoint: not loopback
	if !inHost {
		return
	}
	s := servertest.New(t, nil)
	caPEM, port := extensionServer(t)
	cfg := servertest.RestConfig(t, s)
	register(t, cfg, caPEM, addr, port)

	imp := rest.CopyConfig(cfg)
	imp.Impersonate = rest.ImpersonationConfig{UserName: "carol", Groups: []string{"system:masters", "team-a"}, Extra: map[string][]string{"scopes": {"read", "write"}}}
	client, err := rest.HTTPClientFor(imp)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(s.URL() + "/apis/fake.example.com/v1/echo?x=1&y=2")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Headers    http.Header `json:"headers"`
		ClientCert string      `json:"clientCert"`
		Proto      string      `json:"proto"`
		Query      string      `json:"query"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("echo: %d %v", resp.StatusCode, err)
	}
	h := got.Headers
	if h.Get("X-Remote-User") != "carol" || strings.Join(h.Values("X-Remote-Group"), ",") != "system:masters,team-a,system:authenticated" ||
		strings.Join(h.Values("X-Remote-Extra-Scopes"), ",") != "read,write" {
		t.Fatalf("identity headers: %v", h)
	}
	for k := range h {
		if strings.HasPrefix(k, "Impersonate-") || k == "Authorization" {
			t.Fatalf("caller's credentials passed on: %s: %v", k, h[k])
		}
	}
	if got.ClientCert != "front-proxy-client" || got.Proto != "HTTP/2.0" || got.Query != "x=1&y=2" {
		t.Fatalf("client certificate %q, protocol %q, query %q", got.ClientCert, got.Proto, got.Query)
	}
}

// TestProxyUpgrade: an upgraded connection (as kubectl's exec and port-forward use) is
// spliced through to the extension server.
func TestProxyUpgrade(t *testing.T) {
	addr, inHost := netns.RerunInHost(t, "hau-", "10.77.95") // the Service's endpoint: not loopback
	if !inHost {
		return
	}
	s := servertest.New(t, nil)
	caPEM, port := extensionServer(t)
	cfg := servertest.RestConfig(t, s)
	register(t, cfg, caPEM, addr, port)

	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg.NextProtos = []string{"http/1.1"}
	conn, err := tls.Dial("tcp", s.Addr(), tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	fmt.Fprintf(conn, "GET /apis/fake.example.com/v1/upgrade HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n", s.Addr())
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("upgrade: %s %s", resp.Status, b)
	}
	fmt.Fprint(conn, "hello\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "echo: hello\n" {
		t.Fatalf("through the upgraded connection: %q %v", line, err)
	}
}
