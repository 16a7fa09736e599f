package registry

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Connecter is a proxy-type subresource (pods/log, exec, attach, portforward, proxy;
// nodes/proxy; services/proxy). Upstream connects these to a node's kubelet or a service;
// hacp runs no node agent, so Connect answers why it cannot: 404 for a missing object, 400
// for a pod not bound to a node (as upstream), else 503 ServiceUnavailable.
type Connecter interface {
	Storage
	// ConnectMethods are the HTTP methods served.
	ConnectMethods() []string
	// Connect returns the error to answer for the object.
	Connect(ctx context.Context, ns, name string) error
}

// ProxyStore is a Connecter of one subresource of a stored kind.
type ProxyStore struct {
	target      *Store
	subresource string
	kind        string // the options kind upstream's discovery shows (PodExecOptions...)
	methods     []string
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

func (p *ProxyStore) Connect(ctx context.Context, ns, name string) error {
	obj, err := p.target.Get(ctx, ns, name, &metav1.GetOptions{})
	if err != nil {
		return err
	}
	where := p.target.kind.Singular + " " + name
	if pod, ok := obj.(*corev1.Pod); ok {
		if pod.Spec.NodeName == "" {
			return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", name))
		}
		where = fmt.Sprintf("pod %s on node %s", name, pod.Spec.NodeName)
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("no node agent: hacp does not connect to kubelets or services, so %s/%s is not served (%s)",
		p.target.kind.Plural, p.subresource, where))
}

// addProxySubresources adds the proxy-type subresources upstream serves on pods, nodes and
// services.
func (r *Registry) addProxySubresources() {
	add := func(resource, sub, kind string, methods []string) {
		res := r.byGR[schema.GroupResource{Resource: resource}]
		if res != nil {
			res.Subresources[sub] = &ProxyStore{target: res.Store, subresource: sub, kind: kind, methods: methods}
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
