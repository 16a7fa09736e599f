package registry

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Connecter is a proxy-type subresource (pods/log, exec, attach, portforward, proxy;
// nodes/proxy; services/proxy): a request to it is served by a handler that streams to the
// node's kubelet, a pod or a service's endpoints (pkg/apiserver/proxy builds it).
type Connecter interface {
	Storage
	// ConnectMethods are the HTTP methods served.
	ConnectMethods() []string
	// Connect returns the handler serving r on the object ns/name, path being what follows
	// the subresource in the URL, or the error to answer.
	Connect(ctx context.Context, ns, name, path string, r *http.Request) (http.Handler, error)
}

// ConnectFunc builds the handler of a request to subresource of resource ns/name.
type ConnectFunc func(ctx context.Context, resource, subresource, ns, name, path string, r *http.Request) (http.Handler, error)

// ProxyStore is a Connecter of one subresource of a stored kind.
type ProxyStore struct {
	target      *Store
	subresource string
	kind        string // the options kind upstream's discovery shows (PodExecOptions...)
	methods     []string
	connect     *atomic.Pointer[ConnectFunc] // the registry's, set by SetConnect
}

var (
	connectGetOnly    = []string{http.MethodGet}
	connectGetPost    = []string{http.MethodGet, http.MethodPost}
	connectAllMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions}
)

func (p *ProxyStore) New() runtime.Object {
	if obj, err := Scheme.New(p.Kind()); err == nil {
		return obj
	}
	return p.target.New()
}
func (p *ProxyStore) Kind() schema.GroupVersionKind {
	return corev1.SchemeGroupVersion.WithKind(p.kind)
}
func (p *ProxyStore) ConnectMethods() []string { return p.methods }

func (p *ProxyStore) Connect(ctx context.Context, ns, name, path string, r *http.Request) (http.Handler, error) {
	if fn := p.connect.Load(); fn != nil {
		return (*fn)(ctx, p.target.kind.Plural, p.subresource, ns, name, path, r)
	}
	// Nothing to connect with: answer what upstream would before connecting.
	if _, err := p.target.Get(ctx, ns, name, &metav1.GetOptions{}); err != nil && p.subresource != "proxy" {
		return nil, err
	}
	return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("%s/%s is not served: the apiserver has no connector", p.target.kind.Plural, p.subresource))
}

// SetConnect sets what serves the proxy-type subresources.
func (r *Registry) SetConnect(fn ConnectFunc) { r.connect.Store(&fn) }

// GetCore reads an object of a core-group resource (pods, nodes, services, endpoints) for a
// connection.
func (r *Registry) GetCore(ctx context.Context, resource, ns, name string) (runtime.Object, error) {
	res := r.byGR[schema.GroupResource{Resource: resource}]
	if res == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
	}
	return res.Store.Get(ctx, ns, name, &metav1.GetOptions{})
}

// addProxySubresources adds the proxy-type subresources upstream serves on pods, nodes and
// services.
func (r *Registry) addProxySubresources() {
	add := func(resource, sub, kind string, methods []string) {
		res := r.byGR[schema.GroupResource{Resource: resource}]
		if res != nil {
			res.Subresources[sub] = &ProxyStore{target: res.Store, subresource: sub, kind: kind, methods: methods, connect: &r.connect}
		}
	}
	add("pods", "log", "Pod", connectGetOnly)
	add("pods", "exec", "PodExecOptions", connectGetPost)
	add("pods", "attach", "PodAttachOptions", connectGetPost)
	add("pods", "portforward", "PodPortForwardOptions", connectGetPost)
	add("pods", "proxy", "PodProxyOptions", connectAllMethods)
	add("nodes", "proxy", "NodeProxyOptions", connectAllMethods)
	add("services", "proxy", "ServiceProxyOptions", connectAllMethods)
}
