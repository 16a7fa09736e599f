package controlplane

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// systemNamespaces are the namespaces every cluster has: Start creates them and
// keepSystemNamespaces re-creates any that was deleted, as upstream's system-namespaces
// controller.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// defaultSystemNamespacesInterval is how often upstream's system-namespaces controller
// looks for missing ones.
const defaultSystemNamespacesInterval = time.Minute

// ensureSystemNamespaces creates the system namespaces that are missing. One that the
// namespace informer holds while it watches is left alone (it may be on its way out: it is
// created again once gone).
func (r *Registry) ensureSystemNamespaces(ctx context.Context) error {
	for _, name := range systemNamespaces {
		if _, seen := r.namespaces.Get("", name); seen && r.namespaces.Watching() {
			continue
		}
		_, err := r.namespaceStore().Create(ctx, "", "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, &metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("registry: create namespace %s: %w", name, err)
		}
	}
	return nil
}

// keepSystemNamespaces runs ensureSystemNamespaces every interval (Config's
// SystemNamespacesInterval) until ctx ends.
func (r *Registry) keepSystemNamespaces(ctx context.Context) {
	defer r.wg.Done()
	every := r.cfg.SystemNamespacesInterval
	if every == 0 {
		every = defaultSystemNamespacesInterval
	}
	if every < 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := r.ensureSystemNamespaces(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("system namespaces check failed", "err", err)
		}
	}
}
