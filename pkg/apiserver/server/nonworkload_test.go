package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// TestNonWorkloadOverHTTP: the subresources and views of the non-workload kinds through
// client-go and plain HTTP: eviction, proxy-type subresources, events.k8s.io, discovery,
// and 413 for an object over etcd's request limit.
func TestNonWorkloadOverHTTP(t *testing.T) {
	s := servertest.New(t, nil)
	cs, err := kubernetes.NewForConfig(servertest.RestConfig(t, s))
	if err != nil {
		t.Fatal(err)
	}
	e := newHTTPEnv(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("proxy subresources", func(t *testing.T) {
		// The pod's node n1 does not exist: the kubelet paths cannot be found; the pod has no
		// IP for pods/proxy.
		for _, tc := range []struct {
			path string
			code int
			msg  string
		}{
			{"/api/v1/namespaces/default/pods/p/log", http.StatusNotFound, `nodes "n1" not found`},
			{"/api/v1/namespaces/default/pods/p/exec?command=ls", http.StatusNotFound, `nodes "n1" not found`},
			{"/api/v1/namespaces/default/pods/p/proxy/healthz", http.StatusBadRequest, `address not allowed`}, // no IP yet, as upstream
			{"/api/v1/namespaces/default/pods/missing/log", http.StatusNotFound, `pods "missing" not found`},
		} {
			resp, body := e.do(e.admin, "GET", tc.path, "", nil, nil)
			var st metav1.Status
			if err := json.Unmarshal(body, &st); err != nil || resp.StatusCode != tc.code || st.Code != int32(tc.code) || !strings.Contains(st.Message, tc.msg) {
				t.Fatalf("GET %s: %d %s, want %d %q", tc.path, resp.StatusCode, body, tc.code, tc.msg)
			}
		}
		resp, body := e.do(e.admin, "GET", "/api/v1/nodes/missing/proxy", "", nil, nil)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `nodes \"missing\" not found`) {
			t.Fatalf("nodes/missing/proxy: %d %s", resp.StatusCode, body)
		}
		err := cs.CoreV1().Pods("default").GetLogs("p", &corev1.PodLogOptions{}).Do(ctx).Error()
		if !apierrors.IsNotFound(err) {
			t.Fatalf("client-go logs: %v", err)
		}
	})

	t.Run("discovery", func(t *testing.T) {
		list, err := cs.Discovery().ServerResourcesForGroupVersion("v1")
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]struct {
			kind, group string
			verbs       []string
		}{
			"pods/exec":                {"PodExecOptions", "", []string{"create", "get"}},
			"pods/log":                 {"Pod", "", []string{"get"}},
			"pods/eviction":            {"Eviction", "policy", []string{"create"}},
			"pods/ephemeralcontainers": {"Pod", "", []string{"get", "patch", "update"}},
			"pods/resize":              {"Pod", "", []string{"get", "patch", "update"}},
			"namespaces/finalize":      {"Namespace", "", []string{"patch", "update"}},
			"services/proxy":           {"ServiceProxyOptions", "", []string{"create", "delete", "get", "patch", "update"}},
			"bindings":                 {"Binding", "", []string{"create"}},
			"componentstatuses":        {"ComponentStatus", "", []string{"get", "list"}},
		}
		for _, r := range list.APIResources {
			if w, ok := want[r.Name]; ok {
				if r.Kind != w.kind || r.Group != w.group || !slices.Equal(r.Verbs, w.verbs) {
					t.Errorf("%s: kind %s group %q verbs %v, want %s %q %v", r.Name, r.Kind, r.Group, r.Verbs, w.kind, w.group, w.verbs)
				}
				delete(want, r.Name)
			}
		}
		if len(want) > 0 {
			t.Fatalf("not discovered: %v", want)
		}
	})

	t.Run("eviction", func(t *testing.T) {
		err := cs.CoreV1().Pods("default").EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}})
		if err != nil {
			t.Fatal(err)
		}
		// p is on a node: the eviction deletes it gracefully, and it stays until its node
		// agent confirms, as upstream.
		got, err := cs.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil {
			t.Fatalf("evicted pod on a node: %v, deletionTimestamp %v; want it being deleted", err, got.DeletionTimestamp)
		}
		zero := int64(0)
		if err := cs.CoreV1().Pods("default").Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("evicted pod after its node agent's confirmation: %v", err)
		}
	})

	t.Run("events.k8s.io", func(t *testing.T) {
		w, err := cs.EventsV1().Events("default").Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		_, err = cs.CoreV1().Events("default").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "ev1"}, Reason: "Pulled", Message: "pulled",
			Type: corev1.EventTypeNormal, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w.ResultChan():
			got, ok := ev.Object.(*eventsv1.Event)
			if ev.Type != watch.Added || !ok || got.Note != "pulled" || got.Regarding.Name != "p" {
				t.Fatalf("events.k8s.io watch: %s %#v", ev.Type, ev.Object)
			}
		case <-ctx.Done():
			t.Fatal("no events.k8s.io watch event")
		}
		got, err := cs.EventsV1().Events("default").Get(ctx, "ev1", metav1.GetOptions{})
		if err != nil || got.Note != "pulled" || got.Reason != "Pulled" {
			t.Fatalf("events.k8s.io get: %+v %v", got, err)
		}
	})

	t.Run("over etcd's request limit", func(t *testing.T) {
		ev := corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"}, ObjectMeta: metav1.ObjectMeta{Name: "big"}, Message: strings.Repeat("x", 1600<<10)}
		body, _ := json.Marshal(ev)
		resp, data := e.do(e.admin, "POST", "/api/v1/namespaces/default/events", "application/json", body, nil)
		var st metav1.Status
		if err := json.Unmarshal(data, &st); err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || st.Reason != metav1.StatusReasonRequestEntityTooLarge {
			t.Fatalf("1.6 MiB event: %d %.300s", resp.StatusCode, data)
		}
	})
}
