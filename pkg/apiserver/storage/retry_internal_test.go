package storage

import (
	"context"
	"errors"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
)

// TestCreateOnceIsExactlyOnce: a retried create attempt that finds its own bytes at the key
// (an earlier attempt was applied after it timed out) succeeds with that revision; anything
// else at the key, or a first attempt, is AlreadyExists.
func TestCreateOnceIsExactlyOnce(t *testing.T) {
	srv, err := embedetcd.StartLocal(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	c, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := New(c, Config{Prefix: "/registry"})
	ctx := context.Background()
	ours := []byte(`{"metadata":{"name":"a","uid":"1"}}`)
	theirs := []byte(`{"metadata":{"name":"a","uid":"2"}}`)

	rev, err := s.createOnce(ctx, "configmaps/ns/a", ours, false)
	if err != nil || rev == 0 {
		t.Fatalf("first attempt: rev %d, %v", rev, err)
	}
	tests := []struct {
		name    string
		data    []byte
		retried bool
		wantRev int64 // 0: AlreadyExists
	}{
		{"retry finds its own write", ours, true, rev},
		{"first attempt on a taken key", ours, false, 0},
		{"retry finds another object", theirs, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.createOnce(ctx, "configmaps/ns/a", tt.data, tt.retried)
			var se *Error
			switch {
			case tt.wantRev != 0 && (err != nil || got != tt.wantRev):
				t.Fatalf("got rev %d, %v; want rev %d", got, err, tt.wantRev)
			case tt.wantRev == 0 && !(errors.As(err, &se) && se.Code == ErrCodeExists):
				t.Fatalf("got rev %d, %v; want AlreadyExists", got, err)
			}
		})
	}
}
