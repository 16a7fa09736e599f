package registry

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/request"
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
		if err := p.admit(ctx, ns, name, path, r); err != nil {
			return nil, err
		}
		return (*fn)(ctx, p.target.kind.Plural, p.subresource, ns, name, path, r)
	}
	// Nothing to connect with: answer what upstream would before connecting.
	if _, err := p.target.Get(ctx, ns, name, &metav1.GetOptions{}); err != nil && p.subresource != "proxy" {
		return nil, err
	}
	return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("%s/%s is not served: the apiserver has no connector", p.target.kind.Plural, p.subresource))
}

// admit runs admission (webhooks, AlwaysDeny) on a CONNECT with the request's options object,
// as upstream does for every connect subresource; pods/log is a read, not a connect.
func (p *ProxyStore) admit(ctx context.Context, ns, name, path string, r *http.Request) error {
	adm := p.target.admission()
	if adm == nil || p.subresource == "log" {
		return nil
	}
	if _, ok := request.InfoFrom(ctx); !ok {
		return nil // not a served request (the registry's own tests)
	}
	u, _ := request.UserFrom(ctx)
	a := &admission.Attributes{Operation: admission.Connect, Kind: p.Kind(),
		Resource: p.target.kind.GroupVersion().WithResource(p.target.kind.Plural), Subresource: p.subresource,
		Namespace: ns, Name: name, Object: connectOptions(p.kind, path, r.URL.Query()), User: u}
	if err := adm.Admit(ctx, a); err != nil {
		return err
	}
	return adm.Validate(ctx, a)
}

// connectOptions is the options object of a connect request, as admission sees it.
func connectOptions(kind, path string, q url.Values) runtime.Object {
	flag := func(k string) bool { b, _ := strconv.ParseBool(q.Get(k)); return b }
	tm := metav1.TypeMeta{APIVersion: "v1", Kind: kind}
	switch kind {
	case "PodExecOptions":
		return &corev1.PodExecOptions{TypeMeta: tm, Stdin: flag("stdin"), Stdout: flag("stdout"), Stderr: flag("stderr"), TTY: flag("tty"),
			Container: q.Get("container"), Command: q["command"]}
	case "PodAttachOptions":
		return &corev1.PodAttachOptions{TypeMeta: tm, Stdin: flag("stdin"), Stdout: flag("stdout"), Stderr: flag("stderr"), TTY: flag("tty"),
			Container: q.Get("container")}
	case "PodPortForwardOptions":
		o := &corev1.PodPortForwardOptions{TypeMeta: tm}
		for _, p := range q["ports"] {
			if n, err := strconv.ParseInt(p, 10, 32); err == nil {
				o.Ports = append(o.Ports, int32(n))
			}
		}
		return o
	case "PodProxyOptions":
		return &corev1.PodProxyOptions{TypeMeta: tm, Path: path}
	case "NodeProxyOptions":
		return &corev1.NodeProxyOptions{TypeMeta: tm, Path: path}
	case "ServiceProxyOptions":
		return &corev1.ServiceProxyOptions{TypeMeta: tm, Path: path}
	}
	return nil
}

// AddProxySubresources adds the proxy-type subresources upstream serves on pods, nodes and
// services to those resources, served through the ConnectFunc connect holds.
func AddProxySubresources(resource func(schema.GroupResource) *Resource, connect *atomic.Pointer[ConnectFunc]) {
	add := func(gr, sub, kind string, methods []string) {
		res := resource(schema.GroupResource{Resource: gr})
		if res != nil {
			res.Subresources[sub] = &ProxyStore{target: res.Store, subresource: sub, kind: kind, methods: methods, connect: connect}
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
