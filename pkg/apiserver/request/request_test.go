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

func TestAnnotations(t *testing.T) {
	AddAnnotation(context.Background(), "ignored", "x") // no set: a no-op, not a panic
	ctx, a := WithAnnotations(context.Background())
	if a.Map() != nil {
		t.Fatalf("new set = %v, want nil", a.Map())
	}
	AddAnnotation(ctx, "authorization.k8s.io/decision", "allow")
	AddAnnotation(ctx, "authorization.k8s.io/decision", "forbid")
	AddAnnotation(ctx, "mutation.webhook.admission.k8s.io/round_0_index_0", "{}")
	m := a.Map()
	if len(m) != 2 || m["authorization.k8s.io/decision"] != "allow" {
		t.Fatalf("Map = %v, want two keys with the first decision kept", m)
	}
	m["x"] = "y"
	if _, ok := a.Map()["x"]; ok {
		t.Fatal("Map returned the set itself, not a copy")
	}
}
