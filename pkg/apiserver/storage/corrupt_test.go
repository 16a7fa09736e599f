package storage_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestCorruptObjects: a value that does not decode is a corrupt object to a get (named by
// the caller's key), a list goes on past it and names every one by its full key, and
// DeleteCorrupt removes it unconditionally while refusing a readable or missing object and
// leaving it in place on a dry run.
func TestCorruptObjects(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	if err := s.Create(ctx, key("good"), cm("good", nil), &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	rawPut(t, c, "bad1", garbage)
	rawPut(t, c, "bad2", garbage)

	err := s.Get(ctx, key("bad1"), storage.GetOptions{}, &corev1.ConfigMap{})
	if !storage.IsCorrupt(err) || !containsText(err, "Key: /configmaps/ns/bad1,") {
		t.Fatalf("get: %v, want a corrupt object named by /configmaps/ns/bad1", err)
	}
	err = s.GetList(ctx, "configmaps/ns", storage.ListOptions{Recursive: true}, &corev1.ConfigMapList{})
	var cl *storage.CorruptListError
	if !errors.As(err, &cl) || len(cl.Errs) != 2 || cl.Errs[0].Key != "/registry/configmaps/ns/bad1" || cl.Errs[1].Key != "/registry/configmaps/ns/bad2" {
		t.Fatalf("list: %v, want both corrupt objects by full key", err)
	}
	for _, tc := range []struct {
		name   string
		dryRun bool
		want   func(error) bool
	}{
		{"good", false, func(err error) bool { return storage.Code(err) == storage.ErrCodeNotCorrupt }},
		{"missing", false, storage.IsNotFound},
		{"bad1", true, func(err error) bool { return err == nil }},
		{"bad1", false, func(err error) bool { return err == nil }},
		{"bad1", false, storage.IsNotFound},
	} {
		if err := s.DeleteCorrupt(ctx, key(tc.name), tc.dryRun); !tc.want(err) {
			t.Fatalf("DeleteCorrupt(%s, dryRun=%v): unexpected %v", tc.name, tc.dryRun, err)
		}
	}
	err = s.GetList(ctx, "configmaps/ns", storage.ListOptions{Recursive: true}, &corev1.ConfigMapList{})
	if !errors.As(err, &cl) || len(cl.Errs) != 1 {
		t.Fatalf("list after: %v, want bad2 alone", err)
	}
}

func containsText(err error, s string) bool {
	return err != nil && strings.Contains(err.Error(), s)
}

// TestCacherCorruptObject: a value the watch cache cannot decode ends its watchers (as
// upstream's, which end at its next list) and sends reads to etcd, which answer the corrupt
// object's errors; once it is deleted without being read, the cache serves again.
func TestCacherCorruptObject(t *testing.T) {
	c := etcdtest.Client(t)
	inner := storage.New(c, storage.Config{Prefix: "/registry", NewFunc: func() runtime.Object { return &corev1.ConfigMap{} }})
	ch := storage.NewCacher(inner, storage.CacherConfig{KeyRoot: "configmaps", BookmarkInterval: 100 * time.Millisecond, Metrics: storage.NewCacherMetrics()})
	ch.Start(context.Background())
	t.Cleanup(ch.Stop)
	waitFor(t, "the cache to serve", ch.Ready)
	ctx := context.Background()
	good := create(t, ch, "good", nil)
	w, err := ch.Watch(ctx, "configmaps/ns", storage.ListOptions{ResourceVersion: good.ResourceVersion, Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	rawPut(t, c, "bad", garbage)
	for ev := range w.ResultChan() {
		t.Fatalf("the watch went on past the corrupt value: %s %#v", ev.Type, ev.Object)
	}
	err = ch.GetList(ctx, "configmaps/ns", storage.ListOptions{ResourceVersion: "0", Recursive: true}, &corev1.ConfigMapList{})
	var cl *storage.CorruptListError
	if !errors.As(err, &cl) || len(cl.Errs) != 1 || cl.Errs[0].Key != "/registry/configmaps/ns/bad" {
		t.Fatalf("list: %v, want the corrupt object", err)
	}
	if err := ch.Get(ctx, key("bad"), storage.GetOptions{}, &corev1.ConfigMap{}); !storage.IsCorrupt(err) || !strings.Contains(err.Error(), "Key: /configmaps/ns/bad,") {
		t.Fatalf("get: %v, want the corrupt object by its key", err)
	}
	if err := ch.DeleteCorrupt(ctx, key("bad"), false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the cache to serve again", ch.Ready)
	l := &corev1.ConfigMapList{}
	if err := ch.GetList(ctx, "configmaps/ns", storage.ListOptions{ResourceVersion: "0", Recursive: true}, l); err != nil || len(l.Items) != 1 {
		t.Fatalf("list after: %v %v, want good alone", err, names(t, l))
	}
}
