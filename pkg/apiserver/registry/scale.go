package registry

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// ScaleAccessor reads and writes the replica count of one kind, for its scale subresource.
type ScaleAccessor struct {
	// Replicas is the desired count (spec.replicas, its default when unset).
	Replicas func(obj runtime.Object) int32
	// SetReplicas sets spec.replicas.
	SetReplicas func(obj runtime.Object, n int32)
	// StatusReplicas is status.replicas.
	StatusReplicas func(obj runtime.Object) int32
	// Selector is the pod selector in label-selector string form, "" if it has none.
	Selector func(obj runtime.Object) string
	// ReplicasPath is where Replicas lives (spec.replicas when nil), for the managedFields
	// of scale writes.
	ReplicasPath []string
}

// replicasMapping maps the parent's replicas path for the field managers' scale handler.
func (s *ScaleStore) replicasMapping() managedfields.ResourcePathMappings {
	p := fieldpath.MakePathOrDie("spec", "replicas")
	if len(s.access.ReplicasPath) > 0 {
		elems := make([]any, len(s.access.ReplicasPath))
		for i, e := range s.access.ReplicasPath {
			elems[i] = e
		}
		p = fieldpath.MakePathOrDie(elems...)
	}
	return managedfields.ResourcePathMappings{s.store.kind.GroupVersion().String(): p}
}

// LabelSelectorString renders a selector as the Scale's status.selector, "" if invalid.
func LabelSelectorString(sel *metav1.LabelSelector) string {
	if sel == nil {
		return ""
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return ""
	}
	return s.String()
}

// MapSelectorString renders a replication controller's map selector.
func MapSelectorString(sel map[string]string) string {
	return labels.SelectorFromSet(sel).String()
}

func ReplicasOr1(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// ScaleStore serves the scale subresource of any kind with a ScaleAccessor as
// autoscaling/v1 Scale, as upstream does for deployments, replica sets, stateful sets and
// replication controllers.
type ScaleStore struct {
	store  *Store
	access *ScaleAccessor
}

func (s *ScaleStore) New() runtime.Object { return &autoscalingv1.Scale{} }
func (s *ScaleStore) Kind() schema.GroupVersionKind {
	return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
}

func (s *ScaleStore) scaleOf(obj runtime.Object) *autoscalingv1.Scale {
	a, _ := meta.Accessor(obj)
	sc := &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: a.GetName(), Namespace: a.GetNamespace(), UID: a.GetUID(),
			ResourceVersion: a.GetResourceVersion(), CreationTimestamp: a.GetCreationTimestamp()},
		Spec:   autoscalingv1.ScaleSpec{Replicas: s.access.Replicas(obj)},
		Status: autoscalingv1.ScaleStatus{Replicas: s.access.StatusReplicas(obj), Selector: s.access.Selector(obj)},
	}
	// The parent's managers of replicas, as managers of the Scale's spec.replicas (upstream's
	// scale handler); the others are not the Scale's.
	if entries, err := managedfields.NewScaleHandler(a.GetManagedFields(), s.store.kind.GroupVersion(), s.replicasMapping()).ToSubresource(); err == nil {
		sc.ManagedFields = entries
	}
	return sc
}

func (s *ScaleStore) Get(ctx context.Context, ns, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	obj, err := s.store.Get(ctx, ns, name, opts)
	if err != nil {
		return nil, err
	}
	return answerScale(s.scaleOf(obj)), nil
}

// answerScale drops the managedFields of a Scale that is answered: upstream's Scale answers
// carry none (its scale handler maps them only for the field manager, as the transform's
// Scale here does).
func answerScale(sc *autoscalingv1.Scale) *autoscalingv1.Scale {
	sc.ManagedFields = nil
	return sc
}

// Update sets spec.replicas from the Scale the transform makes of the current one; the
// object's own validation then runs as on any update.
func (s *ScaleStore) Update(ctx context.Context, ns, name string, transform TransformFunc, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, _, err := s.store.Update(ctx, ns, name, func(ctx context.Context, cur runtime.Object) (runtime.Object, error) {
		if cur == nil {
			return nil, apierrors.NewNotFound(s.store.gr(), name)
		}
		rv := s.scaleOf(cur).ResourceVersion
		newObj, err := transform(ctx, s.scaleOf(cur))
		if err != nil {
			return nil, err
		}
		scale, ok := newObj.(*autoscalingv1.Scale)
		if !ok {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("expected Scale, got %T", newObj))
		}
		if scale.Name != name {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", scale.Name, name))
		}
		if scale.Spec.Replicas < 0 {
			return nil, apierrors.NewInvalid(schema.GroupKind{Group: "autoscaling", Kind: "Scale"}, name,
				field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), scale.Spec.Replicas, "must be greater than or equal to 0")})
		}
		if scale.ResourceVersion != "" && scale.ResourceVersion != rv {
			return nil, apierrors.NewConflict(s.store.gr(), name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
		}
		s.access.SetReplicas(cur, scale.Spec.Replicas)
		ca, _ := meta.Accessor(cur)
		if entries, err := managedfields.NewScaleHandler(ca.GetManagedFields(), s.store.kind.GroupVersion(), s.replicasMapping()).ToParent(scale.ManagedFields); err == nil {
			ca.SetManagedFields(entries)
		}
		return cur, nil
	}, opts)
	if err != nil {
		return nil, false, err
	}
	return answerScale(s.scaleOf(obj)), false, nil
}
