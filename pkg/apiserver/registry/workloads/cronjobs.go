package workloads

import (
	"regexp"
	"strings"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/registry/core"
	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func CronJobsKind() *registry.Kind {
	return core.WithTemplateInitResizePolicy(&registry.Kind{
		Names: registry.Names{Group: "batch", Version: "v1", Kind: "CronJob", ListKind: "CronJobList", Plural: "cronjobs", Singular: "cronjob",
			ShortNames: []string{"cj"}, Categories: []string{"all"}, Namespaced: true},
		New:     func() runtime.Object { return &batchv1.CronJob{} },
		NewList: func() runtime.Object { return &batchv1.CronJobList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForUpdate:       registry.Rule(func(cj, old *batchv1.CronJob) { cj.Status = old.Status }),
			PrepareForStatusUpdate: registry.Rule(func(cj, old *batchv1.CronJob) { cj.Spec = old.Spec }),
			SpecChanged:            registry.Changed(func(cj *batchv1.CronJob) batchv1.CronJobSpec { return cj.Spec }),
			PrepareForCreate:       func(obj runtime.Object) { obj.(*batchv1.CronJob).Status = batchv1.CronJobStatus{} },
			Default: func(obj runtime.Object) {
				s := &obj.(*batchv1.CronJob).Spec
				if s.ConcurrencyPolicy == "" {
					s.ConcurrencyPolicy = batchv1.AllowConcurrent
				}
				if s.Suspend == nil {
					s.Suspend = registry.BoolPtr(false)
				}
				if s.SuccessfulJobsHistoryLimit == nil {
					s.SuccessfulJobsHistoryLimit = registry.Int32Ptr(3)
				}
				if s.FailedJobsHistoryLimit == nil {
					s.FailedJobsHistoryLimit = registry.Int32Ptr(1)
				}
				// Only the pod template is defaulted, not the job spec around it (as upstream).
				core.DefaultPodSpec(&s.JobTemplate.Spec.Template.Spec)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				cj := obj.(*batchv1.CronJob)
				errs := validateCronJobSpec(&cj.Spec)
				if len(cj.Name) > 52 {
					errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, "must be no more than 52 characters"))
				}
				return errs
			},
		},
	}, field.NewPath("spec", "jobTemplate", "spec", "template"),
		func(obj runtime.Object) *corev1.PodTemplateSpec {
			o := obj.(*batchv1.CronJob)
			return &o.Spec.JobTemplate.Spec.Template
		})
}

// validateCronJobSpec is upstream's validateCronJobSpec. A TZ in the schedule is refused on
// update too (upstream lets an object that already had one keep it).
func validateCronJobSpec(s *batchv1.CronJobSpec) field.ErrorList {
	p := field.NewPath("spec")
	var errs field.ErrorList
	if s.Schedule == "" {
		errs = append(errs, field.Required(p.Child("schedule"), ""))
	} else {
		if _, err := cron.ParseStandard(s.Schedule); err != nil {
			errs = append(errs, field.Invalid(p.Child("schedule"), s.Schedule, err.Error()))
		}
		if strings.Contains(s.Schedule, "TZ") {
			errs = append(errs, field.Invalid(p.Child("schedule"), s.Schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
		}
	}
	errs = append(errs, validateTimeZone(s.TimeZone, p.Child("timeZone"))...)
	if s.StartingDeadlineSeconds != nil && *s.StartingDeadlineSeconds < 0 {
		errs = append(errs, field.Invalid(p.Child("startingDeadlineSeconds"), *s.StartingDeadlineSeconds, "must be greater than or equal to 0"))
	}
	switch s.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(p.Child("concurrencyPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("concurrencyPolicy"), s.ConcurrencyPolicy, []batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}
	jt := p.Child("jobTemplate")
	errs = append(errs, validateJobSpec(&s.JobTemplate.Spec, jt.Child("spec"))...)
	if s.JobTemplate.Spec.Selector != nil {
		errs = append(errs, field.Invalid(jt.Child("spec", "selector"), s.JobTemplate.Spec.Selector, "`selector` will be auto-generated"))
	}
	if m := s.JobTemplate.Spec.ManualSelector; m != nil && *m {
		errs = append(errs, field.NotSupported(jt.Child("spec", "manualSelector"), s.JobTemplate.Spec.ManualSelector, []string{"nil", "false"}))
	}
	errs = append(errs, registry.ValidateNonnegative(s.SuccessfulJobsHistoryLimit, p.Child("successfulJobsHistoryLimit"))...)
	errs = append(errs, registry.ValidateNonnegative(s.FailedJobsHistoryLimit, p.Child("failedJobsHistoryLimit"))...)
	return errs
}

// validTimeZoneCharacters is upstream's: one component of an IANA zone name.
var validTimeZoneCharacters = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

// validateTimeZone is upstream's: nil, or a zone this host's tz database knows.
func validateTimeZone(tz *string, p *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(p, tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !validTimeZoneCharacters.MatchString(part) {
			return field.ErrorList{field.Invalid(p, tz, "unknown time zone "+*tz)}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(p, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(p, tz, err.Error()))
	}
	return errs
}
