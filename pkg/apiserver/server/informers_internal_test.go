package server

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// storageCalls counts the watches opened against each built-in kind's storage and can
// hold up the lists of one kind, through controlplane.Config.WrapStorage.
type storageCalls struct {
	mu      sync.Mutex
	watches map[schema.GroupResource]int
	hold    schema.GroupResource // lists of it wait for release
	held    chan struct{}        // closed when a list of hold waits
	release chan struct{}
}

func newStorageCalls() *storageCalls {
	return &storageCalls{watches: map[schema.GroupResource]int{}, held: make(chan struct{}), release: make(chan struct{})}
}

func (c *storageCalls) wrap(gr schema.GroupResource, st storage.Interface) storage.Interface {
	if cacher, ok := st.(*storage.Cacher); ok {
		return &countedCacher{Cacher: cacher, gr: gr, calls: c}
	}
	return &counted{Interface: st, gr: gr, calls: c}
}

func (c *storageCalls) watched(gr schema.GroupResource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watches[gr]++
}

// listed waits for release when gr's lists are held.
func (c *storageCalls) listed(ctx context.Context, gr schema.GroupResource) {
	c.mu.Lock()
	hold := c.hold == gr
	if hold {
		c.hold = schema.GroupResource{}
		close(c.held)
	}
	c.mu.Unlock()
	if hold {
		select {
		case <-c.release:
		case <-ctx.Done():
		}
	}
}

type counted struct {
	storage.Interface
	gr    schema.GroupResource
	calls *storageCalls
}

func (s *counted) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	s.calls.watched(s.gr)
	return s.Interface.Watch(ctx, key, opts)
}

func (s *counted) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	s.calls.listed(ctx, s.gr)
	return s.Interface.GetList(ctx, key, opts, listObj)
}

// countedCacher keeps every method of the watch cache (the store reads through it as
// storage.CachedReader) and counts its watches.
type countedCacher struct {
	*storage.Cacher
	gr    schema.GroupResource
	calls *storageCalls
}

func (s *countedCacher) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	s.calls.watched(s.gr)
	return s.Cacher.Watch(ctx, key, opts)
}

func (s *countedCacher) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	s.calls.listed(ctx, s.gr)
	return s.Cacher.GetList(ctx, key, opts, listObj)
}

func (s *countedCacher) GetListItems(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) ([]runtime.Object, bool, error) {
	s.calls.listed(ctx, s.gr)
	return s.Cacher.GetListItems(ctx, key, opts, listObj)
}

// informerPlugins are the admission plugins that read through the shared informers.
var informerPlugins = []string{admission.LimitRanger, admission.ServiceAccount, admission.PodSecurity, admission.Priority,
	admission.DefaultStorageClass, admission.PersistentVolumeClaimResize, admission.RuntimeClass, admission.DefaultIngressClass,
	admission.PodTopologyLabels, admission.NodeDeclaredFeatureValidator, admission.PodResizeValidator,
	admission.ResourceQuota, admission.MutatingAdmissionWebhook, admission.ValidatingAdmissionPolicy, admission.ValidatingAdmissionWebhook}

// TestInformersWatchOncePerResource: with every controller and cache of the apiserver on
// (namespaces, CRDs, RBAC and the Node graph, the admission plugins that read objects, the
// webhooks, the APIServices), each built-in resource is watched at most once, and each
// resource with an informer exactly once: they share one list+watch.
func TestInformersWatchOncePerResource(t *testing.T) {
	calls := newStorageCalls()
	s := startInternal(t, func(s *Server) {
		s.wrapStorage = calls.wrap
		s.cfg.EnableAdmissionPlugins = informerPlugins
	})
	shared := s.registry.Informers().Resources()
	for _, gr := range []schema.GroupResource{{Resource: "namespaces"}, {Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, {Resource: "pods"}, {Resource: "limitranges"},
		{Group: "storage.k8s.io", Resource: "storageclasses"}, {Group: "apiregistration.k8s.io", Resource: "apiservices"},
		{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"},
		{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}, {Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"}} {
		if !containsGR(shared, gr) {
			t.Errorf("no shared informer of %s; have %v", gr, shared)
		}
	}
	// An informer opens its watch just after its first list (which Start waits for).
	waitFor(t, "every informer's watch", func() bool {
		calls.mu.Lock()
		defer calls.mu.Unlock()
		for _, gr := range shared {
			if calls.watches[gr] == 0 {
				return false
			}
		}
		return true
	})
	calls.mu.Lock()
	defer calls.mu.Unlock()
	t.Logf("watches opened: %v", calls.watches)
	for gr, n := range calls.watches {
		if n > 1 {
			t.Errorf("%s watched %d times, want at most once", gr, n)
		}
	}
	for _, gr := range shared {
		if n := calls.watches[gr]; n != 1 {
			t.Errorf("%s has an informer but was watched %d times, want once", gr, n)
		}
	}
}

func containsGR(grs []schema.GroupResource, gr schema.GroupResource) bool {
	for _, g := range grs {
		if g == gr {
			return true
		}
	}
	return false
}

// TestReadyzWaitsForInformers: an informer that has not listed yet (here one asked for after
// the start, whose list storage holds up) fails /readyz's informer-sync check, as
// kube-apiserver's; once it has listed, /readyz passes. /livez and /healthz do not wait.
func TestReadyzWaitsForInformers(t *testing.T) {
	calls := newStorageCalls()
	s := startInternal(t, func(s *Server) { s.wrapStorage = calls.wrap })
	podTemplates := schema.GroupResource{Resource: "podtemplates"}
	calls.mu.Lock()
	calls.hold = podTemplates
	calls.mu.Unlock()
	inf := informer.For[*corev1.PodTemplate](s.registry.Informers(), podTemplates)
	select {
	case <-calls.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the podtemplates informer did not list")
	}

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.bundle.CAPool,
		Certificates: []tls.Certificate{s.bundle.AdminTLS}}}}
	t.Cleanup(client.CloseIdleConnections)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := client.Get(s.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/readyz?verbose")
	if want := "[-]informer-sync failed: 1 informers not started yet: [podtemplates]\n"; code != 500 || !strings.Contains(body, want) {
		t.Fatalf("/readyz before the list: %d %q, want 500 with %q", code, body, want)
	}
	for _, p := range []string{"/livez", "/healthz"} {
		if code, body := get(p); code != 200 {
			t.Errorf("%s before the list: %d %q", p, code, body)
		}
	}
	if inf.HasSynced() {
		t.Fatal("synced while its list is held")
	}

	close(calls.release)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.registry.Informers().WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if code, body := get("/readyz?verbose"); code != 200 || !strings.Contains(body, "[+]informer-sync ok") {
		t.Fatalf("/readyz after the list: %d %q", code, body)
	}
}
