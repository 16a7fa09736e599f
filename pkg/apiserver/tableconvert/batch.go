package tableconvert

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// The batch/v1 printers, as upstream's printJob and printCronJob.
func init() {
	containersCol := wide("Containers", "string", "Names of each container in the template.")
	imagesCol := wide("Images", "string", "Images referenced by each container in the template.")
	jobSpecDocs := batchv1.JobSpec{}.SwaggerDoc()

	register(&batchv1.JobList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Status", "string", "Status of the job."),
		col("Completions", "string", batchv1.JobStatus{}.SwaggerDoc()["succeeded"]),
		col("Duration", "string", "Time required to complete the job."),
		ageColumn(),
		containersCol, imagesCol,
		wide("Selector", "string", jobSpecDocs["selector"]),
	}, jobRow)

	cjSpec, cjStatus := batchv1.CronJobSpec{}.SwaggerDoc(), batchv1.CronJobStatus{}.SwaggerDoc()
	register(&batchv1.CronJobList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Schedule", "string", cjSpec["schedule"]),
		col("Timezone", "string", cjSpec["timeZone"]),
		col("Suspend", "boolean", cjSpec["suspend"]),
		col("Active", "integer", cjStatus["active"]),
		col("Last Schedule", "string", cjStatus["lastScheduleTime"]),
		ageColumn(),
		containersCol, imagesCol,
		wide("Selector", "string", jobSpecDocs["selector"]),
	}, func(cj *batchv1.CronJob, now time.Time) ([]any, []metav1.TableRowCondition) {
		last := "<none>"
		if cj.Status.LastScheduleTime != nil {
			last = age(*cj.Status.LastScheduleTime, now)
		}
		tz := "<none>"
		if cj.Spec.TimeZone != nil {
			tz = *cj.Spec.TimeZone
		}
		suspend := "<unset>"
		if cj.Spec.Suspend != nil {
			suspend = "False"
			if *cj.Spec.Suspend {
				suspend = "True"
			}
		}
		names, images := containerNamesImages(cj.Spec.JobTemplate.Spec.Template.Spec.Containers)
		return []any{cj.Name, cj.Spec.Schedule, tz, suspend, int64(len(cj.Status.Active)), last, age(cj.CreationTimestamp, now),
			names, images, metav1.FormatLabelSelector(cj.Spec.JobTemplate.Spec.Selector)}, nil
	})
}

func jobRow(job *batchv1.Job, now time.Time) ([]any, []metav1.TableRowCondition) {
	var completions string
	switch par := derefInt32(job.Spec.Parallelism, 0); {
	case job.Spec.Completions != nil:
		completions = fmt.Sprintf("%d/%d", job.Status.Succeeded, *job.Spec.Completions)
	case par > 1:
		completions = fmt.Sprintf("%d/1 of %d", job.Status.Succeeded, par)
	default:
		completions = fmt.Sprintf("%d/1", job.Status.Succeeded)
	}
	var took string
	switch {
	case job.Status.StartTime == nil:
	case job.Status.CompletionTime == nil:
		took = duration.HumanDuration(now.Sub(job.Status.StartTime.Time))
	default:
		took = duration.HumanDuration(job.Status.CompletionTime.Sub(job.Status.StartTime.Time))
	}
	status := "Running"
	switch {
	case jobCondition(job, batchv1.JobComplete):
		status = "Complete"
	case jobCondition(job, batchv1.JobFailed):
		status = "Failed"
	case job.DeletionTimestamp != nil:
		status = "Terminating"
	case jobCondition(job, batchv1.JobSuspended):
		status = "Suspended"
	case jobCondition(job, batchv1.JobFailureTarget):
		status = "FailureTarget"
	}
	names, images := containerNamesImages(job.Spec.Template.Spec.Containers)
	return []any{job.Name, status, completions, took, age(job.CreationTimestamp, now),
		names, images, metav1.FormatLabelSelector(job.Spec.Selector)}, nil
}

// jobCondition is upstream's hasJobCondition: the first condition of type t decides.
func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
