package flowcontrol

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
)

// Store is what the controller writes the configuration objects with: the registry's store
// of FlowSchemas or of PriorityLevelConfigurations.
type Store interface {
	Get(ctx context.Context, ns, name string, opts *metav1.GetOptions) (runtime.Object, error)
	Create(ctx context.Context, ns, name string, obj runtime.Object, opts *metav1.CreateOptions) (runtime.Object, error)
	Update(ctx context.Context, ns, name string, transform registry.TransformFunc, opts *metav1.UpdateOptions) (runtime.Object, bool, error)
	UpdateStatus(ctx context.Context, ns, name string, transform registry.TransformFunc, opts *metav1.UpdateOptions) (runtime.Object, bool, error)
	Delete(ctx context.Context, ns, name string, opts *metav1.DeleteOptions) (runtime.Object, bool, error)
	List(ctx context.Context, ns string, opts *metav1.ListOptions) (runtime.Object, error)
}

// producerManager is the field manager of upstream's bootstrap configuration writes.
const producerManager = "api-priority-and-fairness-config-producer-v1"

// kindOps are the spec operations the ensurer needs for one kind.
type kindOps struct {
	store       Store
	specEqual   func(want, have runtime.Object) bool
	replaceSpec func(into, from runtime.Object)
}

var plOps = func(st Store) kindOps {
	return kindOps{store: st,
		specEqual: func(want, have runtime.Object) bool {
			return apiequality.Semantic.DeepEqual(want.(*flowcontrolv1.PriorityLevelConfiguration).Spec, have.(*flowcontrolv1.PriorityLevelConfiguration).Spec)
		},
		replaceSpec: func(into, from runtime.Object) {
			into.(*flowcontrolv1.PriorityLevelConfiguration).Spec = *from.(*flowcontrolv1.PriorityLevelConfiguration).Spec.DeepCopy()
		}}
}

var fsOps = func(st Store) kindOps {
	return kindOps{store: st,
		specEqual: func(want, have runtime.Object) bool {
			return apiequality.Semantic.DeepEqual(want.(*flowcontrolv1.FlowSchema).Spec, have.(*flowcontrolv1.FlowSchema).Spec)
		},
		replaceSpec: func(into, from runtime.Object) {
			into.(*flowcontrolv1.FlowSchema).Spec = *from.(*flowcontrolv1.FlowSchema).Spec.DeepCopy()
		}}
}

// EnsureBootstrap creates the suggested and mandatory FlowSchemas and priority levels that
// are missing and revises existing ones, as upstream's bootstrap configuration producer: a
// mandatory object's spec is always put back; a suggested one's only while its
// apf.kubernetes.io/autoupdate-spec annotation is true (or, without the annotation, while
// nobody changed it: generation 1); the annotation is set to what was decided. Then the
// objects that once were bootstrap ones (annotation true) but are no more are deleted.
func EnsureBootstrap(ctx context.Context, pls, fss Store) error {
	steps := []struct {
		ops       kindOps
		objs      []runtime.Object
		mandatory bool
	}{
		{plOps(pls), objects(bootstrap.SuggestedPriorityLevelConfigurations), false},
		{fsOps(fss), objects(bootstrap.SuggestedFlowSchemas), false},
		{plOps(pls), objects(bootstrap.MandatoryPriorityLevelConfigurations), true},
		{fsOps(fss), objects(bootstrap.MandatoryFlowSchemas), true},
	}
	for _, s := range steps {
		for _, o := range s.objs {
			if err := ensure(ctx, s.ops, o, s.mandatory); err != nil {
				return err
			}
		}
	}
	if err := removeUnwanted(ctx, pls, append(objects(bootstrap.MandatoryPriorityLevelConfigurations), objects(bootstrap.SuggestedPriorityLevelConfigurations)...)); err != nil {
		return err
	}
	return removeUnwanted(ctx, fss, append(objects(bootstrap.MandatoryFlowSchemas), objects(bootstrap.SuggestedFlowSchemas)...))
}

// KeepBootstrap runs EnsureBootstrap every interval until ctx ends (upstream's producer
// does so whether or not API priority and fairness is on).
func KeepBootstrap(ctx context.Context, pls, fss Store, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := EnsureBootstrap(ctx, pls, fss); err != nil && ctx.Err() == nil {
				log.Warn("API priority and fairness bootstrap configuration not ensured", "err", err)
			}
		}
	}
}

func objects[T runtime.Object](in []T) []runtime.Object {
	out := make([]runtime.Object, len(in))
	for i, o := range in {
		out[i] = o.DeepCopyObject()
	}
	return out
}

// ensure creates boot when missing, or revises the existing object.
func ensure(ctx context.Context, ops kindOps, boot runtime.Object, mandatory bool) error {
	name := nameOf(boot)
	if cur, err := ops.store.Get(ctx, "", name, &metav1.GetOptions{}); err == nil {
		if _, ok := revise(ops, cur, boot, mandatory); !ok {
			return nil // no write when nothing is to change
		}
	}
	_, err := ops.store.Create(ctx, "", name, boot.DeepCopyObject(), &metav1.CreateOptions{FieldManager: producerManager})
	if err == nil || !apierrors.IsAlreadyExists(err) {
		return wrap(err, "create", name)
	}
	_, _, err = ops.store.Update(ctx, "", name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		if cur == nil {
			return nil, apierrors.NewNotFound(flowcontrolv1.Resource("flowschemas"), name)
		}
		revised, ok := revise(ops, cur, boot, mandatory)
		if !ok {
			return cur, nil
		}
		return revised, nil
	}, &metav1.UpdateOptions{FieldManager: producerManager})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // someone else is at it; the next round looks again
	}
	return wrap(err, "update", name)
}

// revise is upstream's ReviseIfNeeded: the revised object, or false when cur is fine.
func revise(ops kindOps, cur, boot runtime.Object, mandatory bool) (runtime.Object, bool) {
	acc, _ := meta.Accessor(cur)
	auto := mandatory
	if !auto {
		if v, err := strconv.ParseBool(acc.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err == nil {
			auto = v
		} else {
			auto = acc.GetGeneration() == 1
		}
	}
	annotate := true
	if v, ok := acc.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]; ok {
		if b, err := strconv.ParseBool(v); err == nil && b == auto {
			annotate = false
		}
	}
	specChanged := auto && !ops.specEqual(boot, cur)
	if !annotate && !specChanged {
		return nil, false
	}
	out := cur.DeepCopyObject()
	if specChanged {
		ops.replaceSpec(out, boot)
	}
	if annotate {
		oa, _ := meta.Accessor(out)
		ann := oa.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[flowcontrolv1.AutoUpdateAnnotationKey] = strconv.FormatBool(auto)
		oa.SetAnnotations(ann)
	}
	return out, true
}

// removeUnwanted deletes the objects not among wanted that say they are auto-updated.
func removeUnwanted(ctx context.Context, st Store, wanted []runtime.Object) error {
	names := map[string]bool{}
	for _, o := range wanted {
		names[nameOf(o)] = true
	}
	list, err := st.List(ctx, "", &metav1.ListOptions{})
	if err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	for _, it := range items {
		acc, _ := meta.Accessor(it)
		if names[acc.GetName()] {
			continue
		}
		if auto, err := strconv.ParseBool(acc.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err != nil || !auto {
			continue
		}
		if _, _, err := st.Delete(ctx, "", acc.GetName(), &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return wrap(err, "delete", acc.GetName())
		}
	}
	return nil
}

func nameOf(o runtime.Object) string {
	acc, _ := meta.Accessor(o)
	return acc.GetName()
}

func wrap(err error, op, name string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("flowcontrol: %s bootstrap object %s: %w", op, name, err)
}
