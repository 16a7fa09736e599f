package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/hacp/hacp/pkg/apiserver/certs"
)

// The client side of the drill: it lives in the drill process, but every socket it opens is
// created inside a namespace (the client host, or a master for the isolated-write check), so
// its traffic takes the same path kubectl's would.

const (
	drillNamespace = "default"
	runLabel       = "hacp-drill/run"
	requestTimeout = time.Second // the client's patience, as in the issue-7 measurement
)

// clock gives times relative to the drill's start (monotonic).
type clock struct{ epoch time.Time }

func (c clock) now() time.Duration { return time.Since(c.epoch) }

// restConfig returns a client-go config for server, dialing from inside h, as admin. The
// rate limiter is off: the writer decides its own pace.
func restConfig(b *certs.Bundle, h *host, server string, timeout time.Duration) *rest.Config {
	return &rest.Config{
		Host: server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   b.CAPEM,
			CertData: b.AdminCertPEM,
			KeyData:  b.AdminKeyPEM,
		},
		// JSON, as kubectl speaks: hacp's apiserver does not serve protobuf.
		ContentConfig: rest.ContentConfig{
			ContentType:        "application/json",
			AcceptContentTypes: "application/json",
		},
		Dial:    h.DialContext,
		Timeout: timeout,
		QPS:     1e6,
		Burst:   1e6,
	}
}

// newConnPerRequest returns a clientset whose every request uses a new TCP and TLS
// connection over HTTP/1.1, as separate kubectl invocations or restarted controllers do:
// each write asks the VIP holder's balancer for a backend again, which is where a balancer
// that still sends connections to a dead backend shows.
func newConnPerRequest(b *certs.Bundle, h *host, server string) (*kubernetes.Clientset, error) {
	cfg, err := connPerRequestConfig(b, h, server)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// connPerRequestConfig is newConnPerRequest's client-go config, for other clients.
func connPerRequestConfig(b *certs.Bundle, h *host, server string) (*rest.Config, error) {
	cfg := restConfig(b, h, server, requestTimeout)
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	tlsCfg.NextProtos = []string{"http/1.1"}
	tr := &http.Transport{
		DialContext:         h.DialContext,
		TLSClientConfig:     tlsCfg,
		DisableKeepAlives:   true,
		TLSHandshakeTimeout: requestTimeout,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	cfg.Dial = nil
	cfg.Transport = tr
	return cfg, nil
}

// recorder collects a scenario's events; safe for concurrent use.
type recorder struct {
	mu       sync.Mutex
	requests []request
	cutOff   []request // in flight when recording ended: outcome unknown
	vip      []vipSample
	probes   []probe
	health   []probe
	flunders []request // --proxy-paths: flunders created through the VIP
}

func (r *recorder) addRequest(q request) {
	r.mu.Lock()
	r.requests = append(r.requests, q)
	r.mu.Unlock()
}

// writer writes numbered ConfigMaps through cs until ctx ends, one request at a time,
// recording each: mostly creates, and in between a PUT update, a merge patch and a delete of
// objects it created, as users do. interval is the least time between the starts of two
// writes. verifyWrites checks what the acknowledged ones left behind. The request the end of
// ctx cuts off may still have been applied: it goes to cutOff (if not nil), not to rec.
func writer(ctx context.Context, clk clock, cs *kubernetes.Clientset, run string, interval time.Duration, rec, cutOff func(request)) {
	cms := cs.CoreV1().ConfigMaps(drillNamespace)
	var live []*corev1.ConfigMap // acknowledged objects, as last answered, oldest first
	created := 0
	for i := 1; ctx.Err() == nil; i++ {
		q := request{Op: opCreate}
		var target *corev1.ConfigMap
		if len(live) > 0 {
			switch i % 8 {
			case 2, 6:
				q.Op, target = opUpdate, live[len(live)-1]
			case 4:
				q.Op, target = opPatch, live[len(live)-1]
			case 7:
				q.Op, target = opDelete, live[0]
			}
		}
		start := clk.now()
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		var got *corev1.ConfigMap
		var err error
		switch q.Op {
		case opCreate:
			created++
			q.Name = fmt.Sprintf("%s-%06d", run, created)
			got, err = cms.Create(rctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: q.Name, Labels: map[string]string{runLabel: run}},
				Data:       map[string]string{"n": fmt.Sprint(created)},
			}, metav1.CreateOptions{})
		case opUpdate:
			q.Name, q.Key, q.Value = target.Name, fmt.Sprintf("u%d", i), fmt.Sprint(i)
			cm := target.DeepCopy()
			cm.Data[q.Key] = q.Value // with the resourceVersion last answered: a lost update is a 409
			got, err = cms.Update(rctx, cm, metav1.UpdateOptions{})
		case opPatch:
			q.Name, q.Key, q.Value = target.Name, fmt.Sprintf("p%d", i), fmt.Sprint(i)
			patch := fmt.Appendf(nil, `{"data":{%q:%q}}`, q.Key, q.Value)
			got, err = cms.Patch(rctx, target.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		case opDelete:
			q.Name = target.Name
			err = cms.Delete(rctx, target.Name, metav1.DeleteOptions{})
		}
		cancel()
		end := clk.now()
		if ctx.Err() != nil && err != nil {
			// Cut off by the end of recording, not by the fault; it may have been applied.
			if cutOff != nil {
				q.Start, q.End, q.Err = start, end, err.Error()
				cutOff(q)
			}
			return
		}
		q.Start, q.End, q.OK = start, end, err == nil
		if err != nil {
			q.Err = err.Error()
		}
		rec(q)
		switch {
		case q.Op == opCreate && err == nil:
			live = append(live, got)
		case q.Op == opDelete:
			live = live[1:] // gone, or in doubt: not written again either way
		case err == nil:
			live[len(live)-1] = got
		case q.Op == opUpdate || q.Op == opPatch:
			live = live[:len(live)-1] // in doubt: leave it alone from now on
		}
		if wait := interval - (end - start); wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
	}
}

// The writer's operations.
const (
	opCreate = "create"
	opUpdate = "update"
	opPatch  = "patch"
	opDelete = "delete"
)

// verifyWrites returns the acknowledged writes in reqs whose effect is missing from objects
// (what a surviving master holds, by name): a created object that is not there, an update or
// patch whose key does not hold its value, a deleted object still there. An object the
// writer tried to delete is only checked by an acknowledged delete: any other answer left
// its fate open. An update's or patch's value is checked only while it is the object's last
// write, as a later unanswered one may have replaced the data.
func verifyWrites(reqs []request, objects map[string]map[string]string) (lost []request) {
	deleteTried := map[string]bool{}
	last := map[string]int{}
	for i, q := range reqs {
		if q.Op == opDelete {
			deleteTried[q.Name] = true
		}
		if q.Op == opUpdate || q.Op == opPatch {
			last[q.Name] = i
		}
	}
	for i, q := range reqs {
		if !q.OK {
			continue
		}
		data, exists := objects[q.Name]
		switch q.Op {
		case opDelete:
			if exists {
				lost = append(lost, q)
			}
		case opUpdate, opPatch:
			if !deleteTried[q.Name] && last[q.Name] == i && data[q.Key] != q.Value {
				lost = append(lost, q)
			}
		default: // a create; older logs have no op
			if !deleteTried[q.Name] && !exists {
				lost = append(lost, q)
			}
		}
	}
	return lost
}

// startInformer runs a client-go informer on the drill's ConfigMaps through server and
// reports each added object with its arrival time. It uses client-go's default transport
// (HTTP/2, one long-lived connection), as a controller does.
func startInformer(ctx context.Context, clk clock, b *certs.Bundle, h *host, server string, rec func(watchEvent)) (cache.SharedIndexInformer, error) {
	cs, err := kubernetes.NewForConfig(restConfig(b, h, server, 0))
	if err != nil {
		return nil, err
	}
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", drillNamespace, fields.Everything())
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if cm, ok := obj.(*corev1.ConfigMap); ok {
				rec(watchEvent{Name: cm.Name, At: clk.now()})
			}
		},
	})
	if err != nil {
		return nil, err
	}
	go inf.Run(ctx.Done())
	return inf, nil
}

// readBack lists the ConfigMaps of run from server (a surviving master's apiserver, read
// from etcd with quorum) and returns their data by name.
func readBack(ctx context.Context, b *certs.Bundle, h *host, server, run string) (map[string]map[string]string, error) {
	cs, err := kubernetes.NewForConfig(restConfig(b, h, server, 10*time.Second))
	if err != nil {
		return nil, err
	}
	names := map[string]map[string]string{}
	opts := metav1.ListOptions{LabelSelector: runLabel + "=" + run, Limit: 500}
	for {
		list, err := cs.CoreV1().ConfigMaps(drillNamespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("read back %s from %s: %w", run, server, err)
		}
		for _, cm := range list.Items {
			names[cm.Name] = cm.Data
		}
		if list.Continue == "" {
			return names, nil
		}
		opts.Continue = list.Continue
	}
}

// ensureNamespace creates the drill's namespace if the server does not have it yet.
func ensureNamespace(ctx context.Context, cs *kubernetes.Clientset) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: drillNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// healthClient returns an HTTPS client that dials from h, trusts the drill's CA and opens a
// new connection for every request.
func healthClient(b *certs.Bundle, h *host, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:       h.DialContext,
			TLSClientConfig:   b.ClientTLSConfig(),
			DisableKeepAlives: true,
		},
	}
}

// tlsAnswers reports whether a TLS handshake with addr, dialed from the client host,
// completes within timeout: through a TCP balancer that means the VIP is bound, the
// balancer accepts and some apiserver behind it answers, whatever etcd's state.
func (d *drill) tlsAnswers(ctx context.Context, addr string, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := d.client.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer raw.Close()
	cfg := d.bundle.ClientTLSConfig()
	cfg.ServerName = vipAddr
	conn := tls.Client(raw, cfg)
	return conn.HandshakeContext(ctx) == nil
}

// healthy reports whether GET url answers 200.
func healthy(ctx context.Context, c *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
