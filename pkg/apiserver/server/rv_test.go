package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestResourceVersionsAsUpstream: what client-go sees of a list's resourceVersion, limit and
// continue token, and of a delete's answer, is what kube-apiserver gives it (issue 12).
func TestResourceVersionsAsUpstream(t *testing.T) {
	s := servertest.New(t, nil)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	e := newHTTPEnv(t, s)
	ctx := context.Background()
	createNamespace(t, cs, "rvs")
	cms := cs.CoreV1().ConfigMaps("rvs")
	for _, name := range []string{"a", "b", "c"} {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	names := func(l *corev1.ConfigMapList) string {
		var n []string
		for _, it := range l.Items {
			n = append(n, it.Name)
		}
		return strings.Join(n, ",")
	}
	before, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("delete answers at the deletion revision", func(t *testing.T) {
		// A kind whose deletion answers the deleted object upstream (ReturnDeletedObject):
		// podtemplates. client-go's typed Delete drops the body: read it through the REST client.
		pts := cs.CoreV1().PodTemplates("rvs")
		tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
		for _, name := range []string{"pa", "pb"} {
			if _, err := pts.Create(ctx, &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: name}, Template: tmpl}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		obj, err := cs.CoreV1().RESTClient().Delete().Namespace("rvs").Resource("podtemplates").Name("pa").Do(ctx).Get()
		if err != nil {
			t.Fatal(err)
		}
		rv := obj.(*corev1.PodTemplate).ResourceVersion
		n, err := strconv.ParseInt(rv, 10, 64)
		if err != nil {
			t.Fatalf("deleted object's resourceVersion %q: %v", rv, err)
		}
		// At that revision pa is gone; one revision earlier it was there.
		at, err := pts.List(ctx, metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if err != nil {
			t.Fatal(err)
		}
		prev, err := pts.List(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(n-1, 10), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if err != nil {
			t.Fatal(err)
		}
		if len(at.Items) != 1 || len(prev.Items) != 2 {
			t.Fatalf("delete answered rv %s: list there holds %d templates, one before %d", rv, len(at.Items), len(prev.Items))
		}
	})

	t.Run("delete of a configmap answers a Status naming it", func(t *testing.T) {
		obj, err := cs.CoreV1().RESTClient().Delete().Namespace("rvs").Resource("configmaps").Name("a").Do(ctx).Get()
		if err != nil {
			t.Fatal(err)
		}
		st, ok := obj.(*metav1.Status)
		if !ok || st.Status != metav1.StatusSuccess || st.Details == nil || st.Details.Name != "a" || st.Details.Kind != "configmaps" || st.Details.UID == "" {
			t.Fatalf("delete answered %#v, want kube-apiserver's Status of Success with the name, resource and uid", obj)
		}
	})

	t.Run("legacy resourceVersion with limit is exact", func(t *testing.T) {
		// The first page of a paged list (client-go's pager, a reflector's relist) at an old
		// resourceVersion, without resourceVersionMatch: exactly that revision, a included.
		page, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: before.ResourceVersion, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if page.ResourceVersion != before.ResourceVersion || names(page) != "a,b" || page.Continue == "" {
			t.Fatalf("page at %s: %s (continue %q), want a,b at %s", page.ResourceVersion, names(page), page.Continue, before.ResourceVersion)
		}
		rest, err := cms.List(ctx, metav1.ListOptions{Limit: 2, Continue: page.Continue})
		if err != nil {
			t.Fatal(err)
		}
		if rest.ResourceVersion != before.ResourceVersion || names(rest) != "c" {
			t.Fatalf("second page at %s: %s", rest.ResourceVersion, names(rest))
		}
		// Without a limit the same resourceVersion means "not older than": a state at least
		// as new, from the watch cache, which may not have applied the delete of a yet; it
		// does soon.
		beforeRV, _ := strconv.ParseInt(before.ResourceVersion, 10, 64)
		for deadline := time.Now().Add(10 * time.Second); ; {
			all, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: before.ResourceVersion})
			if err != nil {
				t.Fatalf("unpaged list at rv %s: %v", before.ResourceVersion, err)
			}
			if rv, err := strconv.ParseInt(all.ResourceVersion, 10, 64); err != nil || rv < beforeRV {
				t.Fatalf("unpaged list at rv %s answered at rv %q, older", before.ResourceVersion, all.ResourceVersion)
			}
			if names(all) == "b,c" {
				break
			}
			if names(all) != "a,b,c" || time.Now().After(deadline) {
				t.Fatalf("unpaged list at rv %s: %s at rv %s, want b,c (the delete applied)", before.ResourceVersion, names(all), all.ResourceVersion)
			}
			time.Sleep(10 * time.Millisecond) // poll until the cache has the delete
		}
	})

	t.Run("bad revision in a continue token is a 400 Status", func(t *testing.T) {
		for _, rv := range []string{"-1", "0", `"12"`, "1e999", "null"} {
			tok := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"v":"meta.k8s.io/v1","rv":%s,"start":"b"}`, rv))
			resp, body := e.do(e.admin, "GET", "/api/v1/namespaces/rvs/configmaps?limit=1&continue="+tok, "", nil, nil)
			var st metav1.Status
			if err := json.Unmarshal(body, &st); err != nil || resp.StatusCode != 400 || st.Kind != "Status" || st.Code != 400 ||
				st.Reason != metav1.StatusReasonBadRequest || !strings.HasPrefix(st.Message, "invalid continue token: ") {
				t.Errorf("rv %s in the token: %d %s", rv, resp.StatusCode, body)
			}
		}
	})

	t.Run("expired continue token is a 410 with a fresh token", func(t *testing.T) {
		page, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil || names(page) != "b" {
			t.Fatalf("first page: %v %v", names(page), err)
		}
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		r, err := s.EtcdClient().Get(ctx, "x")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.EtcdClient().Compact(ctx, r.Header.Revision); err != nil {
			t.Fatal(err)
		}
		_, err = cms.List(ctx, metav1.ListOptions{Limit: 1, Continue: page.Continue})
		var se *apierrors.StatusError
		if !apierrors.IsResourceExpired(err) || !errors.As(err, &se) || se.ErrStatus.Code != 410 || se.ErrStatus.Continue == "" ||
			!strings.Contains(se.ErrStatus.Message, "use the continue token in this response") {
			t.Fatalf("got %v, want 410 Expired with a continue token", err)
		}
		// The token continues after b, at the current revision: c and the new d.
		rest, err := cms.List(ctx, metav1.ListOptions{Limit: 10, Continue: se.ErrStatus.Continue})
		if err != nil || names(rest) != "c,d" {
			t.Fatalf("fresh token: %v %v", names(rest), err)
		}
	})
}
