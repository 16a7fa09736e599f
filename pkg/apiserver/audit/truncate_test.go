package audit

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func sizedEvent(id string, objectBytes int) *Event {
	obj := json.RawMessage(fmt.Sprintf(`{"data":%q}`, strings.Repeat("x", objectBytes)))
	return &Event{Kind: "Event", APIVersion: Version, AuditID: types.UID(id), Stage: StageResponseComplete,
		Level: LevelRequestResponse, RequestObject: obj, ResponseObject: obj, Annotations: map[string]string{"a": "b"}}
}

func TestTruncateEvent(t *testing.T) {
	tr := Truncate{Enabled: true, MaxEventSize: 2000}
	small := sizedEvent("small", 100)
	data, err := tr.encode(small)
	if err != nil {
		t.Fatal(err)
	}
	var got Event
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.RequestObject == nil || got.ResponseObject == nil || got.Annotations[TruncatedAnnotation] != "" {
		t.Fatalf("an event under the limit was changed: %s", data)
	}

	big := sizedEvent("big", 3000)
	if data, err = tr.encode(big); err != nil {
		t.Fatal(err)
	}
	got = Event{}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(data) > 2000 || got.RequestObject != nil || got.ResponseObject != nil ||
		got.Annotations[TruncatedAnnotation] != "true" || got.Annotations["a"] != "b" || got.AuditID != "big" {
		t.Fatalf("a large event was not truncated to its metadata: %d bytes: %.300s", len(data), data)
	}
	if big.RequestObject == nil || big.Annotations[TruncatedAnnotation] != "" {
		t.Fatal("truncation changed the caller's event")
	}

	huge := sizedEvent("huge", 10)
	huge.Annotations["long"] = strings.Repeat("y", 3000)
	if data, err := tr.encode(huge); err == nil {
		t.Fatalf("an event too large without its objects was kept: %d bytes", len(data))
	}

	if data, err := (Truncate{MaxEventSize: 10}).encode(big); err != nil || len(data) < 6000 {
		t.Fatalf("truncation off: %d bytes, %v", len(data), err)
	}
}

func TestTruncateSplit(t *testing.T) {
	ev := func(n int) json.RawMessage { return json.RawMessage(strings.Repeat("e", n)) }
	sizes := func(parts [][]json.RawMessage) string {
		var out []string
		for _, p := range parts {
			var s []string
			for _, e := range p {
				s = append(s, fmt.Sprint(len(e)))
			}
			out = append(out, strings.Join(s, "+"))
		}
		return strings.Join(out, " | ")
	}
	events := []json.RawMessage{ev(40), ev(40), ev(30), ev(120), ev(10), ev(90)}
	for _, tc := range []struct {
		tr   Truncate
		want string
	}{
		{Truncate{Enabled: true, MaxBatchSize: 100}, "40+40 | 30 | 120 | 10+90"},
		{Truncate{Enabled: true, MaxBatchSize: 1000}, "40+40+30+120+10+90"},
		{Truncate{MaxBatchSize: 100}, "40+40+30+120+10+90"},
	} {
		if got := sizes(tc.tr.split(events)); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.tr, got, tc.want)
		}
	}
}

func TestWebhookBackendTruncates(t *testing.T) {
	r := newReceiver(t)
	b, err := NewWebhookBackend(WebhookConfig{KubeconfigFile: r.kubeconfig(t), Mode: ModeBatch, BatchMaxSize: 10, BatchMaxWait: time.Hour,
		Truncate: Truncate{Enabled: true, MaxEventSize: 2000, MaxBatchSize: 1500}})
	if err != nil {
		t.Fatal(err)
	}
	b.Process(sizedEvent("a", 10))
	b.Process(sizedEvent("b", 5000))
	huge := sizedEvent("c", 10)
	huge.Annotations["long"] = strings.Repeat("y", 3000)
	b.Process(huge)
	b.Process(sizedEvent("d", 600))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	lists, bad := r.snapshot()
	if len(bad) > 0 {
		t.Fatalf("bad requests: %v", bad)
	}
	var got []string
	for _, l := range lists {
		var ids []string
		for _, ev := range l.Items {
			id := string(ev.AuditID)
			if ev.Annotations[TruncatedAnnotation] == "true" {
				id += "(truncated)"
			}
			ids = append(ids, id)
		}
		got = append(got, strings.Join(ids, ","))
	}
	// b loses its objects, c is dropped, and d (about 1.4 KB) does not fit in a's and b's request.
	if want := "a,b(truncated) | d"; strings.Join(got, " | ") != want {
		t.Fatalf("requests %q, want %q", strings.Join(got, " | "), want)
	}
}

func TestWebhookBackendThrottle(t *testing.T) {
	r := newReceiver(t)
	// One request now, the next in a thousand seconds: what is left goes at Close.
	b, err := NewWebhookBackend(WebhookConfig{KubeconfigFile: r.kubeconfig(t), Mode: ModeBatch, BatchMaxSize: 1, BatchMaxWait: time.Hour,
		Throttle: true, ThrottleQPS: 0.001, ThrottleBurst: 1})
	if err != nil {
		t.Fatal(err)
	}
	var closing atomic.Bool
	var afterClose atomic.Int32
	r.onList = func() {
		if closing.Load() {
			afterClose.Add(1)
		}
	}
	for i := range 3 {
		b.Process(&Event{Kind: "Event", APIVersion: Version, AuditID: types.UID(fmt.Sprint("id-", i))})
	}
	deadline := time.Now().Add(30 * time.Second)
	for lists, _ := r.snapshot(); len(lists) < 1; lists, _ = r.snapshot() {
		if time.Now().After(deadline) {
			t.Fatal("the first batch was not sent")
		}
		time.Sleep(10 * time.Millisecond)
	}
	closing.Store(true)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	lists, bad := r.snapshot()
	if len(bad) > 0 || len(lists) != 3 {
		t.Fatalf("%d lists, bad %v; want all 3 events sent by Close", len(lists), bad)
	}
	if n := afterClose.Load(); n != 2 {
		t.Fatalf("%d of the throttled requests were sent after Close began, want 2", n)
	}
}

func TestLogBackendTruncates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	b, err := NewLogBackend(LogConfig{Path: path, Truncate: Truncate{Enabled: true, MaxEventSize: 2000}})
	if err != nil {
		t.Fatal(err)
	}
	b.Process(sizedEvent("whole", 10))
	b.Process(sizedEvent("cut", 5000))
	huge := sizedEvent("dropped", 10)
	huge.Annotations["long"] = strings.Repeat("y", 3000)
	b.Process(huge)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range readEvents(t, path) {
		got = append(got, fmt.Sprintf("%s:%s:%t", ev.AuditID, ev.Annotations[TruncatedAnnotation], ev.ResponseObject != nil))
	}
	if want := "whole::true cut:true:false"; strings.Join(got, " ") != want {
		t.Fatalf("log has %q, want %q", strings.Join(got, " "), want)
	}
}
