package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/audit"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// watchEvent is one event of a JSON watch stream, with its object's name.
type watchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Kind     string            `json:"kind"`
		Metadata metav1.ObjectMeta `json:"metadata"`
	} `json:"object"`
}

// openStream sends a GET of path as rc's user and returns the response, its body closed
// when the test ends.
func openStream(t *testing.T, rc *rest.Config, path string) *http.Response {
	t.Helper()
	rt, err := rest.TransportFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rc.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// events decodes the watch stream of resp into a channel, closed when the stream ends.
func events(resp *http.Response) <-chan watchEvent {
	ch := make(chan watchEvent, 100)
	go func() {
		defer close(ch)
		dec := json.NewDecoder(resp.Body)
		for {
			var ev watchEvent
			if err := dec.Decode(&ev); err != nil {
				return
			}
			ch <- ev
		}
	}()
	return ch
}

// waitAdded waits (up to 30 seconds) for the ADDED event of the configmap named name; any
// other event before it is skipped.
func waitAdded(t *testing.T, ch <-chan watchEvent, name string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the watch ended before configmap %q was added", name)
			}
			if ev.Type == "ADDED" && ev.Object.Kind == "ConfigMap" && ev.Object.Metadata.Name == name {
				return
			}
		case <-deadline:
			t.Fatalf("no ADDED event of configmap %q in 30s", name)
		}
	}
}

// grantConfigMaps binds user to a role of verbs on configmaps in ns, and waits until the
// authorizer lets user list them.
func grantConfigMaps(t *testing.T, admin kubernetes.Interface, user string, rc *rest.Config, ns string, verbs ...string) {
	t.Helper()
	mustCreate(t, admin.RbacV1().Roles(ns).Create, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules: []rbacv1.PolicyRule{{Verbs: verbs, APIGroups: []string{""}, Resources: []string{"configmaps"}}}})
	mustCreate(t, admin.RbacV1().RoleBindings(ns).Create, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}, Subjects: []rbacv1.Subject{{Kind: "User", Name: user}}})
	client := kubernetes.NewForConfigOrDie(rc)
	eventuallyOK(t, user+" lists configmaps in "+ns, func() error {
		_, err := client.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
		return err
	})
}

// TestWatchSpellings: every spelling of ?watch that the handler streams as a watch is
// authorized and audited as a watch, as upstream (any value but 0 and false): a user allowed
// to list but not watch configmaps cannot watch them with ?watch=yes, ?watch or ?watch=1,
// and a user allowed both gets a stream audited as verb watch.
func TestWatchSpellings(t *testing.T) {
	s, logPath := startAudited(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n", nil)
	admin := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	mustCreate(t, admin.CoreV1().Namespaces().Create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})
	_, lister := userConfig(t, s, "lister")
	_, watcher := userConfig(t, s, "watcher")
	grantConfigMaps(t, admin, "lister", lister, "team", "list")
	grantConfigMaps(t, admin, "watcher", watcher, "team", "list", "watch")

	const coll = "/api/v1/namespaces/team/configmaps"
	for _, q := range []string{"watch=yes", "watch", "watch=1", "watch=", "watch=true", "watch=f", "watch=yes&watch=false"} {
		t.Run("list only "+q, func(t *testing.T) {
			resp := openStream(t, lister, coll+"?"+q)
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("%s: %s, want 403 for the watch verb", q, resp.Status)
			}
			body, _ := io.ReadAll(resp.Body)
			if !strings.Contains(string(body), `User \"lister\" cannot watch resource \"configmaps\"`) {
				t.Fatalf("%s: %s, want the watch verb refused", q, body)
			}
		})
	}
	for _, q := range []string{"watch=0", "watch=false", "watch=False", "watch=false&watch=true"} {
		t.Run("list only "+q, func(t *testing.T) {
			resp := openStream(t, lister, coll+"?"+q)
			var list corev1.ConfigMapList
			if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != http.StatusOK || list.Kind != "ConfigMapList" {
				t.Fatalf("%s: %s (%v), want 200 and a ConfigMapList", q, resp.Status, err)
			}
		})
	}
	for i, q := range []string{"watch=yes", "watch", "watch=1"} {
		t.Run("list and watch "+q, func(t *testing.T) {
			resp := openStream(t, watcher, coll+"?"+q+"&audit="+string(rune('a'+i)))
			if resp.StatusCode != http.StatusOK {
				body, _ := io.ReadAll(resp.Body)
				t.Fatalf("%s: %s %s", q, resp.Status, body)
			}
			ch := events(resp)
			name := "cm-" + string(rune('a'+i))
			mustCreate(t, admin.CoreV1().ConfigMaps("team").Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}})
			waitAdded(t, ch, name)
			uri := coll + "?" + q + "&audit=" + string(rune('a'+i))
			evs := waitAudit(t, logPath, "the watch's audit events", func(ev audit.Event) bool {
				return ev.RequestURI == uri && ev.User.Username == "watcher"
			}, 1)
			for _, ev := range evs {
				if ev.Verb != "watch" {
					t.Fatalf("%s audited as verb %q, want watch", uri, ev.Verb)
				}
			}
		})
	}
}

// TestWatchSpellingHoldsNoInflightSlot: a ?watch=yes watch is long-running like any other
// watch, so it does not hold one of the max-in-flight slots that lists need.
func TestWatchSpellingHoldsNoInflightSlot(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) {
		c.MaxRequestsInflight = 1
		c.EnablePriorityAndFairness = false
		c.AuthorizationMode, c.AnonymousAuth = "AlwaysAllow", false
	})
	// As alice: system:masters is served whatever the limits.
	rc := servertest.RestConfig(t, s)
	rc.Impersonate.UserName = "alice"
	watch := openStream(t, rc, "/api/v1/namespaces/default/configmaps?watch=yes")
	if watch.StatusCode != http.StatusOK {
		t.Fatalf("watch: %s", watch.Status)
	}
	alice := kubernetes.NewForConfigOrDie(rc)
	for range 3 {
		if _, err := alice.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Fatalf("a list beside the open ?watch=yes watch, with one read-only slot: %v", err)
		}
	}
}

// TestWatchTimeoutSecondsZero: timeoutSeconds=0 means no timeout of the client's, as
// upstream (the server's 30 to 60 minutes apply): the watch stays open and streams events.
func TestWatchTimeoutSecondsZero(t *testing.T) {
	s := servertest.New(t, nil)
	rc := servertest.RestConfig(t, s)
	admin := kubernetes.NewForConfigOrDie(rc)
	resp := openStream(t, rc, "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=0")
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("watch with timeoutSeconds=0: %s %s", resp.Status, body)
	}
	ch := events(resp)
	for _, name := range []string{"first", "second"} {
		mustCreate(t, admin.CoreV1().ConfigMaps("default").Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}})
		waitAdded(t, ch, name)
	}
}
