package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
)

// TestPartialObjectMetadata: client-go's metadata client (protobuf first, as the garbage
// collector and the quota controller use it) gets, lists and watches the objects' whole
// metadata and nothing else.
func TestPartialObjectMetadata(t *testing.T) {
	s := servertest.New(t, nil)
	rc := servertest.RestConfig(t, s)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(rc)
	mc := metadata.NewForConfigOrDie(rc).Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default")

	w, err := mc.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "m", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
			Finalizers:      []string{"example.com/keep"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "0a4b"}}},
		Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, got *metav1.PartialObjectMetadata) {
		t.Helper()
		if !equality.Semantic.DeepEqual(got.ObjectMeta, cm.ObjectMeta) {
			t.Errorf("%s: metadata\n got %+v\nwant %+v", what, got.ObjectMeta, cm.ObjectMeta)
		}
	}
	got, err := mc.Get(ctx, "m", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("get", got)
	l, err := mc.List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("list: %v, %v", l, err)
	}
	check("list", &l.Items[0])
	select {
	case ev := <-w.ResultChan():
		p, ok := ev.Object.(*metav1.PartialObjectMetadata)
		if ev.Type != watch.Added || !ok {
			t.Fatalf("watch event %s %T", ev.Type, ev.Object)
		}
		check("watch", p)
	case <-time.After(time.Minute):
		t.Fatal("no watch event within a minute")
	}
	cm.Finalizers = nil
	if _, err := cs.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
