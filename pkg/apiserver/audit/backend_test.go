package audit

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/request"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// readEvents parses a log file line by line, strictly.
func readEvents(t *testing.T, path string) []Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var evs []Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var ev Event
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func bigEvent(i int) *Event {
	body := fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","data":{"k":%q}}`, strings.Repeat("x", 200<<10))
	return &Event{Kind: "Event", APIVersion: APIVersion, Level: LevelRequest, AuditID: "id", Stage: StageResponseComplete, Verb: "create",
		RequestURI: fmt.Sprintf("/api/v1/namespaces/n/configmaps?i=%d", i), RequestObject: json.RawMessage(body),
		RequestReceivedTimestamp: metav1.NowMicro(), StageTimestamp: metav1.NowMicro()}
}

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	// A rotated file from long ago, which maxAge removes.
	old := filepath.Join(dir, "audit-2020-01-02T03-04-05.000.log")
	if err := os.WriteFile(old, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := NewLogBackend(LogConfig{Path: path, MaxSizeMB: 1, MaxBackups: 2, MaxAgeDays: 30})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20 // 20 events of 200 KiB: 4 MiB, so four rotations at 1 MiB
	for i := range n {
		b.Process(bigEvent(i))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("log file: %v %v", st, err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "audit-*.log"))
	if len(matches) != 2 || slicesContains(matches, old) {
		t.Fatalf("rotated files %v, want the 2 newest (maxbackup) and not the old one (maxage)", matches)
	}
	// The newest rotated file and the current one hold the last events in order, each file
	// under the limit and every line whole.
	var seen []string
	for _, f := range append(matches, path) {
		st, err := os.Stat(f)
		if err != nil || st.Size() > 1<<20 {
			t.Fatalf("%s: %v bytes, want at most 1 MiB (%v)", f, st.Size(), err)
		}
		for _, ev := range readEvents(t, f) {
			seen = append(seen, ev.RequestURI)
		}
	}
	if len(seen) == 0 || seen[len(seen)-1] != fmt.Sprintf("/api/v1/namespaces/n/configmaps?i=%d", n-1) {
		t.Fatalf("last event %v", seen[len(seen)-1:])
	}
	for i := 1; i < len(seen); i++ {
		var a, b int
		fmt.Sscanf(seen[i-1][strings.Index(seen[i-1], "=")+1:], "%d", &a)
		fmt.Sscanf(seen[i][strings.Index(seen[i], "=")+1:], "%d", &b)
		if b != a+1 {
			t.Fatalf("events out of order or lost across files: %d then %d", a, b)
		}
	}
}

func TestRotationCompress(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	b, err := NewLogBackend(LogConfig{Path: path, MaxSizeMB: 1, MaxBackups: 2, Compress: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 { // four rotations
		b.Process(bigEvent(i))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	plain, _ := filepath.Glob(filepath.Join(dir, "audit-*.log"))
	gz, _ := filepath.Glob(filepath.Join(dir, "audit-*.log.gz"))
	if len(plain) != 0 || len(gz) != 2 {
		t.Fatalf("rotated files %v and %v, want 2 compressed ones only", plain, gz)
	}
	for _, f := range gz {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(fh)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(zr)
		fh.Close()
		if err != nil || len(data) == 0 {
			t.Fatalf("%s: %v", f, err)
		}
		out := filepath.Join(t.TempDir(), "plain.log")
		if err := os.WriteFile(out, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if len(readEvents(t, out)) == 0 {
			t.Fatalf("%s holds no events", f)
		}
		if st, _ := os.Stat(f); st.Mode().Perm() != 0o600 {
			t.Fatalf("%s mode %v", f, st.Mode())
		}
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestBatchAndLegacy(t *testing.T) {
	dir := t.TempDir()
	ev := &Event{Kind: "Event", APIVersion: APIVersion, Level: LevelMetadata, AuditID: "a1", Stage: StageResponseComplete, Verb: "get",
		RequestURI: "/api/v1/namespaces/ns/pods/p", SourceIPs: []string{"10.77.0.1"}, UserAgent: "kubectl",
		User:             authnv1.UserInfo{Username: "alice", Groups: []string{"dev", "system:authenticated"}},
		ImpersonatedUser: &authnv1.UserInfo{Username: "bob"}, ObjectRef: &ObjectReference{Resource: "pods", Namespace: "ns", Name: "p"},
		ResponseStatus: &metav1.Status{Code: 200}, RequestReceivedTimestamp: metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC))}
	legacy, err := NewLogBackend(LogConfig{Path: filepath.Join(dir, "legacy.log"), Format: FormatLegacy})
	if err != nil {
		t.Fatal(err)
	}
	legacy.Process(ev)
	if err := legacy.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "legacy.log"))
	want := `2026-01-02T03:04:05.000006Z AUDIT: id="a1" stage="ResponseComplete" ip="10.77.0.1" method="get" user="alice" groups="\"dev\",\"system:authenticated\"" as="bob" asgroups="<lookup>" user-agent="kubectl" namespace="ns" uri="/api/v1/namespaces/ns/pods/p" response="200"` + "\n"
	if string(data) != want {
		t.Fatalf("legacy line\n%s\nwant\n%s", data, want)
	}

	batch, err := NewLogBackend(LogConfig{Path: filepath.Join(dir, "batch.log"), Mode: ModeBatch})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		ev.AuditID = types.UID("b" + fmt.Sprint(i))
		batch.Process(ev)
	}
	if err := batch.Close(); err != nil {
		t.Fatal(err)
	}
	batch.Process(ev) // after Close: dropped, no panic
	evs := readEvents(t, filepath.Join(dir, "batch.log"))
	if len(evs) != 500 || evs[499].AuditID != "b499" || evs[0].User.Username != "alice" {
		t.Fatalf("batch mode wrote %d events", len(evs))
	}
}

// memSink keeps copies of the events.
type memSink struct{ evs []Event }

func (m *memSink) Process(ev *Event) { m.evs = append(m.evs, *ev) }

func TestFilterPanicAndAnnotations(t *testing.T) {
	sink := &memSink{}
	a := New(&Policy{Rules: []PolicyRule{{Level: LevelMetadata}}}, sink)
	h := WithAuditID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := request.WithInfo(request.WithUser(r.Context(), &request.User{Name: "alice"}), &request.Info{IsResourceRequest: true, Verb: "get", Resource: "pods", Namespace: "n", Name: "p", APIVersion: "v1"})
		a.WithAudit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			request.AddAnnotation(r.Context(), "example.com/k", "v")
			if r.URL.Query().Has("panic") {
				panic("boom")
			}
			w.WriteHeader(http.StatusTeapot)
		})).ServeHTTP(w, r.WithContext(ctx))
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/n/pods/p", nil))
	if len(sink.evs) != 2 || sink.evs[1].ResponseStatus.Code != http.StatusTeapot || sink.evs[1].Annotations["example.com/k"] != "v" ||
		string(sink.evs[1].AuditID) != rec.Header().Get(HeaderAuditID) || sink.evs[0].Annotations != nil {
		t.Fatalf("events %+v", sink.evs)
	}
	sink.evs = nil
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Fatalf("recovered %v, want the handler's panic passed on", v)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/n/pods/p?panic", nil))
	}()
	if len(sink.evs) != 2 || sink.evs[1].Stage != StagePanic || sink.evs[1].ResponseStatus.Code != 500 || sink.evs[1].ResponseStatus.Message != "APIServer panic'd: boom" {
		t.Fatalf("panic events %+v", sink.evs)
	}
}
