package controlplane

import (
	"context"
	"fmt"

	"github.com/hacp/hacp/pkg/apiserver/registry/cluster"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// createBootstrapPriorityClasses creates the bootstrap PriorityClasses if they are missing.
func (r *Registry) createBootstrapPriorityClasses(ctx context.Context) error {
	res := r.byGR[cluster.PriorityClassesKind().GroupResource()]
	if res == nil {
		return nil
	}
	for _, pc := range cluster.BootstrapPriorityClasses() {
		_, err := res.Store.Create(ctx, "", "", pc, &metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("registry: create priority class %s: %w", pc.Name, err)
		}
	}
	return nil
}
