package workloads

import (
	"fmt"
	"math"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/registry/core"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The unprefixed labels upstream's job strategy still sets next to the batch.kubernetes.io ones.
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

func JobsKind() *registry.Kind {
	return core.WithTemplateInitResizePolicy(&registry.Kind{
		Names: registry.Names{Group: "batch", Version: "v1", Kind: "Job", ListKind: "JobList", Plural: "jobs", Singular: "job",
			Categories: []string{"all"}, Namespaced: true},
		New:     func() runtime.Object { return &batchv1.Job{} },
		NewList: func() runtime.Object { return &batchv1.JobList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForUpdate:       registry.Rule(func(job, old *batchv1.Job) { job.Status = old.Status }),
			PrepareForStatusUpdate: registry.Rule(func(job, old *batchv1.Job) { job.Spec = old.Spec }),
			SpecChanged:            registry.Changed(func(job *batchv1.Job) batchv1.JobSpec { return job.Spec }),
			PrepareForCreate: func(obj runtime.Object) {
				job := obj.(*batchv1.Job)
				job.Status = batchv1.JobStatus{}
				// Upstream defaults on decode, before the strategy generates the selector.
				defaultJob(job)
				if !*job.Spec.ManualSelector {
					generateJobSelector(job)
				}
			},
			Default: func(obj runtime.Object) { defaultJob(obj.(*batchv1.Job)) },
			Validate: func(obj runtime.Object) field.ErrorList {
				job := obj.(*batchv1.Job)
				errs := validateGeneratedJobSelector(job)
				errs = append(errs, validateJobSpec(&job.Spec, field.NewPath("spec"))...)
				p := field.NewPath("spec")
				if job.Spec.Selector == nil {
					errs = append(errs, field.Required(p.Child("selector"), ""))
				} else {
					errs = append(errs, metav1validation.ValidateLabelSelector(job.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
					if sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector); err == nil && !sel.Matches(labels.Set(job.Spec.Template.Labels)) {
						errs = append(errs, field.Invalid(p.Child("template", "metadata", "labels"), job.Spec.Template.Labels, "`selector` does not match template `labels`"))
					}
				}
				if m := job.Spec.CompletionMode; m != nil && *m == batchv1.IndexedCompletion && job.Spec.Completions != nil && *job.Spec.Completions > 0 {
					host := fmt.Sprintf("%s-%d", job.Name, *job.Spec.Completions-1)
					if len(utilvalidation.IsDNS1123Label(host)) > 0 {
						errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), job.Name, "will not able to create pod with invalid DNS label: "+host))
					}
				}
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				s, o := &obj.(*batchv1.Job).Spec, &old.(*batchv1.Job).Spec
				p := field.NewPath("spec")
				var errs field.ErrorList
				if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
					errs = append(errs, registry.Immutable(deref(s.Completions), deref(o.Completions), p.Child("completions"))...)
				}
				errs = append(errs, registry.Immutable(s.Selector, o.Selector, p.Child("selector"))...)
				// A suspended job that never started may change its scheduling directives
				// (upstream's JobMutableNodeSchedulingDirectives); anything else is immutable.
				newT, oldT := s.Template.DeepCopy(), o.Template.DeepCopy()
				if s.Suspend != nil && *s.Suspend {
					for _, t := range []*corev1.PodTemplateSpec{newT, oldT} {
						t.Spec.NodeSelector, t.Spec.Tolerations, t.Spec.Affinity, t.Spec.SchedulingGates = nil, nil, nil, nil
						t.Labels, t.Annotations = nil, nil
					}
				}
				if !apiequality.Semantic.DeepEqual(newT, oldT) {
					errs = append(errs, field.Invalid(p.Child("template"), s.Template, "field is immutable"))
				}
				errs = append(errs, registry.Immutable(deref(s.CompletionMode), deref(o.CompletionMode), p.Child("completionMode"))...)
				if !apiequality.Semantic.DeepEqual(s.PodFailurePolicy, o.PodFailurePolicy) {
					errs = append(errs, field.Invalid(p.Child("podFailurePolicy"), s.PodFailurePolicy, "field is immutable"))
				}
				errs = append(errs, registry.Immutable(deref(s.BackoffLimitPerIndex), deref(o.BackoffLimitPerIndex), p.Child("backoffLimitPerIndex"))...)
				errs = append(errs, registry.Immutable(deref(s.ManagedBy), deref(o.ManagedBy), p.Child("managedBy"))...)
				return errs
			},
		},
	}, field.NewPath("spec", "template"),
		func(obj runtime.Object) *corev1.PodTemplateSpec { o := obj.(*batchv1.Job); return &o.Spec.Template })
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// defaultJob is upstream's SetDefaults_Job with 1.33's feature gates (JobPodReplacementPolicy on).
func defaultJob(job *batchv1.Job) {
	s := &job.Spec
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = registry.Int32Ptr(1)
		s.Parallelism = registry.Int32Ptr(1)
	}
	if s.Parallelism == nil {
		s.Parallelism = registry.Int32Ptr(1)
	}
	if s.BackoffLimit == nil {
		if s.BackoffLimitPerIndex != nil {
			s.BackoffLimit = registry.Int32Ptr(math.MaxInt32)
		} else {
			s.BackoffLimit = registry.Int32Ptr(6)
		}
	}
	if s.Template.Labels != nil && len(job.Labels) == 0 {
		job.Labels = map[string]string{}
		for k, v := range s.Template.Labels {
			job.Labels[k] = v
		}
	}
	if s.CompletionMode == nil {
		m := batchv1.NonIndexedCompletion
		s.CompletionMode = &m
	}
	if s.Suspend == nil {
		s.Suspend = registry.BoolPtr(false)
	}
	if s.PodFailurePolicy != nil {
		for _, rule := range s.PodFailurePolicy.Rules {
			for i := range rule.OnPodConditions {
				if rule.OnPodConditions[i].Status == "" {
					rule.OnPodConditions[i].Status = corev1.ConditionTrue
				}
			}
		}
	}
	if s.PodReplacementPolicy == nil {
		pol := batchv1.TerminatingOrFailed
		if s.PodFailurePolicy != nil {
			pol = batchv1.Failed
		}
		s.PodReplacementPolicy = &pol
	}
	if s.ManualSelector == nil {
		s.ManualSelector = registry.BoolPtr(false)
	}
	core.DefaultPodSpec(&s.Template.Spec)
}

// generateJobSelector labels the template with the job's name and uid and selects on the
// uid, as upstream's job strategy does unless spec.manualSelector is set.
func generateJobSelector(job *batchv1.Job) {
	t := &job.Spec.Template
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	for _, k := range []string{legacyJobNameLabel, batchv1.JobNameLabel} {
		if _, ok := t.Labels[k]; !ok {
			t.Labels[k] = job.Name
		}
	}
	for _, k := range []string{legacyControllerUIDLabel, batchv1.ControllerUidLabel} {
		if _, ok := t.Labels[k]; !ok {
			t.Labels[k] = string(job.UID)
		}
	}
	if job.Spec.Selector == nil {
		job.Spec.Selector = &metav1.LabelSelector{}
	}
	if job.Spec.Selector.MatchLabels == nil {
		job.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := job.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !ok {
		job.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(job.UID)
	}
}

func validateGeneratedJobSelector(job *batchv1.Job) field.ErrorList {
	if (job.Spec.ManualSelector != nil && *job.Spec.ManualSelector) || job.Spec.Selector == nil {
		return nil
	}
	var errs field.ErrorList
	if job.UID == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "uid"), ""))
	}
	p := field.NewPath("spec", "template", "metadata")
	expected := map[string]string{}
	for _, l := range []struct{ key, value string }{
		{legacyControllerUIDLabel, string(job.UID)}, {legacyJobNameLabel, job.Name},
		{batchv1.ControllerUidLabel, string(job.UID)}, {batchv1.JobNameLabel, job.Name},
	} {
		errs = append(errs, validateHasLabel(job.Spec.Template.Labels, p, l.key, l.value)...)
		expected[l.key] = l.value
	}
	if sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector); err == nil && !sel.Matches(labels.Set(expected)) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), job.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

// validateHasLabel is upstream's ValidateHasLabel.
func validateHasLabel(lbls map[string]string, p *field.Path, key, want string) field.ErrorList {
	got, ok := lbls[key]
	if !ok {
		return field.ErrorList{field.Required(p.Child("labels").Key(key), fmt.Sprintf("must be '%s'", want))}
	}
	if got != want {
		return field.ErrorList{field.Invalid(p.Child("labels").Key(key), lbls, fmt.Sprintf("must be '%s'", want))}
	}
	return nil
}

// validateJobSpec is the part of upstream's job spec validation shared with cron jobs'
// job templates.
func validateJobSpec(s *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, registry.ValidateNonnegative(s.Parallelism, p.Child("parallelism"))...)
	errs = append(errs, registry.ValidateNonnegative(s.Completions, p.Child("completions"))...)
	errs = append(errs, registry.ValidateNonnegative(s.BackoffLimit, p.Child("backoffLimit"))...)
	if s.ActiveDeadlineSeconds != nil && *s.ActiveDeadlineSeconds <= 0 {
		errs = append(errs, field.Invalid(p.Child("activeDeadlineSeconds"), *s.ActiveDeadlineSeconds, "must be greater than zero"))
	}
	if s.TTLSecondsAfterFinished != nil {
		errs = append(errs, registry.ValidateNonnegative(s.TTLSecondsAfterFinished, p.Child("ttlSecondsAfterFinished"))...)
	}
	if m := s.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
		errs = append(errs, field.NotSupported(p.Child("completionMode"), *m, []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
	}
	if m := s.CompletionMode; m != nil && *m == batchv1.IndexedCompletion && s.Completions == nil {
		errs = append(errs, field.Required(p.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
	}
	if r := s.PodReplacementPolicy; r != nil {
		if *r != batchv1.TerminatingOrFailed && *r != batchv1.Failed {
			errs = append(errs, field.NotSupported(p.Child("podReplacementPolicy"), *r, []batchv1.PodReplacementPolicy{batchv1.TerminatingOrFailed, batchv1.Failed}))
		} else if s.PodFailurePolicy != nil && *r != batchv1.Failed {
			errs = append(errs, field.NotSupported(p.Child("podReplacementPolicy"), *r, []batchv1.PodReplacementPolicy{batchv1.Failed}))
		}
	}
	t := p.Child("template")
	errs = append(errs, core.ValidatePodTemplate(&s.Template, nil, t)...)
	rp := t.Child("spec", "restartPolicy")
	switch rp0 := s.Template.Spec.RestartPolicy; {
	case rp0 == corev1.RestartPolicyAlways || rp0 == "":
		errs = append(errs, field.Required(rp, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	case rp0 != corev1.RestartPolicyOnFailure && rp0 != corev1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(rp, rp0, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	case s.PodFailurePolicy != nil && rp0 != corev1.RestartPolicyNever:
		errs = append(errs, field.Invalid(rp, rp0, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	return errs
}
