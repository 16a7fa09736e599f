package tableconvert

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestWorkloadKinds: the columns and cells of upstream's printers (pkg/printers/internalversion
// in kubernetes v1.33) for the workload kinds, wide columns included.
func TestWorkloadKinds(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}, {Name: "side", Image: "busybox"}}}}
	cpu := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)}}}
	mem := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("100Mi"))}}}
	pods := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "qps"}, Target: autoscalingv2.MetricTarget{AverageValue: ptr.To(resource.MustParse("10"))}}}
	started := ago(90 * time.Second)

	tests := []struct {
		name    string
		obj     runtime.Object
		columns []string
		cells   []any
	}{
		{"replicaset", &appsv1.ReplicaSet{ObjectMeta: objMeta("web-5d4", time.Hour), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3), Selector: sel, Template: tmpl},
			Status: appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 2}},
			[]string{"Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"},
			[]any{"web-5d4", int64(3), int64(3), int64(2), "60m", "nginx,side", "nginx:1.27,busybox", "app=web"}},
		{"statefulset", &appsv1.StatefulSet{ObjectMeta: objMeta("db", 2*time.Hour), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Selector: sel, Template: tmpl},
			Status: appsv1.StatefulSetStatus{ReadyReplicas: 1}},
			[]string{"Name", "Ready", "Age", "Containers", "Images"},
			[]any{"db", "1/3", "120m", "nginx,side", "nginx:1.27,busybox"}},
		{"daemonset", &appsv1.DaemonSet{ObjectMeta: objMeta("agent", 3*time.Hour), Spec: appsv1.DaemonSetSpec{Selector: sel, Template: func() corev1.PodTemplateSpec {
			t := tmpl
			t.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
			return t
		}()}, Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 2, UpdatedNumberScheduled: 3, NumberAvailable: 2}},
			[]string{"Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age", "Containers", "Images", "Selector"},
			[]any{"agent", int64(3), int64(3), int64(2), int64(3), int64(2), "kubernetes.io/os=linux", "3h", "nginx,side", "nginx:1.27,busybox", "app=web"}},
		{"controllerrevision", &appsv1.ControllerRevision{ObjectMeta: func() metav1.ObjectMeta {
			m := objMeta("db-7f9", time.Minute)
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", Controller: ptr.To(true)}}
			return m
		}(), Revision: 2},
			[]string{"Name", "Controller", "Revision", "Age"},
			[]any{"db-7f9", "statefulset.apps/db", int64(2), "60s"}},
		{"running job", &batchv1.Job{ObjectMeta: objMeta("pi", 2*time.Minute), Spec: batchv1.JobSpec{Completions: ptr.To[int32](1), Parallelism: ptr.To[int32](1), Selector: sel, Template: tmpl},
			Status: batchv1.JobStatus{StartTime: &started}},
			[]string{"Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"},
			[]any{"pi", "Running", "0/1", "90s", "2m", "nginx,side", "nginx:1.27,busybox", "app=web"}},
		{"complete job", &batchv1.Job{ObjectMeta: objMeta("pi", 2*time.Minute), Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](3), Selector: sel, Template: tmpl},
			Status: batchv1.JobStatus{Succeeded: 1, StartTime: &started, CompletionTime: ptr.To(ago(30 * time.Second)),
				Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}},
			nil,
			[]any{"pi", "Complete", "1/1 of 3", "60s", "2m", "nginx,side", "nginx:1.27,busybox", "app=web"}},
		{"cronjob", &batchv1.CronJob{ObjectMeta: objMeta("nightly", 48*time.Hour), Spec: batchv1.CronJobSpec{Schedule: "0 0 * * *", Suspend: ptr.To(false),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}},
			Status: batchv1.CronJobStatus{Active: []corev1.ObjectReference{{Name: "a"}}, LastScheduleTime: ptr.To(ago(time.Hour))}},
			[]string{"Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age", "Containers", "Images", "Selector"},
			[]any{"nightly", "0 0 * * *", "<none>", "False", int64(1), "60m", "2d", "nginx,side", "nginx:1.27,busybox", "<none>"}},
		{"hpa v2", &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: objMeta("web", 5*time.Minute), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}, MinReplicas: ptr.To[int32](1), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{cpu, mem, pods}},
			Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](40)}}}}}},
			[]string{"Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"},
			[]any{"web", "Deployment/web", "cpu: 40%/80%, memory: <unknown>/100Mi + 1 more...", "1", int64(10), int64(2), "5m"}},
		{"hpa v1", &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: objMeta("web", 5*time.Minute), Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}, MaxReplicas: 4, TargetCPUUtilizationPercentage: ptr.To[int32](50)}},
			[]string{"Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"},
			[]any{"web", "Deployment/web", "cpu: <unknown>/50%", "<unset>", int64(4), int64(0), "5m"}},
		{"pdb", &policyv1.PodDisruptionBudget{ObjectMeta: objMeta("web", time.Hour), Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromString("50%")), Selector: sel},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}},
			[]string{"Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"},
			[]any{"web", "50%", "N/A", int64(1), "60m"}},
		{"replicationcontroller", &corev1.ReplicationController{ObjectMeta: objMeta("old", time.Hour), Spec: corev1.ReplicationControllerSpec{
			Replicas: ptr.To[int32](2), Selector: map[string]string{"app": "web"}, Template: &tmpl}, Status: corev1.ReplicationControllerStatus{Replicas: 2, ReadyReplicas: 2}},
			[]string{"Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"},
			[]any{"old", int64(2), int64(2), int64(2), "60m", "nginx,side", "nginx:1.27,busybox", "app=web"}},
		{"podtemplate", &corev1.PodTemplate{ObjectMeta: objMeta("tpl", time.Hour), Template: tmpl},
			[]string{"Name", "Containers", "Images", "Pod Labels"},
			[]any{"tpl", "nginx,side", "nginx:1.27,busybox", "app=web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := toTable(tt.obj, metav1.TableOptions{}, now)
			if err != nil {
				t.Fatal(err)
			}
			if tt.columns != nil && !reflect.DeepEqual(columnNames(table), tt.columns) {
				t.Errorf("columns = %q\nwant      %q", columnNames(table), tt.columns)
			}
			if len(table.Rows) != 1 {
				t.Fatalf("%d rows, want 1", len(table.Rows))
			}
			if got := table.Rows[0].Cells; !reflect.DeepEqual(got, tt.cells) {
				t.Errorf("cells = %#v\nwant    %#v", got, tt.cells)
			}
			for _, c := range table.ColumnDefinitions {
				if c.Type == "" || c.Description == "" {
					t.Errorf("column %q lacks type or description: %+v", c.Name, c)
				}
			}
		})
	}
}
