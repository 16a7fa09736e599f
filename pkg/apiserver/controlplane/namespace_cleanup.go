package controlplane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/registry/core"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	"go.etcd.io/etcd/client/v3/concurrency"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The namespace cleanup does the job of upstream's namespace controller, as there is no
// controller-manager to do it: a namespace being deleted is emptied of every namespaced
// object, then its "kubernetes" finalizer is removed from spec.finalizers (the finalize
// subresource's rules). The store deletes the namespace once spec.finalizers and
// metadata.finalizers are both empty, whoever removes the last one.

// errContentPending: a namespace's last objects wait for their graceful deletion.
var errContentPending = errors.New("objects are waiting for their graceful deletion to be confirmed")

// terminateNamespace finishes a namespace being deleted in the background. One apiserver
// at a time does it, under a lock held by its etcd lease; the others check back, and take
// over if that apiserver dies.
func (r *Registry) terminateNamespace(_ context.Context, obj runtime.Object) {
	ns := obj.(*corev1.Namespace).Name
	r.mu.Lock()
	if r.terminating[ns] {
		r.mu.Unlock()
		return
	}
	r.terminating[ns] = true
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() {
			r.mu.Lock()
			delete(r.terminating, ns)
			r.mu.Unlock()
		}()
		ctx := r.ctx
		for attempt := 0; ctx.Err() == nil; attempt++ {
			done, err := r.finishNamespace(ctx, ns)
			if done {
				return
			}
			if err != nil && ctx.Err() == nil && !errors.Is(err, errContentPending) {
				r.log.Warn("namespace cleanup failed, retrying", "namespace", ns, "err", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(min(attempt+1, 10)) * 500 * time.Millisecond):
			}
		}
	}()
}

// cleanupLockTTL is how long a dead apiserver's namespace cleanup lock outlives it.
const cleanupLockTTL = 10 // seconds

// session returns this process's etcd session, starting a new one if the last expired.
func (r *Registry) session(ctx context.Context) (*concurrency.Session, error) {
	r.sessMu.Lock()
	defer r.sessMu.Unlock()
	if r.sess != nil {
		select {
		case <-r.sess.Done():
		default:
			return r.sess, nil
		}
	}
	s, err := concurrency.NewSession(r.client, concurrency.WithTTL(cleanupLockTTL), concurrency.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	r.sess = s
	return s, nil
}

// finishNamespace empties and finalizes ns if it is being deleted and no other apiserver
// is at it; done reports that nothing is left to do here (other finalizers may still
// hold the namespace: whoever owns them removes them).
func (r *Registry) finishNamespace(ctx context.Context, ns string) (done bool, err error) {
	sess, err := r.session(ctx)
	if err != nil {
		return false, err
	}
	lock := concurrency.NewMutex(sess, r.cfg.Prefix+"/hacp.io/namespace-cleanup/"+ns)
	if err := lock.TryLock(ctx); err != nil {
		if errors.Is(err, concurrency.ErrLocked) {
			err = nil // another apiserver is at it: check back later
		}
		return false, err
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = lock.Unlock(uctx)
	}()
	// Under the lock: is there still something to do?
	n, err := r.getNamespace(ctx, ns)
	if n == nil || err != nil {
		return n == nil && err == nil, err
	}
	if n.DeletionTimestamp == nil {
		return true, nil
	}
	if slices.Contains(n.Spec.Finalizers, corev1.FinalizerKubernetes) {
		// Upstream's namespace controller empties only a namespace that still has its
		// finalizer: without it, the content was removed already.
		if err := r.emptyNamespace(ctx, ns); err != nil {
			return false, err
		}
	}
	if err := r.finalizeNamespaceCleanup(ctx, ns); err != nil {
		return false, err // try again
	}
	return true, nil
}

// getNamespace reads ns from etcd; nil without an error when it is gone.
func (r *Registry) getNamespace(ctx context.Context, ns string) (*corev1.Namespace, error) {
	obj, err := r.namespaceStore().Get(ctx, "", ns, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Namespace), nil
}

// emptyNamespace deletes ns's content until a pass finds nothing (a create that passed
// the namespace check just before termination began may land after the first pass),
// recording what it found in the namespace's status conditions.
func (r *Registry) emptyNamespace(ctx context.Context, ns string) error {
	for {
		found, pending, err := r.deleteNamespaceContent(ctx, ns)
		if err != nil {
			return err
		}
		if found == 0 {
			return r.setNamespaceConditions(ctx, ns, nil)
		}
		if total(pending) == found {
			if err := r.setNamespaceConditions(ctx, ns, pending); err != nil {
				return err
			}
			return errContentPending // check back later, as upstream's namespace controller
		}
	}
}

func total(counts map[schema.GroupResource]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// finalizeNamespaceCleanup removes the "kubernetes" finalizer from ns's spec.finalizers
// through the finalize subresource, which deletes the namespace when nothing else holds
// it; a namespace without that finalizer is deleted if nothing holds it.
func (r *Registry) finalizeNamespaceCleanup(ctx context.Context, ns string) error {
	s := r.namespaceStore()
	n, err := r.getNamespace(ctx, ns)
	if n == nil || err != nil {
		return err
	}
	if !slices.Contains(n.Spec.Finalizers, corev1.FinalizerKubernetes) {
		s.DeleteIfReleased(ctx, "", ns, n)
		return nil
	}
	out, _, err := s.UpdateSubresource(ctx, "", ns, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		c := cur.(*corev1.Namespace)
		c.Spec.Finalizers = slices.DeleteFunc(c.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
		return c, nil
	}, &metav1.UpdateOptions{}, core.FinalizeNamespace)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finalize namespace %s: %w", ns, err)
	}
	if s.Released(out) {
		r.log.Info("namespace removed", "namespace", ns)
	} else {
		r.log.Info("namespace emptied; finalizers still hold it", "namespace", ns,
			"finalizers", out.(*corev1.Namespace).Finalizers, "specFinalizers", out.(*corev1.Namespace).Spec.Finalizers)
	}
	return nil
}

// deleteNamespaceContent deletes every object in ns, of every namespaced kind the registry
// serves, and returns how many it found and, by resource, how many of those are still
// there, waiting for a graceful deletion to be confirmed (a pod's node agent).
func (r *Registry) deleteNamespaceContent(ctx context.Context, ns string) (found int, pending map[schema.GroupResource]int, err error) {
	pending = map[schema.GroupResource]int{}
	for _, res := range append(slices.Clip(r.Resources), r.crd.StorageResources()...) {
		if !res.Store.Definition().Namespaced {
			continue
		}
		list, err := res.Store.List(ctx, ns, &metav1.ListOptions{})
		if err != nil {
			return found, pending, err
		}
		items, _ := registry.ExtractList(list)
		found += len(items)
		for _, it := range items {
			deleted, err := deleteContentObject(ctx, res.Store, ns, it.GetName(), len(it.GetFinalizers()) > 0)
			if err != nil {
				return found, pending, err
			}
			if !deleted {
				pending[res.Store.GroupResource()]++
			}
		}
	}
	return found, pending, nil
}

// deleteContentObject deletes one object of a namespace being deleted; deleted is false
// when it waits for its graceful deletion to be confirmed.
func deleteContentObject(ctx context.Context, s *registry.Store, ns, name string, hasFinalizers bool) (deleted bool, err error) {
	// Finalizers inside a terminating namespace are dropped: nothing else would remove them.
	if hasFinalizers {
		_, _, err := s.Update(ctx, ns, name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			if cur == nil {
				return nil, apierrors.NewNotFound(s.GroupResource(), name)
			}
			a, _ := registry.MetaAccessor(cur)
			a.SetFinalizers(nil)
			return cur, nil
		}, &metav1.UpdateOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
	}
	_, deleted, err = s.Delete(ctx, ns, name, &metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return deleted, err
}

// namespaceConditionTypes are the conditions upstream's namespace controller keeps on a
// namespace being deleted, with the reason and message of each when all is well.
var namespaceConditionTypes = []struct {
	kind            corev1.NamespaceConditionType
	reason, message string
}{
	{corev1.NamespaceDeletionDiscoveryFailure, "ResourcesDiscovered", "All resources successfully discovered"},
	{corev1.NamespaceDeletionGVParsingFailure, "ParsedGroupVersions", "All legacy kube types successfully parsed"},
	{corev1.NamespaceDeletionContentFailure, "ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	{corev1.NamespaceContentRemaining, "ContentRemoved", "All content successfully removed"},
	{corev1.NamespaceFinalizersRemaining, "ContentHasNoFinalizers", "All content-preserving finalizers finished"},
}

// namespaceConditions are the conditions of a namespace whose cleanup left pending, by
// resource, objects waiting for their graceful deletion. Finalizers never remain: the
// cleanup drops the content's finalizers.
func namespaceConditions(pending map[schema.GroupResource]int) []corev1.NamespaceCondition {
	var remaining []string
	for gr, n := range pending {
		if n > 0 {
			remaining = append(remaining, fmt.Sprintf("%s.%s has %d resource instances", gr.Resource, gr.Group, n))
		}
	}
	sort.Strings(remaining)
	out := make([]corev1.NamespaceCondition, 0, len(namespaceConditionTypes))
	for _, c := range namespaceConditionTypes {
		cond := corev1.NamespaceCondition{Type: c.kind, Status: corev1.ConditionFalse, Reason: c.reason, Message: c.message}
		if c.kind == corev1.NamespaceContentRemaining && len(remaining) > 0 {
			cond.Status, cond.Reason = corev1.ConditionTrue, "SomeResourcesRemain"
			cond.Message = "Some resources are remaining: " + strings.Join(remaining, ", ")
		}
		out = append(out, cond)
	}
	return out
}

// mergeNamespaceConditions sets want in status as upstream's updateConditions does: a
// condition's lastTransitionTime changes only with its status.
func mergeNamespaceConditions(status *corev1.NamespaceStatus, want []corev1.NamespaceCondition, now metav1.Time) {
	for _, w := range want {
		i := slices.IndexFunc(status.Conditions, func(c corev1.NamespaceCondition) bool { return c.Type == w.Type })
		if i < 0 {
			w.LastTransitionTime = now
			status.Conditions = append(status.Conditions, w)
			continue
		}
		c := &status.Conditions[i]
		if c.Status != w.Status {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message = w.Status, w.Reason, w.Message
	}
}

// setNamespaceConditions records the cleanup's conditions (and phase Terminating, which
// an apiserver that only set deletionTimestamp may have left out) in ns's status. An
// unchanged status is not written: each write wakes the cleanup again.
func (r *Registry) setNamespaceConditions(ctx context.Context, ns string, pending map[schema.GroupResource]int) error {
	s := r.namespaceStore()
	want := namespaceConditions(pending)
	err := s.Storage().GuaranteedUpdate(ctx, s.StorageKey("", ns), s.Definition().New(), false, nil, func(cur runtime.Object) (runtime.Object, error) {
		n := cur.(*corev1.Namespace)
		if n.DeletionTimestamp != nil {
			n.Status.Phase = corev1.NamespaceTerminating
			mergeNamespaceConditions(&n.Status, want, metav1.Now())
		}
		return n, nil
	})
	if err != nil && !storage.IsNotFound(err) {
		return fmt.Errorf("namespace %s conditions: %w", ns, err)
	}
	return nil
}
