package proxy

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
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilproxy "k8s.io/apimachinery/pkg/util/proxy"
)

// Upstream's timeouts for connections to kubelets and proxied backends.
const (
	dialTimeout         = 30 * time.Second
	tlsHandshakeTimeout = 10 * time.Second
	keepAlive           = 30 * time.Second
)

// Handler proxies one request to Location, the way kube-apiserver's UpgradeAwareHandler
// does: an ordinary request through Transport (responses stream, flushed as they come), and a
// request asking for a protocol upgrade (SPDY, WebSocket) by dialling the backend, sending the
// request, and on 101 Switching Protocols hijacking the client's connection and copying bytes
// both ways until either side closes. The handler does not look inside the upgraded protocol.
type Handler struct {
	// Location is the backend URL. An upgrade goes to it as it is; an ordinary request keeps
	// its own query (upstream's UpgradeAwareHandler does both).
	Location *url.URL
	// UpgradeRequired refuses requests that do not ask for an upgrade (exec, attach,
	// portforward) with 400.
	UpgradeRequired bool
	// Transport carries ordinary requests.
	Transport http.RoundTripper
	// TLS is the client TLS configuration of https backends for upgrades, which dial
	// themselves; it should match Transport's.
	TLS *tls.Config
	// DialTimeout bounds connecting to the backend and the TLS handshake; 0 is 30s.
	DialTimeout time.Duration
	// Tracker, when set, counts the upgraded connections open now.
	Tracker *Tracker
	// RewriteLinks makes ordinary responses look as if served under the request's path, as
	// upstream's proxy transport does for pods, nodes and services proxy: links in HTML and
	// Location headers that point to the backend get the path prefix, X-Forwarded-Uri tells
	// the backend where it is mounted, and CORS headers are dropped.
	RewriteLinks bool
}

// Tracker counts the connections a set of Handlers has open, for tests and metrics.
type Tracker struct {
	mu   sync.Mutex
	open int
}

// Open reports the upgraded connections being copied now.
func (t *Tracker) Open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.open
}

func (t *Tracker) add(d int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.open += d
	t.mu.Unlock()
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isUpgrade(r) {
		h.serveUpgrade(w, r)
		return
	}
	if h.UpgradeRequired {
		writeStatus(w, apierrors.NewBadRequest("Upgrade request required"))
		return
	}
	transport := h.Transport
	if h.RewriteLinks {
		transport = rewritingTransport(r.URL, h.Location.Path, transport)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = h.target(r)
			pr.Out.Host = ""
			stripCredentials(pr.Out.Header)
		},
		Transport:     transport,
		FlushInterval: -1, // logs -f, watches through the proxy: every write goes out at once
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return // the client went away
			}
			var status apierrors.APIStatus
			if errors.As(err, &status) {
				writeStatus(w, err) // the rewriting transport's 503, as upstream
				return
			}
			writeStatus(w, unknownError(fmt.Errorf("error trying to reach service: %w", err)))
		},
	}
	rp.ServeHTTP(w, r)
}

// rewritingTransport is upstream's default proxy transport (UpgradeAwareHandler with
// WrapTransport) for a request to reqURL proxied to a backend path: apimachinery's link
// rewriting Transport, under the prefix of reqURL's path that stands for the backend's root,
// with CORS headers removed from the response.
func rewritingTransport(reqURL *url.URL, backendPath string, rt http.RoundTripper) http.RoundTripper {
	suffix := backendPath
	if strings.HasSuffix(reqURL.Path, "/") && !strings.HasSuffix(suffix, "/") {
		suffix += "/"
	}
	return corsRemoving{&utilproxy.Transport{
		Scheme: reqURL.Scheme, Host: reqURL.Host, PathPrepend: strings.TrimSuffix(reqURL.Path, suffix), RoundTripper: rt,
	}}
}

// corsRemoving drops the backend's CORS headers: the apiserver's own CORS policy applies.
type corsRemoving struct{ http.RoundTripper }

func (t corsRemoving) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.RoundTripper.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	for _, h := range []string{"Access-Control-Allow-Credentials", "Access-Control-Allow-Headers", "Access-Control-Allow-Methods", "Access-Control-Allow-Origin"} {
		resp.Header.Del(h)
	}
	return resp, nil
}

// target is the backend URL of an ordinary request: Location with r's query.
func (h *Handler) target(r *http.Request) *url.URL {
	u := *h.Location
	u.RawQuery = r.URL.RawQuery
	return &u
}

// isUpgrade reports a request asking to switch protocols.
func isUpgrade(r *http.Request) bool {
	for _, v := range r.Header.Values("Connection") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return r.Header.Get("Upgrade") != ""
			}
		}
	}
	return false
}

// stripCredentials removes what authenticated the caller to this apiserver: the backend
// authenticates the apiserver (by its client certificate), never with the caller's token.
func stripCredentials(h http.Header) {
	h.Del("Authorization")
	for k := range h {
		if strings.HasPrefix(k, "Impersonate-") {
			delete(h, k)
		}
	}
}

// serveUpgrade dials the backend, forwards the upgrade request and, when the backend
// switches protocols, splices the two connections.
func (h *Handler) serveUpgrade(w http.ResponseWriter, r *http.Request) {
	h.serveUpgradeWith(w, r, nil, nil)
}

// serveUpgradeWith sends r (to Location) as an upgrade request to the backend. When the
// backend switches protocols, accept (if set) answers the client and returns the connection
// to splice with the backend's, and on an error has answered the client itself; without
// accept the client's connection is hijacked and given the backend's answer. When the backend
// answers otherwise, refused (if set) is told its code and the answer is passed on.
func (h *Handler) serveUpgradeWith(w http.ResponseWriter, r *http.Request, accept func(*http.Response) (net.Conn, error), refused func(code int)) {
	ctx := r.Context()
	backend, err := h.dial(ctx)
	if err != nil {
		if ctx.Err() == nil {
			writeStatus(w, unknownError(fmt.Errorf("error dialing backend: %w", err)))
		}
		return
	}
	// Until the backend answers, a client that goes away or a backend that never answers
	// must not hold this goroutine: closing the connection ends the read below.
	stop := context.AfterFunc(ctx, func() { backend.Close() })

	out := r.Clone(ctx)
	out.URL = h.Location
	out.Host = out.URL.Host
	out.RequestURI = ""
	stripCredentials(out.Header)
	if err := out.Write(backend); err != nil {
		stop()
		backend.Close()
		if ctx.Err() == nil {
			writeStatus(w, unknownError(fmt.Errorf("error proxying upgrade request: %w", err)))
		}
		return
	}
	br := bufio.NewReader(backend)
	resp, err := http.ReadResponse(br, out)
	if !stop() || err != nil {
		backend.Close()
		if err != nil && ctx.Err() == nil {
			writeStatus(w, unknownError(fmt.Errorf("error reading upgrade response: %w", err)))
		}
		return
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		// The backend refused: pass its answer on as it is.
		if refused != nil {
			refused(resp.StatusCode)
		}
		defer backend.Close()
		defer resp.Body.Close()
		defer context.AfterFunc(ctx, func() { backend.Close() })()
		copyHeader(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		return
	}
	var client net.Conn
	var fromClient io.Reader
	if accept != nil {
		client, err = accept(resp)
		if err != nil {
			backend.Close()
			return
		}
		fromClient = client
	} else {
		var clientBuf *bufio.ReadWriter
		client, clientBuf, err = http.NewResponseController(w).Hijack()
		if err != nil {
			backend.Close()
			writeStatus(w, unknownError(fmt.Errorf("unable to upgrade: %w", err)))
			return
		}
		if err := resp.Write(client); err != nil {
			client.Close()
			backend.Close()
			return
		}
		fromClient = clientBuf.Reader
	}
	defer client.Close()
	defer backend.Close()
	h.Tracker.add(1)
	defer h.Tracker.add(-1)
	splice(client, fromClient, backend, br)
}

// splice copies client to backend and backend to client until either direction ends, then
// closes both connections so that the other direction ends too, and returns when both have.
// Bytes already read into the buffered readers go first.
func splice(client net.Conn, fromClient io.Reader, backend net.Conn, fromBackend io.Reader) {
	done := make(chan struct{}, 2)
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			client.Close()
			backend.Close()
		})
	}
	go func() {
		_, _ = io.Copy(backend, fromClient)
		closeBoth()
		done <- struct{}{}
	}()
	_, _ = io.Copy(client, fromBackend)
	closeBoth()
	<-done
}

func (h *Handler) dial(ctx context.Context) (net.Conn, error) {
	host := h.Location.Host
	if h.Location.Port() == "" {
		port := "80"
		if h.Location.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(h.Location.Hostname(), port)
	}
	timeout := h.DialTimeout
	if timeout <= 0 {
		timeout = dialTimeout
	}
	d := &net.Dialer{Timeout: timeout, KeepAlive: keepAlive}
	if h.Location.Scheme != "https" {
		return d.DialContext(ctx, "tcp", host)
	}
	cfg := h.TLS.Clone()
	if cfg == nil {
		cfg = &tls.Config{}
	}
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		cfg.ServerName = h.Location.Hostname()
	}
	cfg.NextProtos = []string{"http/1.1"} // upgrades are HTTP/1.1 only
	hctx, cancel := context.WithTimeout(ctx, timeout+min(timeout, tlsHandshakeTimeout))
	defer cancel()
	td := &tls.Dialer{NetDialer: d, Config: cfg}
	return td.DialContext(hctx, "tcp", host)
}

// copyHeader adds src's headers to dst, without hop-by-hop ones.
func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		switch http.CanonicalHeaderKey(k) {
		case "Connection", "Keep-Alive", "Transfer-Encoding", "Upgrade", "Te", "Trailer", "Proxy-Connection":
			continue
		}
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
}

// unknownError is the Status kube-apiserver answers for an error that is not an API error:
// 500 with the error's text and no reason.
func unknownError(err error) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error(),
	}}
}

// writeStatus writes err as a JSON Status (the client of a proxied path asked for the
// backend's content, so there is no content type to negotiate).
func writeStatus(w http.ResponseWriter, err error) {
	var se apierrors.APIStatus
	st := metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error()}
	if errors.As(err, &se) {
		st = se.Status()
	}
	st.Kind, st.APIVersion = "Status", "v1"
	b, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(b)
}
