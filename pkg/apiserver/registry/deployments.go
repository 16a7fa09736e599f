package registry

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func deploymentsKind() *Kind {
	return &Kind{
		Names: Names{Group: "apps", Version: "v1", Kind: "Deployment", ListKind: "DeploymentList", Plural: "deployments", Singular: "deployment",
			ShortNames: []string{"deploy"}, Categories: []string{"all"}, Namespaced: true},
		New:     func() runtime.Object { return &appsv1.Deployment{} },
		NewList: func() runtime.Object { return &appsv1.DeploymentList{} },
		Status:  true,
		Strategy: Strategy{
			GenerationOnSpec: true,
			PrepareForCreate: func(obj runtime.Object) {
				obj.(*appsv1.Deployment).Status = appsv1.DeploymentStatus{}
			},
			Default: func(obj runtime.Object) {
				d := obj.(*appsv1.Deployment)
				if d.Spec.Replicas == nil {
					one := int32(1)
					d.Spec.Replicas = &one
				}
				if d.Spec.Strategy.Type == "" {
					d.Spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
				}
				if d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
					if d.Spec.Strategy.RollingUpdate == nil {
						d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
					}
					ru := d.Spec.Strategy.RollingUpdate
					ru.MaxUnavailable = defaultIntOrString(ru.MaxUnavailable, intstr.FromString("25%"))
					ru.MaxSurge = defaultIntOrString(ru.MaxSurge, intstr.FromString("25%"))
				}
				if d.Spec.RevisionHistoryLimit == nil {
					n := int32(10)
					d.Spec.RevisionHistoryLimit = &n
				}
				if d.Spec.ProgressDeadlineSeconds == nil {
					n := int32(600)
					d.Spec.ProgressDeadlineSeconds = &n
				}
				defaultPodSpec(&d.Spec.Template.Spec)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				d := obj.(*appsv1.Deployment)
				p := field.NewPath("spec")
				var errs field.ErrorList
				if d.Spec.Replicas != nil && *d.Spec.Replicas < 0 {
					errs = append(errs, field.Invalid(p.Child("replicas"), *d.Spec.Replicas, "must be greater than or equal to 0"))
				}
				if d.Spec.Selector == nil {
					errs = append(errs, field.Required(p.Child("selector"), ""))
				} else {
					errs = append(errs, metav1validation.ValidateLabelSelector(d.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
					if len(d.Spec.Selector.MatchLabels)+len(d.Spec.Selector.MatchExpressions) == 0 {
						errs = append(errs, field.Invalid(p.Child("selector"), d.Spec.Selector, "empty selector is invalid for deployment"))
					} else if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil && !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
						errs = append(errs, field.Invalid(p.Child("template", "metadata", "labels"), d.Spec.Template.Labels, "`selector` does not match template `labels`"))
					}
				}
				errs = append(errs, metav1validation.ValidateLabels(d.Spec.Template.Labels, p.Child("template", "metadata", "labels"))...)
				errs = append(errs, validatePodSpec(&d.Spec.Template.Spec, p.Child("template", "spec"))...)
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return immutable(obj.(*appsv1.Deployment).Spec.Selector, old.(*appsv1.Deployment).Spec.Selector, field.NewPath("spec", "selector"))
			},
		},
	}
}

// ScaleStore serves deployments/scale as autoscaling/v1 Scale.
type ScaleStore struct{ deployments *Store }

func (s *ScaleStore) New() runtime.Object { return &autoscalingv1.Scale{} }
func (s *ScaleStore) Kind() schema.GroupVersionKind {
	return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
}

func scaleOf(d *appsv1.Deployment) *autoscalingv1.Scale {
	sel := ""
	if d.Spec.Selector != nil {
		if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
			sel = s.String()
		}
	}
	var replicas int32
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace, UID: d.UID,
			ResourceVersion: d.ResourceVersion, CreationTimestamp: d.CreationTimestamp},
		Spec:   autoscalingv1.ScaleSpec{Replicas: replicas},
		Status: autoscalingv1.ScaleStatus{Replicas: d.Status.Replicas, Selector: sel},
	}
}

func (s *ScaleStore) Get(ctx context.Context, ns, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	obj, err := s.deployments.Get(ctx, ns, name, opts)
	if err != nil {
		return nil, err
	}
	return scaleOf(obj.(*appsv1.Deployment)), nil
}

func (s *ScaleStore) Update(ctx context.Context, ns, name string, transform TransformFunc, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, _, err := s.deployments.Update(ctx, ns, name, func(ctx context.Context, cur runtime.Object) (runtime.Object, error) {
		if cur == nil {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, name)
		}
		d := cur.(*appsv1.Deployment)
		newObj, err := transform(ctx, scaleOf(d))
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
		if scale.ResourceVersion != "" && scale.ResourceVersion != d.ResourceVersion {
			return nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
		}
		r := scale.Spec.Replicas
		d.Spec.Replicas = &r
		return d, nil
	}, opts)
	if err != nil {
		return nil, false, err
	}
	return scaleOf(obj.(*appsv1.Deployment)), false, nil
}
