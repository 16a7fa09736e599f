package storage

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

const retryKey = "configmaps/ns/a"

func newCM(uid string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: types.UID(uid)}, Data: map[string]string{"n": "0"}}
}

// increment is a patch: it adds one to data.n, so applying it twice shows.
func increment(cur runtime.Object) (runtime.Object, error) {
	cm := cur.(*corev1.ConfigMap)
	n, _ := strconv.Atoi(cm.Data["n"])
	cm.Data["n"] = strconv.Itoa(n + 1)
	return cm, nil
}

// mark is another writer's change, unlike any increment.
func mark(cur runtime.Object) (runtime.Object, error) {
	cur.(*corev1.ConfigMap).Data["by"] = "other"
	return cur, nil
}

// ifVersion is a PUT: it applies only to the version the client read, as the registry's
// update does with the object's resourceVersion.
func ifVersion(rv string, f UpdateFunc) UpdateFunc {
	return func(cur runtime.Object) (runtime.Object, error) {
		if got := cur.(*corev1.ConfigMap).ResourceVersion; got != rv {
			return nil, &Error{Code: ErrCodeConflict, Msg: fmt.Sprintf("resourceVersion %s, want %s", got, rv)}
		}
		return f(cur)
	}
}

func mustGet(t *testing.T, s *Etcd3) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := s.Get(context.Background(), retryKey, GetOptions{}, cm); err != nil {
		t.Fatal(err)
	}
	return cm
}

// keyHistory returns every event on the key so far.
func keyHistory(t *testing.T, s *Etcd3) []*clientv3.Event {
	t.Helper()
	ctx := context.Background()
	rev, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.history(ctx, s.fullKey(retryKey), 0, rev, false)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestRetriedUpdate: an update whose first attempt landed but was reported as failed, with
// another writer in between, is applied once and acknowledged at its own revision; when the
// history that would prove it is compacted, the answer is "unknown", never a second write.
func TestRetriedUpdate(t *testing.T) {
	ctx := context.Background()
	timeout := rpctypes.ErrTimeout
	tests := []struct {
		name     string
		put      bool // a PUT with the resourceVersion read, rather than a patch
		drop     bool // the first attempt never reaches etcd
		compact  bool // the other writer also compacts the history
		wantOut  string
		wantLast string
		unknown  bool
	}{
		{name: "patch landed, then another write", wantOut: "1", wantLast: "1"},
		{name: "put landed, then another write", put: true, wantOut: "1", wantLast: "1"},
		{name: "patch lost, another write first", drop: true, wantOut: "1", wantLast: "1"},
		{name: "patch landed, history compacted", compact: true, unknown: true, wantLast: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, other, f, _ := faultStores(t)
			base := &corev1.ConfigMap{}
			if err := other.Create(ctx, retryKey, newCM("1"), base); err != nil {
				t.Fatal(err)
			}
			f.arm(fault{drop: tt.drop, err: timeout, between: func() {
				if err := other.GuaranteedUpdate(ctx, retryKey, &corev1.ConfigMap{}, false, nil, mark); err != nil {
					t.Error(err)
				}
				if tt.compact {
					if _, err := other.Compact(ctx); err != nil {
						t.Error(err)
					}
				}
			}})
			try := UpdateFunc(increment)
			if tt.put {
				try = ifVersion(base.ResourceVersion, increment)
			}
			out := &corev1.ConfigMap{}
			err := s.GuaranteedUpdate(ctx, retryKey, out, false, nil, try)
			switch {
			case tt.unknown && !IsUnknownOutcome(err):
				t.Fatalf("got %v (data %v), want an unknown outcome", err, out.Data)
			case !tt.unknown && err != nil:
				t.Fatalf("update: %v", err)
			case !tt.unknown && out.Data["n"] != tt.wantOut:
				t.Fatalf("answered n=%s, want %s", out.Data["n"], tt.wantOut)
			}
			if got := mustGet(t, s); got.Data["n"] != tt.wantLast || got.Data["by"] != "other" {
				t.Fatalf("stored %v, want n=%s and the other writer's mark: the update was applied %s times", got.Data, tt.wantLast, got.Data["n"])
			}
			if tt.unknown {
				return
			}
			// The revision answered is the one etcd gave the write of these bytes.
			for _, ev := range keyHistory(t, s) {
				if strconv.FormatInt(ev.Kv.ModRevision, 10) == out.ResourceVersion {
					got := &corev1.ConfigMap{}
					if err := (JSONCodec{}).Decode(ev.Kv.Value, got); err != nil || got.Data["n"] != out.Data["n"] {
						t.Fatalf("revision %s holds %v, answered %v", out.ResourceVersion, got.Data, out.Data)
					}
					return
				}
			}
			t.Fatalf("answered revision %s is not in the key's history", out.ResourceVersion)
		})
	}
}

// TestRetriedDelete: a delete whose first attempt landed but was reported as failed never
// deletes the object created again meanwhile: it answers "unknown". A delete whose attempt
// was lost deletes the object as changed meanwhile, and answers with the deletion revision.
func TestRetriedDelete(t *testing.T) {
	ctx := context.Background()
	t.Run("landed, then created again", func(t *testing.T) {
		s, other, f, _ := faultStores(t)
		if err := other.Create(ctx, retryKey, newCM("1"), nil); err != nil {
			t.Fatal(err)
		}
		f.arm(fault{err: rpctypes.ErrLeaderChanged, between: func() {
			if err := other.Create(ctx, retryKey, newCM("2"), nil); err != nil {
				t.Error(err)
			}
		}})
		err := s.Delete(ctx, retryKey, &corev1.ConfigMap{}, nil, nil)
		if !IsUnknownOutcome(err) {
			t.Fatalf("got %v, want an unknown outcome", err)
		}
		if got := mustGet(t, s); got.UID != "2" {
			t.Fatalf("the new incarnation is gone: %v", got)
		}
	})
	t.Run("lost, then changed", func(t *testing.T) {
		s, other, f, _ := faultStores(t)
		if err := other.Create(ctx, retryKey, newCM("1"), nil); err != nil {
			t.Fatal(err)
		}
		f.arm(fault{drop: true, err: rpctypes.ErrTimeout, between: func() {
			if err := other.GuaranteedUpdate(ctx, retryKey, &corev1.ConfigMap{}, false, nil, increment); err != nil {
				t.Error(err)
			}
		}})
		out := &corev1.ConfigMap{}
		if err := s.Delete(ctx, retryKey, out, nil, nil); err != nil {
			t.Fatal(err)
		}
		evs := keyHistory(t, s)
		last := evs[len(evs)-1]
		if last.Type != clientv3.EventTypeDelete || strconv.FormatInt(last.Kv.ModRevision, 10) != out.ResourceVersion || out.Data["n"] != "1" {
			t.Fatalf("answered %s %v; last event %v at %d", out.ResourceVersion, out.Data, last.Type, last.Kv.ModRevision)
		}
	})
}

// TestRetriedCreate: a create whose first attempt landed but was reported as failed is
// acknowledged at its revision even if the object changed or went away meanwhile, and is
// never written twice; a create whose attempt was lost sees the other writer's object.
func TestRetriedCreate(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		drop    bool
		between func(t *testing.T, other *Etcd3)
		exists  bool // want AlreadyExists
		wantUID string
		creates int // objects of uid "1" created in the key's history
	}{
		{name: "landed, then modified", between: func(t *testing.T, other *Etcd3) {
			if err := other.GuaranteedUpdate(ctx, retryKey, &corev1.ConfigMap{}, false, nil, increment); err != nil {
				t.Error(err)
			}
		}, wantUID: "1", creates: 1},
		{name: "landed, then deleted", between: func(t *testing.T, other *Etcd3) {
			if err := other.Delete(ctx, retryKey, nil, nil, nil); err != nil {
				t.Error(err)
			}
		}, wantUID: "1", creates: 1},
		{name: "lost, another object created", drop: true, between: func(t *testing.T, other *Etcd3) {
			if err := other.Create(ctx, retryKey, newCM("2"), nil); err != nil {
				t.Error(err)
			}
		}, exists: true},
		{name: "lost", drop: true, between: func(*testing.T, *Etcd3) {}, wantUID: "1", creates: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, other, f, _ := faultStores(t)
			// Something else in etcd first, so the store has seen a revision.
			if err := other.Create(ctx, "configmaps/ns/z", newCM("z"), nil); err != nil {
				t.Fatal(err)
			}
			f.arm(fault{drop: tt.drop, err: rpctypes.ErrTimeout, between: func() { tt.between(t, other) }})
			out := &corev1.ConfigMap{}
			err := s.Create(ctx, retryKey, newCM("1"), out)
			switch {
			case tt.exists && !IsExists(err):
				t.Fatalf("got %v, want AlreadyExists", err)
			case !tt.exists && (err != nil || out.UID != types.UID(tt.wantUID)):
				t.Fatalf("got %v, %v; want uid %s", err, out.UID, tt.wantUID)
			}
			creates := 0
			for _, ev := range keyHistory(t, s) {
				got := &corev1.ConfigMap{}
				if err := (JSONCodec{}).Decode(ev.Kv.Value, got); err == nil && ev.IsCreate() && got.UID == "1" {
					creates++
					if !tt.exists && strconv.FormatInt(ev.Kv.ModRevision, 10) != out.ResourceVersion {
						t.Errorf("created at %d, answered %s", ev.Kv.ModRevision, out.ResourceVersion)
					}
				}
			}
			if creates != tt.creates {
				t.Fatalf("object created %d times, want %d", creates, tt.creates)
			}
		})
	}
}
