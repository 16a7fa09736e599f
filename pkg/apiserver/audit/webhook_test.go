package audit

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// receiver is an in-process HTTPS audit webhook: it records the EventLists POSTed with the
// expected bearer token.
type receiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	lists []EventList
	bad   []string
	// onList, if set, is called (under mu) for each list received.
	onList func()
}

// EventList is what the webhook backend POSTs.
type EventList struct {
	Kind       string  `json:"kind"`
	APIVersion string  `json:"apiVersion"`
	Items      []Event `json:"items"`
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if got := req.Header.Get("Authorization"); got != "Bearer audit-token" || req.Method != http.MethodPost || req.URL.Path != "/audit" {
			r.bad = append(r.bad, fmt.Sprintf("%s %s %q", req.Method, req.URL.Path, got))
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		var l EventList
		if err := json.NewDecoder(req.Body).Decode(&l); err != nil {
			r.bad = append(r.bad, err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.lists = append(r.lists, l)
		if r.onList != nil {
			r.onList()
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// kubeconfig writes a kubeconfig naming the receiver.
func (r *receiver) kubeconfig(t *testing.T) string {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: audit
  cluster:
    server: %s/audit
    certificate-authority-data: %s
users:
- name: apiserver
  user:
    token: audit-token
contexts:
- name: default
  context: {cluster: audit, user: apiserver}
current-context: default
`, r.srv.URL, base64.StdEncoding.EncodeToString(ca))
	path := filepath.Join(t.TempDir(), "audit-webhook.kubeconfig")
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (r *receiver) snapshot() ([]EventList, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]EventList(nil), r.lists...), append([]string(nil), r.bad...)
}

func TestWebhookBackend(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mode      string
		wantLists []int // items per EventList
	}{
		{"blocking: one list per event", ModeBlocking, []int{1, 1, 1, 1, 1}},
		{"batch: lists of at most 2, the rest at close", ModeBatch, []int{2, 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReceiver(t)
			b, err := NewWebhookBackend(WebhookConfig{KubeconfigFile: r.kubeconfig(t), Mode: tc.mode, BatchMaxSize: 2, BatchMaxWait: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				b.Process(&Event{Kind: "Event", APIVersion: "audit.k8s.io/v1", AuditID: types.UID(fmt.Sprint("id-", i)), Stage: StageResponseComplete, Level: LevelMetadata})
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			lists, bad := r.snapshot()
			if len(bad) > 0 {
				t.Fatalf("bad requests: %v", bad)
			}
			var sizes []int
			var ids []string
			for _, l := range lists {
				if l.Kind != "EventList" || l.APIVersion != "audit.k8s.io/v1" {
					t.Fatalf("list %s %s", l.APIVersion, l.Kind)
				}
				sizes = append(sizes, len(l.Items))
				for _, ev := range l.Items {
					ids = append(ids, string(ev.AuditID))
				}
			}
			if fmt.Sprint(sizes) != fmt.Sprint(tc.wantLists) || fmt.Sprint(ids) != "[id-0 id-1 id-2 id-3 id-4]" {
				t.Fatalf("lists of %v with %v, want %v with id-0..id-4", sizes, ids, tc.wantLists)
			}
		})
	}
}

func TestWebhookBackendMaxWait(t *testing.T) {
	r := newReceiver(t)
	b, err := NewWebhookBackend(WebhookConfig{KubeconfigFile: r.kubeconfig(t), Mode: ModeBatch, BatchMaxSize: 100, BatchMaxWait: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Process(&Event{Kind: "Event", APIVersion: "audit.k8s.io/v1", AuditID: "alone"})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if lists, _ := r.snapshot(); len(lists) == 1 && len(lists[0].Items) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a partial batch was not sent after batch-max-wait")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWebhookKubeconfigErrors(t *testing.T) {
	dir := t.TempDir()
	noServer := filepath.Join(dir, "empty.kubeconfig")
	if err := os.WriteFile(noServer, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{filepath.Join(dir, "missing"), noServer} {
		if _, _, err := LoadWebhookKubeconfig(file); err == nil {
			t.Errorf("%s: no error", file)
		}
	}
}
