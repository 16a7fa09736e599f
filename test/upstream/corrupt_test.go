package upstream_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	clientv3 "go.etcd.io/etcd/client/v3"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestUnsafeDeleteCorruptAsKubeAPIServer: objects that cannot be read back from etcd (one
// whose value no configured encryption key decrypts, one whose bytes do not decode) answer
// as kube-apiserver 1.37's with AllowUnsafeMalformedObjectDeletion on (its default): get,
// list (the causes naming the corrupt keys), delete without the option, and delete with
// ignoreStoreReadErrorWithClusterBreakingPotential (refused without the extra
// unsafe-delete-ignore-read-errors verb, with options it cannot go with, on a readable object,
// on a collection; a dry run; the query parameter), the objects' absence afterwards and what
// a watch open across it all sees. Each server has its own etcd, corrupted the same way.
func TestUnsafeDeleteCorruptAsKubeAPIServer(t *testing.T) {
	kubeBin := upstream.Binary(t, "kube-apiserver")
	encCfg := filepath.Join(t.TempDir(), "encryption.yaml")
	cfg := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [configmaps]\n  providers:\n" +
		keyedProvider(t, "aescbc", 32) + "  - identity: {}\n"
	if err := os.WriteFile(encCfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// With the watch caches on (both servers' default) and off: without them, the watch is
	// etcd's own and ends at the corrupt value with an error event.
	for _, cached := range []bool{true, false} {
		t.Run(fmt.Sprintf("watch-cache=%v", cached), func(t *testing.T) {
			hetcd := etcdtest.Start(t)
			h := servertest.New(t, func(c *server.Config) {
				c.EtcdServers = []string{hetcd.ClientURL()}
				c.EncryptionProviderConfig = encCfg
				c.WatchCache = cached
			})
			ketcd := etcdtest.Start(t)
			kube := startAuthzKube(t, kubeBin, ketcd.ClientURL(), h.Certs().CACert, h.Certs().ServiceAccountKey,
				"--encryption-provider-config="+encCfg, fmt.Sprintf("--watch-cache=%v", cached))
			want := corruptSteps(t, kube.admin, etcdClientOf(t, ketcd), cached)
			for _, s := range want {
				t.Logf("kube-apiserver: %s", s)
			}
			got := corruptSteps(t, servertest.RestConfig(t, h), etcdClientOf(t, hetcd), cached)
			sameSteps(t, got, want)
		})
	}
}

func etcdClientOf(t *testing.T, e *embedetcd.Server) *clientv3.Client {
	t.Helper()
	c, err := e.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// corruptNumbers are the parts of a message that differ between two servers' etcds.
var corruptNumbers = regexp.MustCompile(`(revision=)[0-9]+`)

func describeCorrupt(err error) string {
	return corruptNumbers.ReplaceAllString(describeStatus(err), "${1}N")
}

// corruptSteps runs the steps against one server (admin, and carol impersonated) whose etcd
// is ec, and describes what each saw.
func corruptSteps(t *testing.T, admin *rest.Config, ec *clientv3.Client, cached bool) []string {
	t.Helper()
	ctx := context.Background()
	const ns = "corrupt"
	cs := kubernetes.NewForConfigOrDie(admin)
	asCarol := rest.CopyConfig(admin)
	asCarol.Impersonate = rest.ImpersonationConfig{UserName: "carol"}
	carol := kubernetes.NewForConfigOrDie(asCarol).CoreV1().ConfigMaps(ns)
	cms := cs.CoreV1().ConfigMaps(ns)
	var seen []string
	see := func(step string, err error) { seen = append(seen, step+": "+describeCorrupt(err)) }

	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a-good", "b-undecryptable", "c-undecodable"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"example.com/hold"}}, Data: map[string]string{"k": "v"}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := startRecording(t, cms, list.ResourceVersion)
	// A value of the configured provider whose key cannot decrypt it, and one that no
	// provider claims and identity passes on as bytes that do not decode.
	putRaw(t, ec, "/registry/configmaps/"+ns+"/b-undecryptable", "k8s:enc:aescbc:v1:key1:this is not ciphertext of key1")
	rev := putRaw(t, ec, "/registry/configmaps/"+ns+"/c-undecodable", "k8s\x00this is not a protobuf object")
	var after *watchRecording
	if !cached {
		// etcd's own watch from the corrupt values on: the unsafe deletion of one ends it.
		after = startRecording(t, cms, strconv.FormatInt(rev, 10))
	}

	_, err = cms.Get(ctx, "b-undecryptable", metav1.GetOptions{})
	see("get undecryptable", err)
	_, err = cms.Get(ctx, "c-undecodable", metav1.GetOptions{})
	see("get undecodable", err)
	_, err = cms.Get(ctx, "a-good", metav1.GetOptions{})
	see("get readable", err)
	_, err = cms.List(ctx, metav1.ListOptions{})
	see("list", err)
	// With watch caches, not compared: kube-apiserver's answers from the state it held before
	// the values went bad (until it lists again), hacp's sends the list to etcd (see
	// docs/apiserver.md).
	_, err = cms.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if cached {
		t.Logf("list rv=0: %s", describeCorrupt(err))
	} else {
		see("list rv=0", err)
	}

	unsafe := metav1.DeleteOptions{IgnoreStoreReadErrorWithClusterBreakingPotential: ptr.To(true)}
	see("delete without the option", cms.Delete(ctx, "b-undecryptable", metav1.DeleteOptions{}))
	grant(t, cs, "carol-delete", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"delete", "get", "list"}})
	waitCarolMay(t, cs, "delete")
	see("carol deletes with the option, delete only", carol.Delete(ctx, "b-undecryptable", unsafe))
	see("with gracePeriodSeconds", cms.Delete(ctx, "b-undecryptable", metav1.DeleteOptions{IgnoreStoreReadErrorWithClusterBreakingPotential: ptr.To(true),
		GracePeriodSeconds: ptr.To[int64](0), PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}))
	see("with preconditions", cms.Delete(ctx, "b-undecryptable", metav1.DeleteOptions{IgnoreStoreReadErrorWithClusterBreakingPotential: ptr.To(true),
		Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To("1")}}))
	see("on a readable object", cms.Delete(ctx, "a-good", unsafe))
	see("on a missing object", cms.Delete(ctx, "missing", unsafe))
	see("on the collection", cms.DeleteCollection(ctx, unsafe, metav1.ListOptions{}))
	see("dry run", cms.Delete(ctx, "b-undecryptable", metav1.DeleteOptions{IgnoreStoreReadErrorWithClusterBreakingPotential: ptr.To(true), DryRun: []string{metav1.DryRunAll}}))
	_, err = cms.Get(ctx, "b-undecryptable", metav1.GetOptions{})
	see("get after the dry run", err)

	grant(t, cs, "carol-unsafe", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"unsafe-delete-ignore-read-errors"}})
	waitCarolMay(t, cs, "unsafe-delete-ignore-read-errors")
	res := carol.Delete(ctx, "b-undecryptable", unsafe)
	see("carol deletes with the option, both verbs", res)
	_, err = cms.Get(ctx, "b-undecryptable", metav1.GetOptions{})
	see("get after", err)
	_, err = cms.List(ctx, metav1.ListOptions{})
	see("list after", err)
	seen = append(seen, "delete by query parameter: "+rawDelete(ctx, cs, ns, "c-undecodable"))
	l, err := cms.List(ctx, metav1.ListOptions{})
	see("list at the end", err)
	if err == nil {
		seen = append(seen, fmt.Sprintf("left: %d items", len(l.Items)))
	}
	// A watch open across it all: what it saw up to an object created after, or its end.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d-after"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the watch sees d-after or ends", w.sawOrEnded("d-after"))
	seen = append(seen, w.stop(t)...)
	if after != nil {
		waitUntil(t, "the watch from the corrupt values ends", after.sawOrEnded("(none)"))
		for _, s := range after.stop(t) {
			seen = append(seen, "from the corrupt values: "+s)
		}
	}
	return seen
}

// putRaw writes value at key in etcd and returns the revision of the write.
func putRaw(t *testing.T, ec *clientv3.Client, key, value string) int64 {
	t.Helper()
	resp, err := ec.Put(context.Background(), key, value)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// rawDelete deletes name with the option as a query parameter and no body, and describes
// the answer as code and body.
func rawDelete(ctx context.Context, cs kubernetes.Interface, ns, name string) string {
	r := cs.CoreV1().RESTClient().Delete().Namespace(ns).Resource("configmaps").Name(name).
		Param("ignoreStoreReadErrorWithClusterBreakingPotential", "true").Do(ctx)
	var code int
	r.StatusCode(&code)
	body, _ := r.Raw()
	return fmt.Sprintf("%d %s %s", code, describeCorrupt(r.Error()), strings.TrimSpace(string(body)))
}

// waitCarolMay waits until the authorizer lets carol do verb on configmaps in the namespace.
func waitCarolMay(t *testing.T, cs kubernetes.Interface, verb string) {
	t.Helper()
	until(t, "carol may "+verb, func() error {
		r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: "carol", ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: "corrupt", Verb: verb, Resource: "configmaps", Name: "b-undecryptable"}}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !r.Status.Allowed {
			return fmt.Errorf("not yet: %s", r.Status.Reason)
		}
		return nil
	})
}

// watchRecording keeps what a watch sees.
type watchRecording struct {
	w    watch.Interface
	mu   sync.Mutex
	seen []string
	done chan struct{}
}

func startRecording(t *testing.T, cms interface {
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}, rv string) *watchRecording {
	t.Helper()
	w, err := cms.Watch(context.Background(), metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	r := &watchRecording{w: w, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for ev := range w.ResultChan() {
			r.mu.Lock()
			r.seen = append(r.seen, describeEvent(ev))
			r.mu.Unlock()
		}
	}()
	return r
}

func describeEvent(ev watch.Event) string {
	switch o := ev.Object.(type) {
	case *corev1.ConfigMap:
		return fmt.Sprintf("%s %s", ev.Type, o.Name)
	case *metav1.Status:
		return fmt.Sprintf("%s %d %s %q", ev.Type, o.Code, o.Reason, corruptNumbers.ReplaceAllString(o.Message, "${1}N"))
	}
	return fmt.Sprintf("%s %T", ev.Type, ev.Object)
}

// sawOrEnded is a condition: the watch saw an event of name, or ended.
func (r *watchRecording) sawOrEnded(name string) func() (bool, string) {
	return func() (bool, string) {
		select {
		case <-r.done:
			return true, ""
		default:
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, s := range r.seen {
			if strings.HasSuffix(s, " "+name) {
				return true, ""
			}
		}
		return false, strings.Join(r.seen, "; ")
	}
}

// stop ends the watch and describes what it saw, in order.
func (r *watchRecording) stop(t *testing.T) []string {
	t.Helper()
	r.mu.Lock()
	out := make([]string, 0, len(r.seen)+1)
	select {
	case <-r.done:
		out = append(out, "watch: ended")
	default:
	}
	seen := r.seen
	r.mu.Unlock()
	r.w.Stop()
	<-r.done
	for _, s := range seen {
		out = append(out, "watch: "+s)
	}
	return out
}
