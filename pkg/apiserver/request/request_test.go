package request

import (
	"context"
	"testing"
)

func TestContextRoundTrip(t *testing.T) {
	ctx := context.Background()
	if _, ok := UserFrom(ctx); ok {
		t.Fatal("UserFrom of an empty context reported a user")
	}
	if _, ok := InfoFrom(ctx); ok {
		t.Fatal("InfoFrom of an empty context reported info")
	}
	u := &User{Name: "alice", Groups: []string{AllAuthenticated}}
	info := &Info{IsResourceRequest: true, Verb: "watch", Resource: "pods"}
	ctx = WithInfo(WithUser(ctx, u), info)
	if got, ok := UserFrom(ctx); !ok || got.Name != "alice" {
		t.Fatalf("UserFrom = %v, %v", got, ok)
	}
	if got, ok := InfoFrom(ctx); !ok || got != info {
		t.Fatalf("InfoFrom = %v, %v", got, ok)
	}
}

func TestLongRunning(t *testing.T) {
	for _, tc := range []struct {
		name string
		info *Info
		want bool
	}{
		{"nil", nil, false},
		{"non-resource", &Info{Path: "/watch/x", Verb: "get"}, false},
		{"watch", &Info{IsResourceRequest: true, Verb: "watch", Resource: "pods"}, true},
		{"get of a pod named watch", &Info{IsResourceRequest: true, Verb: "get", Resource: "pods", Name: "watch"}, false},
		{"pod log", &Info{IsResourceRequest: true, Verb: "get", Resource: "pods", Subresource: "log"}, true},
		{"pod status", &Info{IsResourceRequest: true, Verb: "get", Resource: "pods", Subresource: "status"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.info.LongRunning(); got != tc.want {
				t.Fatalf("LongRunning() = %v, want %v", got, tc.want)
			}
		})
	}
}
