package storage_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/storage"
	corev1 "k8s.io/api/core/v1"
)

// TestListResourceVersionSemantics: a list's resourceVersion, limit and continue token mean
// what they mean to kube-apiserver.
func TestListResourceVersionSemantics(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for _, name := range []string{"a", "b", "c"} {
		if err := s.Create(ctx, key(name), cm(name, nil), nil); err != nil {
			t.Fatal(err)
		}
	}
	first := &corev1.ConfigMapList{}
	if err := s.GetList(ctx, "configmaps/ns", storage.ListOptions{Recursive: true}, first); err != nil {
		t.Fatal(err)
	}
	rv := first.ResourceVersion
	if err := s.Delete(ctx, key("a"), nil, nil, nil); err != nil {
		t.Fatal(err)
	}

	t.Run("legacy resourceVersion with limit is exact", func(t *testing.T) {
		list := &corev1.ConfigMapList{}
		if err := s.GetList(ctx, "configmaps/ns", storage.ListOptions{Recursive: true, ResourceVersion: rv, Limit: 2}, list); err != nil {
			t.Fatal(err)
		}
		if list.ResourceVersion != rv || len(list.Items) != 2 || list.Items[0].Name != "a" || list.Continue == "" {
			t.Fatalf("got %d items at %s (continue %q), want a and b at %s", len(list.Items), list.ResourceVersion, list.Continue, rv)
		}
		rest := &corev1.ConfigMapList{}
		if err := s.GetList(ctx, "configmaps/ns", storage.ListOptions{Recursive: true, Limit: 2, Continue: list.Continue}, rest); err != nil {
			t.Fatal(err)
		}
		if rest.ResourceVersion != rv || len(rest.Items) != 1 || rest.Items[0].Name != "c" {
			t.Fatalf("second page: %d items at %s", len(rest.Items), rest.ResourceVersion)
		}
	})

	t.Run("legacy resourceVersion without limit is not older than", func(t *testing.T) {
		list := &corev1.ConfigMapList{}
		if err := s.GetList(ctx, "configmaps/ns", storage.ListOptions{Recursive: true, ResourceVersion: rv}, list); err != nil {
			t.Fatal(err)
		}
		if list.ResourceVersion == rv || len(list.Items) != 2 {
			t.Fatalf("got %d items at %s, want the current 2 items", len(list.Items), list.ResourceVersion)
		}
	})

	t.Run("bad revision in a continue token", func(t *testing.T) {
		for _, r := range []string{"-1", "-5", "0", `"x"`, "1.5"} {
			tok := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"v":"meta.k8s.io/v1","rv":%s,"start":"b"}`, r))
			err := s.GetList(ctx, "configmaps/ns", storage.ListOptions{Recursive: true, Limit: 1, Continue: tok}, &corev1.ConfigMapList{})
			if storage.Code(err) != storage.ErrCodeInvalidRV {
				t.Errorf("rv %s in the token: %v, want an invalid resourceVersion", r, err)
			}
		}
	})

	t.Run("expired continue token offers a fresh one", func(t *testing.T) {
		page := &corev1.ConfigMapList{}
		if err := s.GetList(ctx, "configmaps/ns", storage.ListOptions{Recursive: true, Limit: 1}, page); err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx, key("d"), cm("d", nil), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Compact(ctx); err != nil {
			t.Fatal(err)
		}
		err := s.GetList(ctx, "configmaps/ns", storage.ListOptions{Recursive: true, Limit: 1, Continue: page.Continue}, &corev1.ConfigMapList{})
		var se *storage.Error
		if !storage.IsExpired(err) || !errors.As(err, &se) || se.Continue == "" {
			t.Fatalf("got %v, want expired with a continue token", err)
		}
		rest := &corev1.ConfigMapList{}
		if err := s.GetList(ctx, "configmaps/ns", storage.ListOptions{Recursive: true, Limit: 10, Continue: se.Continue}, rest); err != nil {
			t.Fatalf("fresh token: %v", err)
		}
		if len(rest.Items) != 2 || rest.Items[0].Name != "c" || rest.Items[1].Name != "d" {
			t.Fatalf("fresh token continued with %d items, want c and d", len(rest.Items))
		}
	})
}
