package aggregator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// availability returns the Available condition's status and reason of an APIService.
func availability(u *unstructured.Unstructured) (status, reason string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Available" {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			return s, r
		}
	}
	return "", ""
}

// TestLocalAPIServices: every built-in group version gets a local APIService, Available with
// reason Local and upstream's priorities; a CRD's group version gets one while it exists.
func TestLocalAPIServices(t *testing.T) {
	s := servertest.New(t, nil)
	dyn := dynamic.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	apiServices := dyn.Resource(apiServicesGVR)

	want := map[string][2]int64{"v1.": {18000, 1}, "v1.apps": {17800, 15}, "v2.autoscaling": {17500, 30}, "v1.apiregistration.k8s.io": {18000, 15}}
	eventually(t, 30*time.Second, func() (bool, string) {
		for name, prio := range want {
			u, err := apiServices.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, fmt.Sprintf("%s: %v", name, err)
			}
			if st, reason := availability(u); st != "True" || reason != "Local" {
				return false, fmt.Sprintf("%s: Available=%s (%s)", name, st, reason)
			}
			g, _, _ := unstructured.NestedInt64(u.Object, "spec", "groupPriorityMinimum")
			v, _, _ := unstructured.NestedInt64(u.Object, "spec", "versionPriority")
			if g != prio[0] || v != prio[1] {
				t.Fatalf("%s priorities %d/%d, want %d/%d", name, g, v, prio[0], prio[1])
			}
			if u.GetLabels()["kube-aggregator.kubernetes.io/automanaged"] != "onstart" {
				t.Fatalf("%s labels %v", name, u.GetLabels())
			}
		}
		return true, ""
	})

	k := newKubectl(t, s.KubeconfigPath())
	out := k.ok("", "get", "apiservice", "v1.apps")
	if !strings.Contains(out, "NAME") || !strings.Contains(out, "SERVICE") || !strings.Contains(out, "AVAILABLE") ||
		!strings.Contains(out, "v1.apps") || !strings.Contains(out, "Local") || !strings.Contains(out, "True") {
		t.Fatalf("kubectl get apiservice:\n%s", out)
	}

	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.org"},
"spec":{"group":"example.org","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget"},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	k.ok(crd, "apply", "-f", "-")
	eventually(t, 30*time.Second, func() (bool, string) {
		u, err := apiServices.Get(ctx, "v1.example.org", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if u.GetLabels()["kube-aggregator.kubernetes.io/automanaged"] != "true" {
			t.Fatalf("CRD apiservice labels %v", u.GetLabels())
		}
		st, _ := availability(u)
		return st == "True", "Available=" + st
	})
	k.ok("", "delete", "crd", "widgets.example.org")
	eventually(t, 30*time.Second, func() (bool, string) {
		_, err := apiServices.Get(ctx, "v1.example.org", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("get after CRD delete: %v", err)
	})
}

// TestAPIServiceValidation: kube-aggregator's validation rules, as 422 Invalid with causes.
func TestAPIServiceValidation(t *testing.T) {
	s := servertest.New(t, nil)
	dyn := dynamic.NewForConfigOrDie(servertest.RestConfig(t, s))
	port := int64(443)
	cases := []struct {
		name  string
		obj   map[string]any
		field string
	}{
		{"name must be version.group", map[string]any{"metadata": map[string]any{"name": "v1.other.io"},
			"spec": map[string]any{"group": "example.io", "version": "v1", "groupPriorityMinimum": int64(100), "versionPriority": int64(10)}}, "metadata.name"},
		{"group priority", map[string]any{"metadata": map[string]any{"name": "v1.example.io"},
			"spec": map[string]any{"group": "example.io", "version": "v1", "groupPriorityMinimum": int64(0), "versionPriority": int64(10)}}, "spec.groupPriorityMinimum"},
		{"version priority", map[string]any{"metadata": map[string]any{"name": "v1.example.io"},
			"spec": map[string]any{"group": "example.io", "version": "v1", "groupPriorityMinimum": int64(100), "versionPriority": int64(1001)}}, "spec.versionPriority"},
		{"local with caBundle", map[string]any{"metadata": map[string]any{"name": "v1.example.io"},
			"spec": map[string]any{"group": "example.io", "version": "v1", "groupPriorityMinimum": int64(100), "versionPriority": int64(10), "caBundle": "Zm9v"}}, "spec.caBundle"},
		{"service without name", map[string]any{"metadata": map[string]any{"name": "v1.example.io"},
			"spec": map[string]any{"group": "example.io", "version": "v1", "groupPriorityMinimum": int64(100), "versionPriority": int64(10),
				"service": map[string]any{"namespace": "default", "port": port}}}, "spec.service.name"},
		{"insecure and caBundle", map[string]any{"metadata": map[string]any{"name": "v1.example.io"},
			"spec": map[string]any{"group": "example.io", "version": "v1", "groupPriorityMinimum": int64(100), "versionPriority": int64(10),
				"insecureSkipTLSVerify": true, "caBundle": "Zm9v", "service": map[string]any{"namespace": "default", "name": "x"}}}, "spec.insecureSkipTLSVerify"},
		{"bad version", map[string]any{"metadata": map[string]any{"name": "V1.example.io"},
			"spec": map[string]any{"group": "example.io", "version": "V1", "groupPriorityMinimum": int64(100), "versionPriority": int64(10)}}, "spec.version"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: tc.obj}
			obj.SetAPIVersion("apiregistration.k8s.io/v1")
			obj.SetKind("APIService")
			_, err := dyn.Resource(apiServicesGVR).Create(context.Background(), obj, metav1.CreateOptions{})
			var status *apierrors.StatusError
			if !apierrors.IsInvalid(err) || !asStatus(err, &status) {
				t.Fatalf("create: %v, want Invalid", err)
			}
			found := false
			for _, c := range status.ErrStatus.Details.Causes {
				found = found || c.Field == tc.field
			}
			if !found {
				b, _ := json.Marshal(status.ErrStatus)
				t.Fatalf("no cause for %s: %s", tc.field, b)
			}
		})
	}
}

func asStatus(err error, out **apierrors.StatusError) bool {
	s, ok := err.(*apierrors.StatusError)
	*out = s
	return ok && s.ErrStatus.Details != nil
}
