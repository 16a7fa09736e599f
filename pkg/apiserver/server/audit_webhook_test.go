package server_test

import (
	"context"
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

	"github.com/hacp/hacp/pkg/apiserver/audit"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestAuditWebhook: with --audit-webhook-config-file (a kubeconfig with a CA and a bearer
// token) the server POSTs audit.k8s.io/v1 EventLists to an in-process HTTPS receiver, in
// both modes, and the log file gets the same events.
func TestAuditWebhook(t *testing.T) {
	for _, mode := range []string{audit.ModeBlocking, audit.ModeBatch} {
		t.Run(mode, func(t *testing.T) {
			var mu sync.Mutex
			var events []audit.Event
			var bad []string
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				var l struct {
					Kind, APIVersion string
					Items            []audit.Event
				}
				if r.Header.Get("Authorization") != "Bearer audit-token" || json.NewDecoder(r.Body).Decode(&l) != nil ||
					l.Kind != "EventList" || l.APIVersion != "audit.k8s.io/v1" {
					bad = append(bad, r.URL.Path)
					http.Error(w, "no", http.StatusBadRequest)
					return
				}
				events = append(events, l.Items...)
			}))
			t.Cleanup(srv.Close)
			ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
			kc := filepath.Join(t.TempDir(), "audit.kubeconfig")
			if err := os.WriteFile(kc, []byte(fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster:\n    server: %s/events\n    certificate-authority-data: %s\nusers:\n- name: u\n  user:\n    token: audit-token\ncontexts:\n- name: c\n  context: {cluster: a, user: u}\ncurrent-context: c\n",
				srv.URL, base64.StdEncoding.EncodeToString(ca))), 0o600); err != nil {
				t.Fatal(err)
			}
			s, logPath := startAudited(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n  resources: [{group: \"\", resources: [configmaps]}]\n",
				func(c *server.Config) {
					c.AuditWebhookConfigFile, c.AuditWebhookMode, c.AuditWebhookBatchMaxWait = kc, mode, 20*time.Millisecond
				})
			cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
			if _, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "audited-" + mode}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			eventuallyOK(t, "event at the webhook", func() error {
				mu.Lock()
				defer mu.Unlock()
				if len(bad) > 0 {
					t.Fatalf("bad requests at the receiver: %v", bad)
				}
				for _, ev := range events {
					if ev.ObjectRef != nil && ev.ObjectRef.Name == "audited-"+mode && ev.Verb == "create" && ev.Stage == audit.StageResponseComplete {
						return nil
					}
				}
				return fmt.Errorf("%d events, none for the create", len(events))
			})
			if data, err := os.ReadFile(logPath); err != nil || !json.Valid([]byte(firstLine(data))) {
				t.Fatalf("the log file beside the webhook: %v %q", err, data)
			}
		})
	}
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' {
			return string(b[:i])
		}
	}
	return string(b)
}
