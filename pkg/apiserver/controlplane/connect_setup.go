package controlplane

import (
	"context"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SetConnect sets what serves the proxy-type subresources.
func (r *Registry) SetConnect(fn registry.ConnectFunc) { r.connect.Store(&fn) }

// GetCore reads an object of a core-group resource (pods, nodes, services, endpoints) for a
// connection.
func (r *Registry) GetCore(ctx context.Context, resource, ns, name string) (runtime.Object, error) {
	res := r.byGR[schema.GroupResource{Resource: resource}]
	if res == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
	}
	return res.Store.Get(ctx, ns, name, &metav1.GetOptions{})
}
