package main

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	hnetns "github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/pkg/apiserver/certs"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// restConfig is a client of server from inside h with a client certificate of user in
// groups; every request it makes is recorded in rec (nil: not recorded).
func restConfig(b *certs.Bundle, h *hnetns.Host, server string, certPEM, keyPEM []byte, rec *recorder, qps float32) *rest.Config {
	cfg := &rest.Config{
		Host:            server,
		TLSClientConfig: rest.TLSClientConfig{CAData: b.CAPEM, CertData: certPEM, KeyData: keyPEM},
		// JSON, as kubectl speaks (the node agents speak protobuf: nodeAgentConfig).
		ContentConfig: rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"},
		Dial:          h.DialContext,
		Timeout:       0,
		QPS:           qps,
		Burst:         int(2 * qps),
	}
	if rec != nil {
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &recordingTransport{rt: rt, rec: rec} }
	}
	return cfg
}

// nodeAgentConfig is restConfig speaking protobuf, as a kubelet and kube-proxy do by
// default (kubelet's contentType, kube-proxy's clientConnection.contentType).
func nodeAgentConfig(b *certs.Bundle, h *hnetns.Host, server string, certPEM, keyPEM []byte, rec *recorder, qps float32) *rest.Config {
	cfg := restConfig(b, h, server, certPEM, keyPEM, rec, qps)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return cfg
}

// recordingTransport records every SLI-class request's latency and outcome.
type recordingTransport struct {
	rt  http.RoundTripper
	rec *recorder
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	class := classify(req.Method, req.URL)
	start := time.Now()
	resp, err := t.rt.RoundTrip(req)
	if class != "" {
		ok := err == nil && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests
		t.rec.add(sample{Class: class, Start: start, Dur: time.Since(start), OK: ok})
	}
	return resp, err
}

// watcher is one list-then-watch loop, as a reflector runs it, with what the storm needs:
// when its watch was last (re)opened and when it delivered the storm's marker object.
type watcher struct {
	list   func(ctx context.Context, opts metav1.ListOptions) (string, error)
	watch  func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	events *atomic.Int64

	mu       sync.Mutex
	open     bool
	openedAt time.Time
	closedAt time.Time
	marker   string
	markerAt time.Time
}

// run lists, then watches from the list's resourceVersion, re-watching from the last one
// seen when the watch ends and re-listing when it is too old, until ctx ends.
func (w *watcher) run(ctx context.Context) {
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			var err error
			if rv, err = w.list(ctx, metav1.ListOptions{}); err != nil {
				rv = ""
				backoff(ctx)
				continue
			}
		}
		wi, err := w.watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				rv = ""
			}
			backoff(ctx)
			continue
		}
		w.setOpen(true)
		rv = w.consume(wi, rv)
		w.setOpen(false)
	}
}

// consume reads one watch until it ends and returns the last resourceVersion seen ("" to
// re-list).
func (w *watcher) consume(wi watch.Interface, rv string) string {
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		if ev.Type == watch.Error {
			if st, ok := ev.Object.(*metav1.Status); ok && st.Code == http.StatusGone {
				return ""
			}
			return rv
		}
		m, err := metaOf(ev.Object)
		if err != nil {
			continue
		}
		rv = m.GetResourceVersion()
		if ev.Type == watch.Bookmark {
			continue
		}
		w.events.Add(1)
		w.mu.Lock()
		if w.marker != "" && m.GetName() == w.marker && w.markerAt.IsZero() {
			w.markerAt = time.Now()
		}
		w.mu.Unlock()
	}
	return rv
}

func (w *watcher) setOpen(open bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.open = open
	if open {
		w.openedAt = time.Now()
	} else {
		w.closedAt = time.Now()
	}
}

// recoveredAt says when the watcher was back after fault: its watch open and opened
// after the fault (or never closed since), and the marker delivered when it expects one.
func (w *watcher) recoveredAt(fault time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.open {
		return time.Time{}, false
	}
	at := fault
	if w.closedAt.After(fault) || w.openedAt.After(fault) {
		at = w.openedAt
	}
	if w.marker != "" {
		if w.markerAt.IsZero() {
			return time.Time{}, false
		}
		at = latest(at, w.markerAt)
	}
	return at, true
}

func (w *watcher) expect(marker string) {
	w.mu.Lock()
	w.marker, w.markerAt = marker, time.Time{}
	w.mu.Unlock()
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func backoff(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(500 * time.Millisecond):
	}
}

// nodeAgent is one simulated node's kubelet and kube-proxy watches, and the kubelet's
// watches of the Secrets and ConfigMaps its pods mount.
type nodeAgent struct {
	name     string
	watchers []*watcher // pods, node, services, endpointslices
	ctx      context.Context
	kubelet  *kubernetes.Clientset
	events   *atomic.Int64

	mu   sync.Mutex
	refs *volumeRefs
	vols map[objRef]*volumeWatch
}

// volumeWatch is the kubelet's watch of one Secret or ConfigMap, and how to stop it.
type volumeWatch struct {
	w    *watcher
	stop context.CancelFunc
}

// agents are all simulated nodes.
type agents struct {
	nodes  []*nodeAgent
	events atomic.Int64
}

// startAgents starts every node's watches through the VIP: the kubelet (system:node:NAME)
// on its own connection, kube-proxy (system:kube-proxy) on another.
func (s *stack) startAgents(ctx context.Context, names []string, rec *recorder) (*agents, error) {
	b := s.b
	a := &agents{}
	pcert, pkey, err := b.bundle.IssueClient("system:kube-proxy", nil, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		kcert, kkey, err := b.bundle.IssueClient("system:node:"+n, []string{"system:nodes"}, 24*time.Hour)
		if err != nil {
			return nil, err
		}
		kubelet, err := kubernetes.NewForConfig(nodeAgentConfig(b.bundle, b.client, vipURL(), kcert, kkey, rec, 50))
		if err != nil {
			return nil, err
		}
		proxy, err := kubernetes.NewForConfig(nodeAgentConfig(b.bundle, b.client, vipURL(), pcert, pkey, rec, 50))
		if err != nil {
			return nil, err
		}
		na := &nodeAgent{name: n, ctx: ctx, kubelet: kubelet, events: &a.events, refs: newVolumeRefs(), vols: map[objRef]*volumeWatch{}}
		na.watchers = na.nodeWatchers(proxy)
		a.nodes = append(a.nodes, na)
		for _, w := range na.watchers {
			go w.run(ctx)
		}
	}
	return a, nil
}

// byName is a list-then-watch of the objects sel selects, through list and watchFn.
func byName[L listWithRV](sel string, events *atomic.Int64, list func(context.Context, metav1.ListOptions) (L, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) *watcher {
	return &watcher{events: events,
		list: func(ctx context.Context, o metav1.ListOptions) (string, error) {
			o.FieldSelector = sel
			return rvOf(list(ctx, o))
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return watchFn(ctx, o)
		}}
}

// nodeWatchers are a kubelet's and a kube-proxy's watches for the node; the kubelet's pod
// watch starts and stops the Secret and ConfigMap watches.
func (na *nodeAgent) nodeWatchers(proxy *kubernetes.Clientset) []*watcher {
	podSel := fields.OneTermEqualSelector("spec.nodeName", na.name).String()
	pods := na.kubelet.CoreV1().Pods("")
	nodes := na.kubelet.CoreV1().Nodes()
	svcs := proxy.CoreV1().Services("")
	eps := proxy.DiscoveryV1().EndpointSlices("")
	return []*watcher{
		{events: na.events,
			list: func(ctx context.Context, o metav1.ListOptions) (string, error) {
				o.FieldSelector = podSel
				l, err := pods.List(ctx, o)
				if err == nil {
					na.podsListed(l.Items)
				}
				return rvOf(l, err)
			},
			watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.FieldSelector = podSel
				wi, err := pods.Watch(ctx, o)
				if err != nil {
					return nil, err
				}
				return watch.Filter(wi, func(ev watch.Event) (watch.Event, bool) { na.podEvent(ev); return ev, true }), nil
			}},
		byName(fields.OneTermEqualSelector("metadata.name", na.name).String(), na.events, nodes.List, nodes.Watch),
		{events: na.events,
			list: func(ctx context.Context, o metav1.ListOptions) (string, error) {
				l, err := svcs.List(ctx, o)
				return rvOf(l, err)
			},
			watch: svcs.Watch},
		{events: na.events,
			list: func(ctx context.Context, o metav1.ListOptions) (string, error) {
				l, err := eps.List(ctx, o)
				return rvOf(l, err)
			},
			watch: eps.Watch},
	}
}

// podsListed takes a list of the node's pods as all its pods.
func (na *nodeAgent) podsListed(pods []corev1.Pod) {
	changes := map[types.UID][]objRef{}
	for i := range pods {
		changes[pods[i].UID] = podRefs(&pods[i])
	}
	na.podsChanged(changes, true)
}

// podEvent takes one event of the node's pod watch.
func (na *nodeAgent) podEvent(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	refs := podRefs(p)
	if ev.Type == watch.Deleted {
		refs = nil
	}
	na.podsChanged(map[types.UID][]objRef{p.UID: refs}, false)
}

// podsChanged starts a list-then-watch of each object a pod on the node now mounts and
// none did before, and stops the one of each object no pod mounts any more, as a
// kubelet's watch-based Secret and ConfigMap managers do.
func (na *nodeAgent) podsChanged(changes map[types.UID][]objRef, replace bool) {
	na.mu.Lock()
	defer na.mu.Unlock()
	start, stop := na.refs.update(changes, replace)
	for _, r := range stop {
		na.vols[r].stop()
		delete(na.vols, r)
	}
	for _, r := range start {
		ctx, cancel := context.WithCancel(na.ctx)
		vw := &volumeWatch{w: na.objectWatcher(r), stop: cancel}
		na.vols[r] = vw
		go vw.w.run(ctx)
	}
}

// objectWatcher is the kubelet's list-then-watch of r alone (fieldSelector metadata.name).
func (na *nodeAgent) objectWatcher(r objRef) *watcher {
	sel := fields.OneTermEqualSelector("metadata.name", r.Name).String()
	if r.Resource == "secrets" {
		c := na.kubelet.CoreV1().Secrets(r.Namespace)
		return byName(sel, na.events, c.List, c.Watch)
	}
	c := na.kubelet.CoreV1().ConfigMaps(r.Namespace)
	return byName(sel, na.events, c.List, c.Watch)
}

// all are the node's watchers now: the four, then its Secret and ConfigMap watches.
func (na *nodeAgent) all() []*watcher {
	na.mu.Lock()
	defer na.mu.Unlock()
	out := slices.Clone(na.watchers)
	for _, vw := range na.vols {
		out = append(out, vw.w)
	}
	return out
}

// expectMarkers makes every node's Service and EndpointSlice watchers wait for name.
func (a *agents) expectMarkers(name string) {
	for _, n := range a.nodes {
		n.watchers[2].expect(name)
		n.watchers[3].expect(name)
	}
}

// recovered returns how many nodes are not yet recovered after fault and, once all are,
// the latest node's recovery time.
func (a *agents) recovered(fault time.Time) (pending int, last time.Time) {
	for _, n := range a.nodes {
		for _, w := range n.all() {
			at, ok := w.recoveredAt(fault)
			if !ok {
				pending++
				break
			}
			last = latest(last, at)
		}
	}
	return pending, last
}

// established reports whether every watcher has its watch open.
func (a *agents) established() bool {
	for _, n := range a.nodes {
		for _, w := range n.all() {
			w.mu.Lock()
			open := w.open
			w.mu.Unlock()
			if !open {
				return false
			}
		}
	}
	return true
}

// volumeCount is the nodes' Secret and ConfigMap watches: how many there are, how many
// have their watch open, how many of those (re)opened it after a time; and the pods the
// kubelets know of.
type volumeCount struct{ total, open, reopened, pods int }

// volumeWatches counts the nodes' Secret and ConfigMap watches; reopened: since since.
func (a *agents) volumeWatches(since time.Time) volumeCount {
	var c volumeCount
	for _, n := range a.nodes {
		n.mu.Lock()
		vols := slices.Collect(maps.Values(n.vols))
		c.pods += len(n.refs.pods)
		n.mu.Unlock()
		for _, vw := range vols {
			c.total++
			vw.w.mu.Lock()
			if vw.w.open {
				c.open++
				if vw.w.openedAt.After(since) {
					c.reopened++
				}
			}
			vw.w.mu.Unlock()
		}
	}
	return c
}
