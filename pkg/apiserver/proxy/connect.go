//lint:file-ignore SA1019 services/proxy reads core/v1 Endpoints, as kube-apiserver 1.33 does

// Package proxy serves the proxy-type subresources of pods, nodes and services: pods/log,
// exec, attach, portforward and proxy, nodes/proxy and services/proxy. It finds the backend
// (a node's kubelet from the Node object, a pod's IP, a service's endpoints) as
// kube-apiserver does, and streams to it both ways, upgrades (SPDY, WebSocket) included.
package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/streaming/pkg/httpstream/wsstream"
	netutils "k8s.io/utils/net"
)

// Objects reads the stored objects a connection goes through: pods, nodes, services and
// endpoints of the core group.
type Objects interface {
	Get(ctx context.Context, resource, namespace, name string) (runtime.Object, error)
}

// ObjectsFunc is a function that is an Objects.
type ObjectsFunc func(ctx context.Context, resource, namespace, name string) (runtime.Object, error)

func (f ObjectsFunc) Get(ctx context.Context, resource, namespace, name string) (runtime.Object, error) {
	return f(ctx, resource, namespace, name)
}

// Config says how to reach kubelets and proxied backends.
type Config struct {
	// KubeletTLS is the client TLS configuration for kubelets: the apiserver's kubelet client
	// certificate and the CA that verifies kubelets' serving certificates (without a CA, as
	// upstream, the serving certificate is not verified).
	KubeletTLS *tls.Config
	// DialTimeout bounds connecting (and the TLS handshake) to a kubelet or backend; 0 is 30s.
	DialTimeout time.Duration
	// KubeletPort is dialled when a Node reports no kubelet port (upstream's --kubelet-port).
	KubeletPort int
	// PreferredAddressTypes orders the Node's addresses to pick the kubelet's host from.
	PreferredAddressTypes []corev1.NodeAddressType
	// AllowLoopback lets pods/proxy, nodes/proxy and services/proxy reach loopback and
	// link-local unicast addresses, which upstream refuses ("address not allowed"). For
	// single-host test setups only.
	AllowLoopback bool
}

// DefaultPreferredAddressTypes is upstream's --kubelet-preferred-address-types default.
var DefaultPreferredAddressTypes = []corev1.NodeAddressType{
	corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeInternalIP, corev1.NodeExternalDNS, corev1.NodeExternalIP,
}

// DefaultKubeletPort is the kubelet's default secure port.
const DefaultKubeletPort = 10250

// Connector builds the handler of each proxy-type subresource request.
type Connector struct {
	cfg     Config
	objects Objects
	kubelet *http.Transport // to kubelets, with the client certificate
	backend *http.Transport // to pods, services and other node ports (TLS unverified, as upstream)
	// stream is the kubelet transport of translated streams, whose connections close with
	// the request.
	stream  *http.Transport
	metrics *Metrics
	// Tracker counts the upgraded streams open now.
	Tracker Tracker
}

// New returns a Connector reading objects from objects.
func New(cfg Config, objects Objects) *Connector {
	if len(cfg.PreferredAddressTypes) == 0 {
		cfg.PreferredAddressTypes = DefaultPreferredAddressTypes
	}
	if cfg.KubeletPort == 0 {
		cfg.KubeletPort = DefaultKubeletPort
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = dialTimeout
	}
	if cfg.KubeletTLS == nil {
		cfg.KubeletTLS = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // upstream's default without --kubelet-certificate-authority
	}
	c := &Connector{cfg: cfg, objects: objects,
		kubelet: newTransport(cfg.KubeletTLS, cfg.DialTimeout),
		backend: newTransport(&tls.Config{InsecureSkipVerify: true}, cfg.DialTimeout), //nolint:gosec // upstream's proxy transport
		metrics: newMetrics(),
	}
	c.stream = newTransport(cfg.KubeletTLS, cfg.DialTimeout)
	c.stream.DialContext = closeOnDone(c.stream.DialContext)
	return c
}

// Metrics are the connector's metrics, to register with the server's.
func (c *Connector) Metrics() *Metrics { return c.metrics }

func newTransport(cfg *tls.Config, timeout time.Duration) *http.Transport {
	return &http.Transport{
		Proxy:               nil, // loopback and cluster addresses: never through an environment proxy
		DialContext:         (&net.Dialer{Timeout: timeout, KeepAlive: keepAlive}).DialContext,
		TLSClientConfig:     cfg.Clone(),
		TLSHandshakeTimeout: min(timeout, tlsHandshakeTimeout),
		MaxIdleConnsPerHost: 25,
		IdleConnTimeout:     90 * time.Second,
	}
}

// Close drops the idle connections to backends.
func (c *Connector) Close() {
	c.kubelet.CloseIdleConnections()
	c.backend.CloseIdleConnections()
	c.stream.CloseIdleConnections()
}

// Connect returns the handler for subresource of the object resource/ns/name, path being what
// follows the subresource in the URL (for the proxy subresources), or the error to answer.
func (c *Connector) Connect(ctx context.Context, resource, subresource, ns, name, path string, r *http.Request) (http.Handler, error) {
	switch resource + "/" + subresource {
	case "pods/log":
		return c.podLog(ctx, ns, name, r.URL.Query())
	case "pods/exec", "pods/attach", "pods/portforward":
		return c.podStream(ctx, subresource, ns, name, r)
	case "pods/proxy":
		return c.podProxy(ctx, ns, name, path)
	case "nodes/proxy":
		return c.nodeProxy(ctx, name, path)
	case "services/proxy":
		return c.serviceProxy(ctx, ns, name, path)
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

func (c *Connector) pod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	obj, err := c.objects.Get(ctx, "pods", ns, name)
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("proxy: pods store returned %T", obj)
	}
	return pod, nil
}

// kubeletLocation is the kubelet's base URL for the node.
func (c *Connector) kubeletLocation(ctx context.Context, nodeName string) (*url.URL, error) {
	obj, err := c.objects.Get(ctx, "nodes", "", nodeName)
	if err != nil {
		return nil, err
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return nil, fmt.Errorf("proxy: nodes store returned %T", obj)
	}
	host, err := NodeAddress(node, c.cfg.PreferredAddressTypes)
	if err != nil {
		return nil, err
	}
	port := int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port <= 0 {
		port = c.cfg.KubeletPort
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(port))}, nil
}

// NodeAddress picks the node's address of the first preferred type that it has, as
// upstream's GetPreferredNodeAddress: for Hostname, the kubernetes.io/hostname label stands
// in when no address of that type is listed.
func NodeAddress(node *corev1.Node, preferred []corev1.NodeAddressType) (string, error) {
	for _, t := range preferred {
		for _, a := range node.Status.Addresses {
			if a.Type == t && a.Address != "" {
				return a.Address, nil
			}
		}
		if t == corev1.NodeHostName {
			if h := node.Labels[corev1.LabelHostname]; h != "" {
				return h, nil
			}
		}
	}
	return "", fmt.Errorf("no preferred addresses found; known addresses: %v", node.Status.Addresses)
}

// podContainer checks or defaults the container a log, exec or attach request names, with
// upstream's messages.
func podContainer(pod *corev1.Pod, container string) (string, error) {
	if container == "" {
		switch len(pod.Spec.Containers) {
		case 1:
			return pod.Spec.Containers[0].Name, nil
		case 0:
			return "", apierrors.NewBadRequest(fmt.Sprintf("the pod %s does not have any containers", pod.Name))
		}
		msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: [%s]", pod.Name, containerNames(pod.Spec.Containers))
		if len(pod.Spec.InitContainers) > 0 {
			msg += fmt.Sprintf(" or one of the init containers: [%s]", containerNames(pod.Spec.InitContainers))
		}
		if len(pod.Spec.EphemeralContainers) > 0 {
			var names []string
			for _, e := range pod.Spec.EphemeralContainers {
				names = append(names, e.Name)
			}
			msg += fmt.Sprintf(" or one of the ephemeral containers: [%s]", strings.Join(names, " "))
		}
		return "", apierrors.NewBadRequest(msg)
	}
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			if c.Name == container {
				return container, nil
			}
		}
	}
	for _, e := range pod.Spec.EphemeralContainers {
		if e.Name == container {
			return container, nil
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", container, pod.Name))
}

func containerNames(cs []corev1.Container) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, " ")
}

// podStream is exec, attach or portforward: an upgrade to the kubelet's streaming endpoint.
// The kubelet speaks SPDY; a client's WebSocket exec or attach (v5.channel.k8s.io) is
// translated and a WebSocket port-forward (SPDY tunnelled in WebSocket) unwrapped, as
// kube-apiserver 1.30+ does; any other upgrade goes through as it is.
func (c *Connector) podStream(ctx context.Context, subresource, ns, name string, r *http.Request) (http.Handler, error) {
	q := r.URL.Query()
	pod, err := c.pod(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if pod.Spec.NodeName == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", name))
	}
	loc, err := c.kubeletLocation(ctx, pod.Spec.NodeName)
	if err != nil {
		return nil, err
	}
	// The kubelet reads its own form of the options (upstream's streamParams).
	params := url.Values{}
	var opts streamOptions
	if subresource == "portforward" {
		for _, p := range q["ports"] {
			if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid port %q: must be between 1 and 65535", p))
			}
			params.Add("port", p)
		}
		loc.Path = "/portForward/" + url.PathEscape(ns) + "/" + url.PathEscape(name)
	} else {
		container, err := podContainer(pod, q.Get("container"))
		if err != nil {
			return nil, err
		}
		// The kubelet's names (corev1.ExecStdinParam...): input, output, error, tty.
		for _, key := range []string{"stdin", "stdout", "stderr", "tty"} {
			v := q.Get(key)
			if v == "" {
				continue
			}
			on, err := strconv.ParseBool(v)
			if err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("%s: invalid value %q: must be true or false", key, v))
			}
			if on {
				switch key {
				case "stdin":
					opts.stdin = true
				case "stdout":
					opts.stdout = true
				case "stderr":
					opts.stderr = true
				case "tty":
					opts.tty = true
				}
				params.Add(map[string]string{"stdin": corev1.ExecStdinParam, "stdout": corev1.ExecStdoutParam,
					"stderr": corev1.ExecStderrParam, "tty": corev1.ExecTTYParam}[key], "1")
			}
		}
		if subresource == "exec" {
			for _, c := range q["command"] {
				params.Add("command", c)
			}
		}
		loc.Path = "/" + subresource + "/" + url.PathEscape(ns) + "/" + url.PathEscape(name) + "/" + url.PathEscape(container)
	}
	loc.RawQuery = params.Encode()
	h := &Handler{Location: loc, Transport: c.kubelet, TLS: c.cfg.KubeletTLS, UpgradeRequired: true, Tracker: &c.Tracker, DialTimeout: c.cfg.DialTimeout}
	switch {
	case subresource != "portforward" && wsstream.IsWebSocketRequestWithStreamCloseProtocol(r):
		return &streamTranslator{location: loc, transport: c.stream, opts: opts, metrics: c.metrics, tracker: &c.Tracker}, nil
	case subresource == "portforward" && wsstream.IsWebSocketRequestWithTunnelingProtocol(r):
		return &spdyTunnel{upgrade: h, metrics: c.metrics}, nil
	}
	return h, nil
}

// splitSchemeNamePort reads "[scheme:]name[:port]" as upstream's SplitSchemeNamePort.
func splitSchemeNamePort(id string) (scheme, name, port string, ok bool) {
	parts := strings.Split(id, ":")
	switch len(parts) {
	case 1:
		name = parts[0]
	case 2:
		name, port = parts[0], parts[1]
	case 3:
		scheme, name, port = parts[0], parts[1], parts[2]
	default:
		return "", "", "", false
	}
	if name == "" || (scheme != "" && scheme != "http" && scheme != "https") {
		return "", "", "", false
	}
	return scheme, name, port, true
}

// proxyHandler is the handler of a proxy subresource at loc plus path; an empty path is
// redirected to the subresource URL with a trailing slash, as upstream.
func (c *Connector) proxyHandler(loc *url.URL, path string, transport *http.Transport, tlsCfg *tls.Config) http.Handler {
	if loc.Scheme == "" {
		loc.Scheme = "http"
	}
	if path == "" {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/") {
				(&Handler{Location: withPath(loc, "/"), Transport: transport, TLS: tlsCfg, Tracker: &c.Tracker, DialTimeout: c.cfg.DialTimeout, RewriteLinks: true}).ServeHTTP(w, r)
				return
			}
			target := r.URL.Path + "/"
			if r.URL.RawQuery != "" {
				target += "?" + r.URL.RawQuery
			}
			w.Header().Set("Location", target)
			w.WriteHeader(http.StatusMovedPermanently)
		})
	}
	return &Handler{Location: withPath(loc, path), Transport: transport, TLS: tlsCfg, Tracker: &c.Tracker, DialTimeout: c.cfg.DialTimeout, RewriteLinks: true}
}

func withPath(loc *url.URL, path string) *url.URL {
	u := *loc
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u.Path = path
	return &u
}

func (c *Connector) podProxy(ctx context.Context, ns, id, path string) (http.Handler, error) {
	scheme, name, port, ok := splitSchemeNamePort(id)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid pod request %q", id))
	}
	pod, err := c.pod(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	// Without a port in the request, the first port a container declares (upstream).
	if port == "" {
		for _, ct := range pod.Spec.Containers {
			if len(ct.Ports) > 0 {
				port = strconv.Itoa(int(ct.Ports[0].ContainerPort))
				break
			}
		}
	}
	podIP := PodIP(pod)
	if err := c.proxyable(podIP); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	loc := &url.URL{Scheme: scheme, Host: podIP}
	if port != "" {
		loc.Host = net.JoinHostPort(podIP, port)
	} else if strings.Contains(loc.Host, ":") {
		loc.Host = "[" + loc.Host + "]"
	}
	return c.proxyHandler(loc, path, c.backend, nil), nil
}

// PodIP is the pod's primary IP as upstream reads it from a v1 Pod: status.podIP when set
// (it wins over a podIPs[0] that differs), else podIPs[0].
func PodIP(pod *corev1.Pod) string {
	if pod.Status.PodIP != "" {
		return pod.Status.PodIP
	}
	if len(pod.Status.PodIPs) > 0 {
		return pod.Status.PodIPs[0].IP
	}
	return ""
}

func (c *Connector) nodeProxy(ctx context.Context, id, path string) (http.Handler, error) {
	scheme, name, port, ok := splitSchemeNamePort(id)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid node request %q", id))
	}
	loc, err := c.kubeletLocation(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := c.proxyableHost(ctx, loc.Hostname()); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if port == "" || port == loc.Port() {
		if scheme != "" {
			loc.Scheme = scheme
		}
		return c.proxyHandler(loc, path, c.kubelet, c.cfg.KubeletTLS), nil
	}
	// Another port of the node: not the kubelet, so no kubelet credentials.
	loc = &url.URL{Scheme: scheme, Host: net.JoinHostPort(loc.Hostname(), port)}
	return c.proxyHandler(loc, path, c.backend, nil), nil
}

func (c *Connector) serviceProxy(ctx context.Context, ns, id, path string) (http.Handler, error) {
	scheme, name, portName, ok := splitSchemeNamePort(id)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", id))
	}
	obj, err := c.objects.Get(ctx, "services", ns, name)
	if err != nil {
		return nil, err
	}
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, fmt.Errorf("proxy: services store returned %T", obj)
	}
	// A port number names the service port that has it.
	if n, err := strconv.ParseInt(portName, 10, 64); err == nil {
		found := false
		for _, p := range svc.Spec.Ports {
			if int64(p.Port) == n {
				portName, found = p.Name, true
				break
			}
		}
		if !found {
			return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", n, name))
		}
	}
	obj, err = c.objects.Get(ctx, "endpoints", ns, name)
	if err != nil {
		return nil, err
	}
	eps, ok := obj.(*corev1.Endpoints)
	if !ok {
		return nil, fmt.Errorf("proxy: endpoints store returned %T", obj)
	}
	if len(eps.Subsets) == 0 {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	}
	// A random subset with the port, and in it a random address that is a pod's IP.
	start := rand.IntN(len(eps.Subsets))
	for i := range eps.Subsets {
		ss := &eps.Subsets[(start+i)%len(eps.Subsets)]
		if len(ss.Addresses) == 0 {
			continue
		}
		for _, p := range ss.Ports {
			if p.Name != portName {
				continue
			}
			first := rand.IntN(len(ss.Addresses))
			for j := range ss.Addresses {
				addr := &ss.Addresses[(first+j)%len(ss.Addresses)]
				// Only a pod's own address (upstream), and never one upstream's Endpoints
				// validation refuses, should an older write have stored it.
				if !c.podAddress(ctx, ns, addr) || c.proxyable(addr.IP) != nil {
					continue
				}
				loc := &url.URL{Scheme: scheme, Host: net.JoinHostPort(addr.IP, strconv.Itoa(int(p.Port)))}
				return c.proxyHandler(loc, path, c.backend, nil), nil
			}
		}
	}
	return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", id))
}

// podAddress reports whether an endpoint address is the IP of the pod it refers to, which
// upstream requires before it proxies there.
func (c *Connector) podAddress(ctx context.Context, ns string, addr *corev1.EndpointAddress) bool {
	ref := addr.TargetRef
	if ref == nil || ref.Kind != "Pod" || ref.Namespace != ns {
		return false
	}
	pod, err := c.pod(ctx, ns, ref.Name)
	if err != nil {
		return false
	}
	for _, ip := range pod.Status.PodIPs {
		if ip.IP == addr.IP {
			return true
		}
	}
	return pod.Status.PodIP == addr.IP
}

// ErrAddressNotAllowed is upstream's refusal of a proxy target that is not a global unicast
// address (k8s.io/kubernetes pkg/proxy/util ErrAddressNotAllowed), answered as 400 BadRequest.
var ErrAddressNotAllowed = errors.New("address not allowed")

// errNoAddresses is upstream's answer for a node host name that resolves to nothing.
var errNoAddresses = errors.New("no addresses for hostname")

// IsProxyableIP reports, as upstream's IsProxyableIP, whether the proxy may connect to ip:
// only a global unicast address may, so never this host's loopback (where etcd and the
// apiserver's own ports listen), the unspecified address (which dials this host too),
// link-local addresses (cloud metadata services) or multicast.
func IsProxyableIP(ip string) error {
	parsed := netutils.ParseIPSloppy(ip)
	if parsed == nil || !parsed.IsGlobalUnicast() {
		return ErrAddressNotAllowed
	}
	return nil
}

// proxyable is IsProxyableIP, but for Config.AllowLoopback, which lets single-host tests
// reach loopback and link-local unicast addresses too.
func (c *Connector) proxyable(ip string) error {
	if c.cfg.AllowLoopback {
		if parsed := netutils.ParseIPSloppy(ip); parsed != nil && (parsed.IsLoopback() || parsed.IsLinkLocalUnicast()) {
			return nil
		}
	}
	return IsProxyableIP(ip)
}

// proxyableHost checks every address a node's host name resolves to, as upstream's
// isProxyableHostname (an IP address resolves to itself).
func (c *Connector) proxyableHost(ctx context.Context, host string) error {
	if net.ParseIP(host) != nil {
		return c.proxyable(host)
	}
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return err
	}
	if len(addrs) == 0 {
		return errNoAddresses
	}
	for _, a := range addrs {
		if err := c.proxyable(a.IP.String()); err != nil {
			return err
		}
	}
	return nil
}
