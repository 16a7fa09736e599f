package plugins

import (
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func TestQuotaUsage(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	for _, tc := range []struct {
		name string
		gr   schema.GroupResource
		obj  runtime.Object
		want corev1.ResourceList
	}{
		{"pod: containers summed, init max, sidecars added, overhead", schema.GroupResource{Resource: "pods"}, &corev1.Pod{Spec: corev1.PodSpec{
			Overhead: rl("cpu", "10m"),
			InitContainers: []corev1.Container{
				{Name: "side", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: rl("cpu", "100m"), Limits: rl("memory", "64Mi")}},
				{Name: "big", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "2")}},
			},
			Containers: []corev1.Container{
				{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "200m", "example.com/gpu", "1"), Limits: rl("memory", "128Mi")}},
				{Name: "b", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "300m", "hugepages-2Mi", "4Mi")}},
			}}},
			rl("count/pods", "1", "pods", "1", "cpu", "2110m", "requests.cpu", "2110m", "limits.memory", "192Mi",
				"requests.example.com/gpu", "1", "hugepages-2Mi", "4Mi", "requests.hugepages-2Mi", "4Mi")},
		{"terminal pod: count only", schema.GroupResource{Resource: "pods"}, &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1")}}}}},
			rl("count/pods", "1")},
		{"load balancer", schema.GroupResource{Resource: "services"}, &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Port: 80}, {Port: 443}}}},
			rl("services", "1", "count/services", "1", "services.nodeports", "2", "services.loadbalancers", "1")},
		{"pvc with class", schema.GroupResource{Resource: "persistentvolumeclaims"}, &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To("gold"), Resources: corev1.VolumeResourceRequirements{Requests: rl("storage", "1Gi")}}},
			rl("persistentvolumeclaims", "1", "count/persistentvolumeclaims", "1", "requests.storage", "1Gi",
				"gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1", "gold.storageclass.storage.k8s.io/requests.storage", "1Gi")},
		{"secret", schema.GroupResource{Resource: "secrets"}, &corev1.Secret{}, rl("count/secrets", "1", "secrets", "1")},
		{"deployment", schema.GroupResource{Group: "apps", Resource: "deployments"}, nil, rl("count/deployments.apps", "1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := quotaEvaluatorFor(tc.gr, time.Now).usage(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if !quotaEqual(got, tc.want) {
				t.Fatalf("usage %s, want %s", prettyResources(got), prettyResources(tc.want))
			}
		})
	}
}

func TestQuotaScopes(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	q := func(scopes []corev1.ResourceQuotaScope, sel *corev1.ScopeSelector) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Scopes: scopes, ScopeSelector: sel},
			Status: corev1.ResourceQuotaStatus{Hard: rl("pods", "1"), Used: rl("pods", "1")}}
	}
	best := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{PriorityClassName: "high", Containers: []corev1.Container{{Name: "c"}}}}
	for _, tc := range []struct {
		name    string
		quota   *corev1.ResourceQuota
		refused bool
	}{
		{"BestEffort matches", q([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}, nil), true},
		{"NotBestEffort does not", q([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort}, nil), false},
		{"Terminating does not", q([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}, nil), false},
		{"PriorityClass In", q(nil, &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
			ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}}}), true},
		{"PriorityClass NotIn", q(nil, &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
			ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpNotIn, Values: []string{"high"}}}}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &admission.Attributes{Operation: admission.Create, Resource: pods, Namespace: "ns", Object: best}
			_, err := checkQuotaRequest([]*corev1.ResourceQuota{tc.quota}, a, podQuota{now: time.Now})
			if (err != nil) != tc.refused {
				t.Fatalf("err %v, want refused %v", err, tc.refused)
			}
			if tc.refused && err.Error() != `pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1` {
				t.Fatalf("message %q", err)
			}
		})
	}
}
