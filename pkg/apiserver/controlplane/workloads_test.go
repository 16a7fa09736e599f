package controlplane_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// podTemplate is a minimal template: one container, the given labels.
func podTemplate(lbl map[string]string, restart corev1.RestartPolicy) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: lbl},
		Spec:       corev1.PodSpec{RestartPolicy: restart, Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
	}
}

// defaultedPodSpec is what upstream's SetDefaults_PodSpec and SetDefaults_Container make of
// podTemplate's spec (taken from k8s.io/kubernetes v1.33 pkg/apis/core/v1/defaults.go).
func defaultedPodSpec(restart corev1.RestartPolicy) corev1.PodSpec {
	if restart == "" {
		restart = corev1.RestartPolicyAlways
	}
	return corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27", ImagePullPolicy: corev1.PullIfNotPresent,
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile}},
		RestartPolicy: restart, DNSPolicy: corev1.DNSClusterFirst, TerminationGracePeriodSeconds: ptr[int64](30),
		SchedulerName: "default-scheduler", SecurityContext: &corev1.PodSecurityContext{},
	}
}

// workloadSample returns a minimal valid object of the workload kinds, by resource.
func workloadSample(resource, name string) runtime.Object {
	om := metav1.ObjectMeta{Name: name}
	lbl := map[string]string{"app": name}
	sel := &metav1.LabelSelector{MatchLabels: lbl}
	switch resource {
	case "replicasets":
		return &appsv1.ReplicaSet{ObjectMeta: om, Spec: appsv1.ReplicaSetSpec{Selector: sel, Template: podTemplate(lbl, "")}}
	case "statefulsets":
		return &appsv1.StatefulSet{ObjectMeta: om, Spec: appsv1.StatefulSetSpec{Selector: sel, ServiceName: "svc", Template: podTemplate(lbl, "")}}
	case "daemonsets":
		return &appsv1.DaemonSet{ObjectMeta: om, Spec: appsv1.DaemonSetSpec{Selector: sel, Template: podTemplate(lbl, "")}}
	case "controllerrevisions":
		return &appsv1.ControllerRevision{ObjectMeta: om, Revision: 1, Data: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}}
	case "jobs":
		return &batchv1.Job{ObjectMeta: om, Spec: batchv1.JobSpec{Template: podTemplate(nil, corev1.RestartPolicyNever)}}
	case "cronjobs":
		return &batchv1.CronJob{ObjectMeta: om, Spec: batchv1.CronJobSpec{Schedule: "*/5 * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: podTemplate(nil, corev1.RestartPolicyOnFailure)}}}}
	case "horizontalpodautoscalers":
		return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: om, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, MaxReplicas: 5}}
	case "poddisruptionbudgets":
		return &policyv1.PodDisruptionBudget{ObjectMeta: om, Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromInt32(1)), Selector: sel}}
	case "replicationcontrollers":
		t := podTemplate(lbl, "")
		return &corev1.ReplicationController{ObjectMeta: om, Spec: corev1.ReplicationControllerSpec{Template: &t}}
	case "podtemplates":
		return &corev1.PodTemplate{ObjectMeta: om, Template: podTemplate(lbl, "")}
	}
	return nil
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWorkloadDefaults: a minimal manifest of each workload kind is stored with upstream's
// defaults. The expected specs were written from k8s.io/kubernetes v1.37's SetDefaults_*
// functions (apps/v1, batch/v1, autoscaling/v2, core/v1) and job strategy.
func TestWorkloadDefaults(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	lbl := map[string]string{"app": "x"}
	sel := &metav1.LabelSelector{MatchLabels: lbl}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: defaultedPodSpec("")}

	tests := []struct {
		group, resource string
		spec            func(obj runtime.Object) any
		want            func(obj runtime.Object) any
	}{
		{"apps", "deployments", func(o runtime.Object) any { return o.(*appsv1.Deployment).Spec }, func(runtime.Object) any {
			return appsv1.DeploymentSpec{Replicas: ptr[int32](1), Selector: sel, Template: tmpl,
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr(intstr.FromString("25%")), MaxSurge: ptr(intstr.FromString("25%"))}},
				RevisionHistoryLimit: ptr[int32](10), ProgressDeadlineSeconds: ptr[int32](600)}
		}},
		{"apps", "replicasets", func(o runtime.Object) any { return o.(*appsv1.ReplicaSet).Spec }, func(runtime.Object) any {
			return appsv1.ReplicaSetSpec{Replicas: ptr[int32](1), Selector: sel, Template: tmpl}
		}},
		{"apps", "statefulsets", func(o runtime.Object) any { return o.(*appsv1.StatefulSet).Spec }, func(runtime.Object) any {
			return appsv1.StatefulSetSpec{Replicas: ptr[int32](1), Selector: sel, Template: tmpl, ServiceName: "svc",
				PodManagementPolicy: appsv1.OrderedReadyPodManagement,
				UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
					RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr[int32](0), MaxUnavailable: ptr(intstr.FromInt32(1))}},
				RevisionHistoryLimit: ptr[int32](10),
				PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
					WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType}}
		}},
		{"apps", "daemonsets", func(o runtime.Object) any { return o.(*appsv1.DaemonSet).Spec }, func(runtime.Object) any {
			return appsv1.DaemonSetSpec{Selector: sel, Template: tmpl,
				UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{
					MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))}},
				RevisionHistoryLimit: ptr[int32](10)}
		}},
		{"batch", "jobs", func(o runtime.Object) any {
			j := o.(*batchv1.Job)
			return []any{j.Labels, j.Spec}
		}, func(o runtime.Object) any {
			uid := string(o.(*batchv1.Job).UID)
			gen := map[string]string{"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "x", "controller-uid": uid, "job-name": "x"}
			return []any{gen, batchv1.JobSpec{Parallelism: ptr[int32](1), Completions: ptr[int32](1), BackoffLimit: ptr[int32](6),
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": uid}},
				ManualSelector: ptr(false), CompletionMode: ptr(batchv1.NonIndexedCompletion), Suspend: ptr(false),
				PodReplacementPolicy: ptr(batchv1.TerminatingOrFailed),
				Template:             corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: gen}, Spec: defaultedPodSpec(corev1.RestartPolicyNever)}}}
		}},
		{"batch", "cronjobs", func(o runtime.Object) any { return o.(*batchv1.CronJob).Spec }, func(runtime.Object) any {
			return batchv1.CronJobSpec{Schedule: "*/5 * * * *", ConcurrencyPolicy: batchv1.AllowConcurrent, Suspend: ptr(false),
				SuccessfulJobsHistoryLimit: ptr[int32](3), FailedJobsHistoryLimit: ptr[int32](1),
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: defaultedPodSpec(corev1.RestartPolicyOnFailure)}}}}
		}},
		{"autoscaling", "horizontalpodautoscalers", func(o runtime.Object) any { return o.(*autoscalingv2.HorizontalPodAutoscaler).Spec }, func(runtime.Object) any {
			return autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
				MinReplicas:    ptr[int32](1), MaxReplicas: 5,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr[int32](80)}}}}}
		}},
		{"policy", "poddisruptionbudgets", func(o runtime.Object) any { return o.(*policyv1.PodDisruptionBudget).Spec }, func(runtime.Object) any {
			return policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromInt32(1)), Selector: sel}
		}},
		{"", "replicationcontrollers", func(o runtime.Object) any {
			rc := o.(*corev1.ReplicationController)
			return []any{rc.Labels, rc.Spec}
		}, func(runtime.Object) any {
			return []any{lbl, corev1.ReplicationControllerSpec{Replicas: ptr[int32](1), Selector: lbl, Template: &tmpl}}
		}},
		{"", "podtemplates", func(o runtime.Object) any { return o.(*corev1.PodTemplate).Template }, func(runtime.Object) any { return tmpl }},
	}
	for _, tc := range tests {
		t.Run(tc.resource, func(t *testing.T) {
			s := store(r, tc.group, tc.resource)
			in := sample(tc.resource, "x")
			if _, err := s.Create(ctx, "default", "", in, &metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			got, err := s.Get(ctx, "default", "x", &metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if g, w := asJSON(t, tc.spec(got)), asJSON(t, tc.want(got)); g != w {
				t.Errorf("stored:\n%s\nwant (upstream's defaults):\n%s", g, w)
			}
		})
	}
}

// TestPodSpecDefaults: the shared pod spec defaults beyond the minimal manifest: probes,
// ports, volumes, downward API fieldRefs, image pull policy by tag, resource rounding.
func TestPodSpecDefaults(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	rs := workloadSample("replicasets", "full").(*appsv1.ReplicaSet)
	spec := &rs.Spec.Template.Spec
	spec.Containers = []corev1.Container{
		{Name: "latest", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
			Env:           []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
			Resources:     corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.0001")}}},
		{Name: "digest", Image: "nginx@sha256:0000000000000000000000000000000000000000000000000000000000000000"},
		{Name: "registry-port", Image: "localhost:5000/nginx"},
	}
	spec.Volumes = []corev1.Volume{
		{Name: "empty"},
		{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
		{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}},
		{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}},
	}
	out, err := store(r, "apps", "replicasets").Create(ctx, "default", "", rs, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*appsv1.ReplicaSet).Spec.Template.Spec
	c := got.Containers[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"imagePullPolicy without tag", c.ImagePullPolicy, corev1.PullAlways},
		{"imagePullPolicy with digest", got.Containers[1].ImagePullPolicy, corev1.PullIfNotPresent},
		{"imagePullPolicy registry port, no tag", got.Containers[2].ImagePullPolicy, corev1.PullAlways},
		{"port protocol", c.Ports[0].Protocol, corev1.ProtocolTCP},
		{"probe", asJSON(t, []any{c.LivenessProbe.TimeoutSeconds, c.LivenessProbe.PeriodSeconds, c.LivenessProbe.SuccessThreshold, c.LivenessProbe.FailureThreshold,
			c.LivenessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Scheme}), `[1,10,1,3,"/","HTTP"]`},
		{"fieldRef apiVersion", c.Env[0].ValueFrom.FieldRef.APIVersion, "v1"},
		{"cpu rounded up to milli", c.Resources.Limits.Cpu().String(), "1m"},
		{"volume without source", got.Volumes[0].EmptyDir != nil, true},
		{"secret defaultMode", *got.Volumes[1].Secret.DefaultMode, int32(0o644)},
		{"configMap defaultMode", *got.Volumes[2].ConfigMap.DefaultMode, int32(0o644)},
		{"hostPath type", *got.Volumes[3].HostPath.Type, corev1.HostPathUnset},
		{"projected defaultMode", *got.Volumes[4].Projected.DefaultMode, int32(0o644)},
		{"token expiration", *got.Volumes[4].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds, int64(3600)},
		{"no enableServiceLinks in templates", got.EnableServiceLinks == nil, true},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s: got %v, want %v", ck.name, ck.got, ck.want)
		}
	}
}

// causeMessages lists an Invalid error's causes, one "field: message" a line.
func causeMessages(err error) string {
	var msgs []string
	if se, ok := err.(apierrors.APIStatus); ok && se.Status().Details != nil {
		for _, c := range se.Status().Details.Causes {
			msgs = append(msgs, c.Field+": "+c.Message)
		}
	}
	return strings.Join(msgs, "\n")
}

// TestWorkloadValidation: invalid manifests are refused with 422 and upstream's field paths
// and messages.
func TestWorkloadValidation(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	type mutate func(obj runtime.Object)
	tests := []struct {
		name, group, resource string
		mutate                mutate
		field, msg            string
	}{
		{"rs negative replicas", "apps", "replicasets", func(o runtime.Object) { o.(*appsv1.ReplicaSet).Spec.Replicas = ptr[int32](-1) },
			"spec.replicas", "must be greater than or equal to 0"},
		{"rs selector does not match", "apps", "replicasets", func(o runtime.Object) {
			o.(*appsv1.ReplicaSet).Spec.Template.Labels = map[string]string{"app": "other"}
		},
			"spec.template.metadata.labels", "`selector` does not match template `labels`"},
		{"rs no selector", "apps", "replicasets", func(o runtime.Object) { o.(*appsv1.ReplicaSet).Spec.Selector = nil },
			"spec.selector", "Required value"},
		{"rs empty selector", "apps", "replicasets", func(o runtime.Object) { o.(*appsv1.ReplicaSet).Spec.Selector = &metav1.LabelSelector{} },
			"spec.selector", "empty selector is invalid for deployment"},
		{"rs restartPolicy Never", "apps", "replicasets", func(o runtime.Object) {
			o.(*appsv1.ReplicaSet).Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		},
			"spec.template.spec.restartPolicy", `Unsupported value: "Never": supported values: "Always"`},
		{"rs no containers", "apps", "replicasets", func(o runtime.Object) { o.(*appsv1.ReplicaSet).Spec.Template.Spec.Containers = nil },
			"spec.template.spec.containers", "Required value"},
		{"deploy activeDeadlineSeconds", "apps", "deployments", func(o runtime.Object) {
			o.(*appsv1.Deployment).Spec.Template.Spec.ActiveDeadlineSeconds = ptr[int64](5)
		},
			"spec.template.spec.activeDeadlineSeconds", "activeDeadlineSeconds in ReplicaSet is not Supported"},
		{"deploy bad strategy", "apps", "deployments", func(o runtime.Object) { o.(*appsv1.Deployment).Spec.Strategy.Type = "Sometimes" },
			"spec.strategy.type", `Unsupported value: "Sometimes"`},
		{"deploy maxUnavailable and maxSurge 0", "apps", "deployments", func(o runtime.Object) {
			o.(*appsv1.Deployment).Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr(intstr.FromInt32(0)), MaxSurge: ptr(intstr.FromString("0%"))}
		}, "spec.strategy.rollingUpdate.maxUnavailable", "may not be 0 when `maxSurge` is 0"},
		{"deploy maxUnavailable over 100%", "apps", "deployments", func(o runtime.Object) {
			o.(*appsv1.Deployment).Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr(intstr.FromString("120%"))}
		}, "spec.strategy.rollingUpdate.maxUnavailable", "must not be greater than 100%"},
		{"sts name not a DNS label", "apps", "statefulsets", func(o runtime.Object) { o.(*appsv1.StatefulSet).Name = "a.b" },
			"metadata.name", "must not contain dots"},
		{"sts empty selector", "apps", "statefulsets", func(o runtime.Object) { o.(*appsv1.StatefulSet).Spec.Selector = &metav1.LabelSelector{} },
			"spec.selector", "empty selector is invalid for statefulset"},
		{"sts bad podManagementPolicy", "apps", "statefulsets", func(o runtime.Object) { o.(*appsv1.StatefulSet).Spec.PodManagementPolicy = "Random" },
			"spec.podManagementPolicy", "must be 'OrderedReady' or 'Parallel'"},
		{"ds selector does not match", "apps", "daemonsets", func(o runtime.Object) { o.(*appsv1.DaemonSet).Spec.Template.Labels = nil },
			"spec.template.metadata.labels", "`selector` does not match template `labels`"},
		{"controllerrevision without data", "apps", "controllerrevisions", func(o runtime.Object) { o.(*appsv1.ControllerRevision).Data.Raw = nil },
			"data", "data is mandatory"},
		{"job restartPolicy Always", "batch", "jobs", func(o runtime.Object) { o.(*batchv1.Job).Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways },
			"spec.template.spec.restartPolicy", `Required value: valid values: "OnFailure", "Never"`},
		{"job negative parallelism", "batch", "jobs", func(o runtime.Object) { o.(*batchv1.Job).Spec.Parallelism = ptr[int32](-1) },
			"spec.parallelism", "must be greater than or equal to 0"},
		{"job manual selector missing", "batch", "jobs", func(o runtime.Object) { o.(*batchv1.Job).Spec.ManualSelector = ptr(true) },
			"spec.selector", "Required value"},
		{"cronjob bad schedule", "batch", "cronjobs", func(o runtime.Object) { o.(*batchv1.CronJob).Spec.Schedule = "every minute" },
			"spec.schedule", "expected exactly 5 fields, found 2: [every minute]"},
		{"cronjob no schedule", "batch", "cronjobs", func(o runtime.Object) { o.(*batchv1.CronJob).Spec.Schedule = "" },
			"spec.schedule", "Required value"},
		{"cronjob TZ in schedule", "batch", "cronjobs", func(o runtime.Object) { o.(*batchv1.CronJob).Spec.Schedule = "TZ=UTC 0 * * * *" },
			"spec.schedule", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"},
		{"cronjob unknown time zone", "batch", "cronjobs", func(o runtime.Object) { o.(*batchv1.CronJob).Spec.TimeZone = ptr("Mars/Olympus") },
			"spec.timeZone", "unknown time zone Mars/Olympus"},
		{"cronjob bad time zone", "batch", "cronjobs", func(o runtime.Object) { o.(*batchv1.CronJob).Spec.TimeZone = ptr("../etc") },
			"spec.timeZone", "unknown time zone ../etc"},
		{"cronjob name too long", "batch", "cronjobs", func(o runtime.Object) { o.(*batchv1.CronJob).Name = strings.Repeat("a", 53) },
			"metadata.name", "must be no more than 52 characters"},
		{"cronjob selector given", "batch", "cronjobs", func(o runtime.Object) {
			o.(*batchv1.CronJob).Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
		}, "spec.jobTemplate.spec.selector", "`selector` will be auto-generated"},
		{"hpa maxReplicas below minReplicas", "autoscaling", "horizontalpodautoscalers", func(o runtime.Object) {
			o.(*autoscalingv2.HorizontalPodAutoscaler).Spec.MinReplicas = ptr[int32](6)
		}, "spec.maxReplicas", "must be greater than or equal to `minReplicas`"},
		{"hpa no target kind", "autoscaling", "horizontalpodautoscalers", func(o runtime.Object) {
			o.(*autoscalingv2.HorizontalPodAutoscaler).Spec.ScaleTargetRef.Kind = ""
		}, "spec.scaleTargetRef.kind", "Required value"},
		{"hpa minReplicas 0", "autoscaling", "horizontalpodautoscalers", func(o runtime.Object) {
			o.(*autoscalingv2.HorizontalPodAutoscaler).Spec.MinReplicas = ptr[int32](0)
		}, "spec.minReplicas", "must be greater than or equal to 1"},
		{"pdb both set", "policy", "poddisruptionbudgets", func(o runtime.Object) {
			o.(*policyv1.PodDisruptionBudget).Spec.MaxUnavailable = ptr(intstr.FromInt32(1))
		}, "spec", "minAvailable and maxUnavailable cannot be both set"},
		{"pdb over 100%", "policy", "poddisruptionbudgets", func(o runtime.Object) {
			o.(*policyv1.PodDisruptionBudget).Spec.MinAvailable = ptr(intstr.FromString("150%"))
		}, "spec.minAvailable", "must not be greater than 100%"},
		{"rc negative replicas", "", "replicationcontrollers", func(o runtime.Object) { o.(*corev1.ReplicationController).Spec.Replicas = ptr[int32](-2) },
			"spec.replicas", "must be greater than or equal to 0"},
		{"rc no template", "", "replicationcontrollers", func(o runtime.Object) {
			o.(*corev1.ReplicationController).Spec.Template = nil
			o.(*corev1.ReplicationController).Spec.Selector = map[string]string{"a": "b"}
		}, "spec.template", "Required value"},
		{"rc selector does not match", "", "replicationcontrollers", func(o runtime.Object) {
			o.(*corev1.ReplicationController).Spec.Selector = map[string]string{"app": "other"}
		}, "spec.template.metadata.labels", "`selector` does not match template `labels`"},
		{"podtemplate bad container name", "", "podtemplates", func(o runtime.Object) { o.(*corev1.PodTemplate).Template.Spec.Containers[0].Name = "C_1" },
			"template.spec.containers[0].name", "a lowercase RFC 1123 label"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := sample(tc.resource, "bad")
			tc.mutate(obj)
			_, err := store(r, tc.group, tc.resource).Create(ctx, "default", "", obj, &metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want 422 Invalid, got %v", err)
			}
			if se := err.(apierrors.APIStatus).Status(); se.Code != 422 {
				t.Fatalf("code %d", se.Code)
			}
			msgs := causeMessages(err)
			if !strings.Contains(msgs, tc.field+": ") || !strings.Contains(msgs, tc.msg) {
				t.Fatalf("causes do not name %s with %q:\n%s\n(error: %v)", tc.field, tc.msg, msgs, err)
			}
		})
	}
}

// TestWorkloadUpdateRules: immutable fields stay immutable.
func TestWorkloadUpdateRules(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	tests := []struct {
		name, group, resource string
		mutate                func(obj runtime.Object)
		field, msg            string
	}{
		{"rs selector", "apps", "replicasets", func(o runtime.Object) {
			rs := o.(*appsv1.ReplicaSet)
			rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "u1", "v": "2"}}
			rs.Spec.Template.Labels = map[string]string{"app": "u1", "v": "2"}
		}, "spec.selector", "field is immutable"},
		{"ds selector", "apps", "daemonsets", func(o runtime.Object) {
			ds := o.(*appsv1.DaemonSet)
			ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "u2", "v": "2"}}
			ds.Spec.Template.Labels = map[string]string{"app": "u2", "v": "2"}
		}, "spec.selector", "field is immutable"},
		{"sts serviceName", "apps", "statefulsets", func(o runtime.Object) { o.(*appsv1.StatefulSet).Spec.ServiceName = "other" },
			"spec", "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"},
		{"job template", "batch", "jobs", func(o runtime.Object) { o.(*batchv1.Job).Spec.Template.Spec.Containers[0].Image = "nginx:1.28" },
			"spec.template", "field is immutable"},
		{"job completions", "batch", "jobs", func(o runtime.Object) { o.(*batchv1.Job).Spec.Completions = ptr[int32](3) },
			"spec.completions", "field is immutable"},
		{"controllerrevision data", "apps", "controllerrevisions", func(o runtime.Object) {
			o.(*appsv1.ControllerRevision).Data = runtime.RawExtension{Raw: []byte(`{"spec":{"x":1}}`)}
		}, "data", "field is immutable"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "u" + string(rune('1'+i))
			s := store(r, tc.group, tc.resource)
			if _, err := s.Create(ctx, "default", "", sample(tc.resource, name), &metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			_, _, err := s.Update(ctx, "default", name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
				tc.mutate(cur)
				return cur, nil
			}, &metav1.UpdateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want 422 Invalid, got %v", err)
			}
			if msgs := causeMessages(err); !strings.Contains(msgs, tc.field+": ") || !strings.Contains(msgs, tc.msg) {
				t.Fatalf("causes do not name %s with %q:\n%s", tc.field, tc.msg, msgs)
			}
		})
	}
}

// TestGenericScale: the one scale implementation serves deployments, replica sets, stateful
// sets and replication controllers: Scale's spec.replicas, status.replicas and selector
// come from the object, and an update changes spec.replicas only.
func TestGenericScale(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	for _, tc := range []struct {
		group, resource string
		setStatus       func(obj runtime.Object)
		replicas        func(obj runtime.Object) int32
	}{
		{"apps", "deployments", func(o runtime.Object) { o.(*appsv1.Deployment).Status.Replicas = 7 }, func(o runtime.Object) int32 { return *o.(*appsv1.Deployment).Spec.Replicas }},
		{"apps", "replicasets", func(o runtime.Object) { o.(*appsv1.ReplicaSet).Status.Replicas = 7 }, func(o runtime.Object) int32 { return *o.(*appsv1.ReplicaSet).Spec.Replicas }},
		{"apps", "statefulsets", func(o runtime.Object) { o.(*appsv1.StatefulSet).Status.Replicas = 7 }, func(o runtime.Object) int32 { return *o.(*appsv1.StatefulSet).Spec.Replicas }},
		{"", "replicationcontrollers", func(o runtime.Object) { o.(*corev1.ReplicationController).Status.Replicas = 7 }, func(o runtime.Object) int32 { return *o.(*corev1.ReplicationController).Spec.Replicas }},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			res := r.Resource(schema.GroupResource{Group: tc.group, Resource: tc.resource})
			s := res.Store
			obj := sample(tc.resource, "sc")
			if tc.resource == "deployments" {
				obj.(*appsv1.Deployment).Labels = nil
			}
			if _, err := s.Create(ctx, "default", "", obj, &metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			status := res.Subresources["status"].(registry.Updater)
			if _, _, err := status.Update(ctx, "default", "sc", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
				tc.setStatus(cur)
				return cur, nil
			}, &metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			scale := res.Subresources["scale"]
			if k := scale.Kind(); k.String() != "autoscaling/v1, Kind=Scale" {
				t.Fatalf("scale kind %s", k)
			}
			got, err := scale.(registry.Getter).Get(ctx, "default", "sc", &metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sc := got.(*autoscalingv1.Scale)
			if sc.Spec.Replicas != 1 || sc.Status.Replicas != 7 || sc.Status.Selector != "app=sc" || sc.Name != "sc" || sc.ResourceVersion == "" {
				t.Fatalf("scale %+v", sc)
			}
			out, _, err := scale.(registry.Updater).Update(ctx, "default", "sc", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
				c := cur.(*autoscalingv1.Scale)
				c.Spec.Replicas = 4
				return c, nil
			}, &metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if out.(*autoscalingv1.Scale).Spec.Replicas != 4 {
				t.Fatalf("scale after update %+v", out)
			}
			cur, _ := s.Get(ctx, "default", "sc", &metav1.GetOptions{})
			if tc.replicas(cur) != 4 {
				t.Fatalf("spec.replicas %d after scaling to 4", tc.replicas(cur))
			}
			_, _, err = scale.(registry.Updater).Update(ctx, "default", "sc", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
				c := cur.(*autoscalingv1.Scale)
				c.Spec.Replicas = -1
				return c, nil
			}, &metav1.UpdateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(causeMessages(err), "spec.replicas: ") {
				t.Fatalf("negative scale: %v", err)
			}
			_, _, err = scale.(registry.Updater).Update(ctx, "default", "sc", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
				c := cur.(*autoscalingv1.Scale)
				c.ResourceVersion = "1"
				return c, nil
			}, &metav1.UpdateOptions{})
			if !apierrors.IsConflict(err) {
				t.Fatalf("stale scale: %v", err)
			}
		})
	}
}

// TestStatusIgnoresSpec: for every workload kind with a status subresource, a status update
// changes status only, and a main-resource update leaves status alone.
func TestStatusIgnoresSpec(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	for _, res := range r.Resources {
		if res.Subresources["status"] == nil || res.Store.Definition().StorageOf != nil {
			continue
		}
		plural := res.Store.Names().Plural
		obj := workloadSample(plural, "st")
		if plural == "deployments" {
			obj = deployment("st")
		}
		if obj == nil {
			continue
		}
		t.Run(plural, func(t *testing.T) {
			if _, err := res.Store.Create(ctx, "default", "", obj, &metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			before, _ := res.Store.Get(ctx, "default", "st", &metav1.GetOptions{})
			// A status update whose spec and labels differ too.
			out, _, err := res.Subresources["status"].(registry.Updater).Update(ctx, "default", "st", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
				setStatus(t, cur, 42)
				mutateSpec(cur)
				cur.(metav1.Object).SetLabels(map[string]string{"changed": "yes"})
				return cur, nil
			}, &metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			updated := fieldJSON(out, "status")
			if updated == fieldJSON(before, "status") {
				t.Fatalf("status not updated: %s", updated)
			}
			if fieldJSON(out, "spec") != fieldJSON(before, "spec") {
				t.Fatalf("status update changed spec:\nbefore %s\nafter  %s", fieldJSON(before, "spec"), fieldJSON(out, "spec"))
			}
			// Upstream: /status writes carry metadata (a Deployment's revision annotation),
			// except a Deployment's labels.
			if got, want := out.(metav1.Object).GetLabels()["changed"], map[bool]string{true: "", false: "yes"}[plural == "deployments"]; got != want {
				t.Fatalf("status update: label changed=%q, want %q", got, want)
			}
			// A main-resource update cannot change status.
			out, _, err = res.Store.Update(ctx, "default", "st", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
				setStatus(t, cur, 7)
				return cur, nil
			}, &metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := fieldJSON(out, "status"); got != updated {
				t.Fatalf("main update changed status: %s, was %s", got, updated)
			}
		})
	}
}

// setStatus sets a status field of obj to a value made of g.
func setStatus(t *testing.T, obj runtime.Object, g int64) {
	t.Helper()
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Status.ObservedGeneration = g
	case *appsv1.ReplicaSet:
		o.Status.ObservedGeneration = g
	case *appsv1.StatefulSet:
		o.Status.ObservedGeneration = g
	case *appsv1.DaemonSet:
		o.Status.ObservedGeneration = g
	case *corev1.ReplicationController:
		o.Status.ObservedGeneration = g
	case *policyv1.PodDisruptionBudget:
		o.Status.ObservedGeneration = g
	case *autoscalingv2.HorizontalPodAutoscaler:
		o.Status.ObservedGeneration = &g
	case *batchv1.Job:
		o.Status.Active = int32(g)
	case *batchv1.CronJob:
		o.Status.LastScheduleTime = &metav1.Time{Time: metav1.Unix(g, 0).Time}
	case *corev1.Pod:
		o.Status.Message = fmt.Sprint(g)
	default:
		t.Fatalf("no status field for %T", obj)
	}
}

func mutateSpec(obj runtime.Object) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Spec.Replicas = ptr[int32](9)
	case *appsv1.ReplicaSet:
		o.Spec.Replicas = ptr[int32](9)
	case *appsv1.StatefulSet:
		o.Spec.Replicas = ptr[int32](9)
	case *appsv1.DaemonSet:
		o.Spec.MinReadySeconds = 9
	case *corev1.ReplicationController:
		o.Spec.Replicas = ptr[int32](9)
	case *policyv1.PodDisruptionBudget:
		o.Spec.MinAvailable = ptr(intstr.FromInt32(9))
	case *autoscalingv2.HorizontalPodAutoscaler:
		o.Spec.MaxReplicas = 9
	case *batchv1.Job:
		o.Spec.Suspend = ptr(true)
	case *batchv1.CronJob:
		o.Spec.Schedule = "0 0 * * *"
	case *corev1.Pod:
		o.Spec.Containers[0].Image = "nginx:1.28"
	}
}

// fieldJSON returns the JSON of obj's top-level field name.
func fieldJSON(obj runtime.Object, name string) string {
	var v map[string]json.RawMessage
	b, _ := json.Marshal(obj)
	_ = json.Unmarshal(b, &v)
	return string(v[name])
}

// TestDaemonSetTemplateGeneration: upstream's spec.templateGeneration, which apps/v1 carries in
// an annotation, starts at 1 and counts template changes; clients cannot set it.
func TestDaemonSetTemplateGeneration(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	s := store(r, "apps", "daemonsets")
	const key = "deprecated.daemonset.template.generation"
	ds := workloadSample("daemonsets", "tg").(*appsv1.DaemonSet)
	ds.Annotations = map[string]string{key: "0"}
	out, err := s.Create(ctx, "default", "", ds, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := out.(*appsv1.DaemonSet).Annotations[key]; g != "1" {
		t.Fatalf("template generation on create %q", g)
	}
	update := func(change func(*appsv1.DaemonSet)) string {
		t.Helper()
		out, _, err := s.Update(ctx, "default", "tg", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			d := cur.(*appsv1.DaemonSet)
			change(d)
			return d, nil
		}, &metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out.(*appsv1.DaemonSet).Annotations[key]
	}
	if g := update(func(d *appsv1.DaemonSet) { d.Spec.MinReadySeconds = 5; d.Annotations = nil }); g != "1" {
		t.Fatalf("after a change outside the template (annotation dropped by the client): %q", g)
	}
	if g := update(func(d *appsv1.DaemonSet) { d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" }); g != "2" {
		t.Fatalf("after a template change: %q", g)
	}
	if g := update(func(d *appsv1.DaemonSet) { d.Annotations[key] = "9" }); g != "2" {
		t.Fatalf("a client set it: %q", g)
	}
}

// TestDeploymentGenerationOnAnnotations: as upstream, an annotation change bumps a
// deployment's generation (a label change does not).
func TestDeploymentGenerationOnAnnotations(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	s := store(r, "apps", "deployments")
	if _, err := s.Create(ctx, "default", "", deployment("gen"), &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	update := func(change func(*appsv1.Deployment)) int64 {
		t.Helper()
		out, _, err := s.Update(ctx, "default", "gen", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			d := cur.(*appsv1.Deployment)
			change(d)
			return d, nil
		}, &metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out.(*appsv1.Deployment).Generation
	}
	if g := update(func(d *appsv1.Deployment) { d.Labels = map[string]string{"a": "b"} }); g != 1 {
		t.Fatalf("generation %d after a label change", g)
	}
	if g := update(func(d *appsv1.Deployment) { d.Annotations = map[string]string{"a": "b"} }); g != 2 {
		t.Fatalf("generation %d after an annotation change", g)
	}
	if g := update(func(d *appsv1.Deployment) { d.Spec.Replicas = ptr[int32](3) }); g != 3 {
		t.Fatalf("generation %d after a spec change", g)
	}
}
