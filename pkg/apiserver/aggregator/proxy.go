package aggregator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/aggregator/apiregistration"
	"github.com/hacp/hacp/pkg/apiserver/request"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// backend is one service-backed APIService: where its requests go and how.
type backend struct {
	name string
	gv   schema.GroupVersion
	spec apiregistration.APIServiceSpec
	// transport speaks HTTP/2 where the server offers it; upgrades takes upgrade requests
	// (SPDY, WebSocket), which need HTTP/1.1.
	transport, upgrades *http.Transport
	err                 error // building the transports failed: every request gets a 500
	available           atomic.Bool

	mu        sync.Mutex
	discovery *apidiscoveryv2.APIVersionDiscovery // from the server's aggregated discovery
	stale     bool                                // the last fetch of discovery failed
	openapiV3 string                              // the server's /openapi/v3 URL of the group version
	openapiV2 *openAPIV2                          // the server's /openapi/v2, its group version's part
}

func newBackend(s *apiregistration.APIService, cert func() *tls.Certificate) (*backend, error) {
	b := &backend{name: s.Name, gv: schema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version}}
	s.Spec.DeepCopyInto(&b.spec)
	tlsCfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         s.Spec.Service.Name + "." + s.Spec.Service.Namespace + ".svc",
		InsecureSkipVerify: s.Spec.InsecureSkipTLSVerify, // the APIService asks for it
	}
	if len(s.Spec.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(s.Spec.CABundle) {
			b.err = errors.New("unable to load root certificates: unable to parse bytes as PEM block")
		}
		tlsCfg.RootCAs = pool
	}
	if cert != nil {
		tlsCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert(), nil }
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	b.transport = &http.Transport{
		DialContext: dialer.DialContext, TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: 10 * time.Second, MaxIdleConnsPerHost: 25, IdleConnTimeout: 90 * time.Second,
	}
	h1 := tlsCfg.Clone()
	h1.NextProtos = []string{"http/1.1"}
	b.upgrades = &http.Transport{
		DialContext: dialer.DialContext, TLSClientConfig: h1, TLSHandshakeTimeout: 10 * time.Second,
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}, // no HTTP/2
	}
	return b, b.err
}

func (b *backend) setAvailable(v bool) { b.available.Store(v) }

func (b *backend) close() {
	b.transport.CloseIdleConnections()
	b.upgrades.CloseIdleConnections()
}

// sameBackendSpec reports whether two specs reach the same server the same way.
func sameBackendSpec(a, b *apiregistration.APIServiceSpec) bool {
	if a.Group != b.Group || a.Version != b.Version || a.InsecureSkipTLSVerify != b.InsecureSkipTLSVerify ||
		string(a.CABundle) != string(b.CABundle) || a.GroupPriorityMinimum != b.GroupPriorityMinimum || a.VersionPriority != b.VersionPriority {
		return false
	}
	if (a.Service == nil) != (b.Service == nil) {
		return false
	}
	if a.Service == nil {
		return true
	}
	pa, pb := int32(443), int32(443)
	if a.Service.Port != nil {
		pa = *a.Service.Port
	}
	if b.Service.Port != nil {
		pb = *b.Service.Port
	}
	return a.Service.Namespace == b.Service.Namespace && a.Service.Name == b.Service.Name && pa == pb
}

// backendFor returns the service-backed APIService serving path, or nil: its API under
// /apis/{group}/{version} and its OpenAPI v3 document under /openapi/v3/apis/...
func (a *Aggregator) backendFor(path string) *backend {
	rest, ok := strings.CutPrefix(path, "/apis/")
	if !ok {
		if rest, ok = strings.CutPrefix(path, "/openapi/v3/apis/"); !ok {
			return nil
		}
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 || parts[1] == "" {
		return nil
	}
	return a.view.Load().byGV[schema.GroupVersion{Group: parts[0], Version: parts[1]}]
}

// proxy sends r to b's server as kube-aggregator's proxy handler does: to one of the
// Service's endpoints over TLS, authenticated as this server, on behalf of the caller.
func (a *Aggregator) proxy(w http.ResponseWriter, r *http.Request, b *backend) {
	if !b.available.Load() {
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		return
	}
	if b.err != nil {
		http.Error(w, b.err.Error(), http.StatusInternalServerError)
		return
	}
	u, ok := request.UserFrom(r.Context())
	if !ok {
		http.Error(w, "missing user", http.StatusInternalServerError)
		return
	}
	host, err := a.resolve(r.Context(), b.spec.Service)
	if err != nil {
		a.log.Warn("aggregator: resolve service", "apiservice", b.name, "err", err)
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		return
	}
	upgrade := isUpgrade(r)
	transport := b.transport
	if upgrade {
		transport = b.upgrades
	}
	if a.cfg.Stop != nil {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := a.cfg.Stop()
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		r = r.WithContext(ctx)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "https"
			pr.Out.URL.Host = host
			pr.Out.Host = host
			setAuthProxyHeaders(pr.Out.Header, u)
		},
		Transport:     transport,
		FlushInterval: -1, // watches and logs: every write goes out at once
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return // the caller went away
			}
			a.log.Warn("aggregator: proxy", "apiservice", b.name, "err", err)
			signal(a.checkNow)
			http.Error(w, "Error trying to reach service: "+err.Error(), http.StatusServiceUnavailable)
		},
	}
	rp.ServeHTTP(w, r)
}

func isUpgrade(r *http.Request) bool {
	for _, v := range r.Header.Values("Connection") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return true
			}
		}
	}
	return false
}

// setAuthProxyHeaders replaces whatever credentials the caller sent with the front-proxy
// identity headers, as client-go's transport.SetAuthProxyHeaders writes them.
func setAuthProxyHeaders(h http.Header, u *request.User) {
	for k := range h {
		ck := textproto.CanonicalMIMEHeaderKey(k)
		if ck == "Authorization" || strings.HasPrefix(ck, "X-Remote-") || strings.HasPrefix(ck, "Impersonate-") {
			delete(h, k)
		}
	}
	h.Set("X-Remote-User", u.Name)
	for _, g := range u.Groups {
		h.Add("X-Remote-Group", g)
	}
	for k, vs := range u.Extra {
		for _, v := range vs {
			h.Add("X-Remote-Extra-"+headerKeyEscape(k), v)
		}
	}
}

// headerKeyEscape percent-encodes what may not appear in a header name, and '%' itself, as
// upstream escapes extra keys.
func headerKeyEscape(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c != '%' && isTokenChar(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// resolve picks an endpoint address of the Service for port, as upstream's
// proxy.ResolveEndpoint: the Service port's name selects the Endpoints port.
func (a *Aggregator) resolve(ctx context.Context, ref *apiregistration.ServiceReference) (string, error) {
	port := int32(443)
	if ref.Port != nil {
		port = *ref.Port
	}
	obj, err := a.services.Get(ctx, ref.Namespace, ref.Name, &metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	svc := obj.(*corev1.Service)
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
	default:
		return "", fmt.Errorf("unsupported service type %q", svc.Spec.Type)
	}
	portName, found := "", false
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			portName, found = p.Name, true
			break
		}
	}
	if !found {
		return "", fmt.Errorf("no service port %d found for service %q", port, svc.Name)
	}
	obj, err = a.endpoints.Get(ctx, ref.Namespace, ref.Name, &metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	//lint:ignore SA1019 upstream's aggregator resolves through core/v1 Endpoints
	eps := obj.(*corev1.Endpoints)
	for _, ss := range eps.Subsets {
		if len(ss.Addresses) == 0 {
			continue
		}
		for _, p := range ss.Ports {
			if p.Name == portName {
				addr := ss.Addresses[rand.IntN(len(ss.Addresses))]
				return net.JoinHostPort(addr.IP, strconv.Itoa(int(p.Port))), nil
			}
		}
	}
	return "", apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", ref.Name))
}
