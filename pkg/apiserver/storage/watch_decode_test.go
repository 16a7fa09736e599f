package storage_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/storage"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// garbage is a stored value no codec decodes.
const garbage = "\x00\xffnot an object"

// TestWatchUndecodableEvent: an etcd event the direct watch cannot decode ends the watch
// with an ERROR event, as upstream's etcd3 watcher (500 InternalError, or 500 StorageReadError
// for the deletion of a corrupt object), instead of being dropped silently; a previous state
// that is not needed (no selection) is not decoded.
func TestWatchUndecodableEvent(t *testing.T) {
	valid := func(t *testing.T, name string) string {
		t.Helper()
		data, err := json.Marshal(cm(name, map[string]string{"app": "a"}))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	for _, tc := range []struct {
		name      string
		before    func(t *testing.T, c *clientv3.Client) // ahead of the watch
		during    func(t *testing.T, c *clientv3.Client) // once watching
		selection bool                                   // watch with a label selector
		want      watch.EventType
		deletion  bool // the error is a corrupt object's deletion
	}{
		{name: "new key with garbage", during: func(t *testing.T, c *clientv3.Client) { rawPut(t, c, "x", garbage) },
			want: watch.Error},
		{name: "object overwritten with garbage", before: func(t *testing.T, c *clientv3.Client) { rawPut(t, c, "x", valid(t, "x")) },
			during: func(t *testing.T, c *clientv3.Client) { rawPut(t, c, "x", garbage) }, want: watch.Error},
		{name: "garbage deleted, watched with a selector", before: func(t *testing.T, c *clientv3.Client) { rawPut(t, c, "x", garbage) },
			during: func(t *testing.T, c *clientv3.Client) { rawDelete(t, c, "x") }, selection: true, want: watch.Error, deletion: true},
		{name: "garbage deleted, no selector", before: func(t *testing.T, c *clientv3.Client) { rawPut(t, c, "x", garbage) },
			during: func(t *testing.T, c *clientv3.Client) { rawDelete(t, c, "x") }, want: watch.Error, deletion: true},
		{name: "garbage overwritten with an object, no selector", before: func(t *testing.T, c *clientv3.Client) { rawPut(t, c, "x", garbage) },
			during: func(t *testing.T, c *clientv3.Client) { rawPut(t, c, "x", valid(t, "x")) }, want: watch.Modified},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := newStore(t)
			ctx := context.Background()
			if tc.before != nil {
				tc.before(t, c)
			}
			rev, err := s.Revision(ctx)
			if err != nil {
				t.Fatal(err)
			}
			opts := storage.ListOptions{ResourceVersion: storage.FormatRV(rev), Recursive: true}
			if tc.selection {
				opts.Predicate = storage.Predicate{Label: labels.SelectorFromSet(labels.Set{"app": "a"})}
			}
			w, err := s.Watch(ctx, "configmaps/ns", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			tc.during(t, c)
			ev := nextEvent(t, w)
			if ev.Type != tc.want {
				t.Fatalf("event %s %#v, want %s", ev.Type, ev.Object, tc.want)
			}
			if tc.want != watch.Error {
				return
			}
			reason, prefix := metav1.StatusReasonInternalError, "Internal error occurred: object not decodable revision="
			if tc.deletion {
				reason, prefix = metav1.StatusReasonStoreReadError, "saw a DELETED event, but object data is corrupt - object not decodable revision="
			}
			st, ok := ev.Object.(*metav1.Status)
			if !ok || st.Code != http.StatusInternalServerError || st.Reason != reason || !strings.HasPrefix(st.Message, prefix) {
				t.Fatalf("error event %#v, want a 500 %s Status starting %q", ev.Object, reason, prefix)
			}
			if ev, ok := nextEventOrClose(t, w); ok {
				t.Fatalf("the watch went on after its error: %s %#v", ev.Type, ev.Object)
			}
		})
	}
}

func rawPut(t *testing.T, c *clientv3.Client, name, value string) {
	t.Helper()
	if _, err := c.Put(context.Background(), "/registry/"+key(name), value); err != nil {
		t.Fatal(err)
	}
}

func rawDelete(t *testing.T, c *clientv3.Client, name string) {
	t.Helper()
	if _, err := c.Delete(context.Background(), "/registry/"+key(name)); err != nil {
		t.Fatal(err)
	}
}

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	ev, ok := nextEventOrClose(t, w)
	if !ok {
		t.Fatal("the watch ended without an event")
	}
	return ev
}

// nextEventOrClose returns the watch's next event, or ok false when it is closed.
func nextEventOrClose(t *testing.T, w watch.Interface) (watch.Event, bool) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		return ev, ok
	case <-time.After(time.Minute):
		t.Fatal("no event within a minute")
		return watch.Event{}, false
	}
}
