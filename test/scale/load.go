package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hacp/hacp/internal/upstream"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

const deploymentSize = 10

func metaOf(o runtime.Object) (metav1.Object, error) { return meta.Accessor(o) }

type listWithRV interface{ GetResourceVersion() string }

func rvOf[L listWithRV](l L, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return l.GetResourceVersion(), nil
}

// plan is the ClusterLoader2-style load for N nodes.
type plan struct {
	namespaces  []string
	deployments []types.NamespacedName
}

func newPlan(nodes, podsPerNode int) plan {
	var p plan
	for i := range max(1, nodes/100) {
		p.namespaces = append(p.namespaces, fmt.Sprintf("scale-%d", i))
	}
	total := nodes * podsPerNode
	for i := range (total + deploymentSize - 1) / deploymentSize {
		p.deployments = append(p.deployments, types.NamespacedName{Namespace: p.namespaces[i%len(p.namespaces)], Name: fmt.Sprintf("dep-%d", i)})
	}
	return p
}

func serviceOf(name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Port: 80}}}}
}

// deploymentOf is upstream.Deployment with the Deployment's ConfigMap and Secret (both
// named as it) mounted in its pods, which every node's kubelet then watches.
func deploymentOf(name string, replicas int32) *appsv1.Deployment {
	d := upstream.Deployment(name, replicas)
	pod := &d.Spec.Template.Spec
	pod.Volumes = []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}},
		{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}},
	}
	pod.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/config"}, {Name: "secret", MountPath: "/etc/secret"}}
	return d
}

func configMapOf(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"app.conf": "name=" + name}}
}

func secretOf(name string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"token": name}}
}

// retry calls f until it succeeds (or finds the object there) or timeout passes.
func retry(ctx context.Context, timeout time.Duration, f func() error) error {
	var last error
	if err := poll(ctx, timeout, func() bool {
		last = f()
		return last == nil || apierrors.IsAlreadyExists(last)
	}); err != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return nil
}

// forEach runs f on every item with workers goroutines and returns the first error.
func forEach[T any](items []T, workers int, f func(T) error) error {
	var mu sync.Mutex
	var first error
	ch := make(chan T)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				if err := f(it); err != nil {
					mu.Lock()
					first = cmpOr(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, it := range items {
		ch <- it
	}
	close(ch)
	wg.Wait()
	return first
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// createLoad creates the namespaces, per Deployment a Service, a ConfigMap and a Secret,
// and the Deployments at replicas pods each.
func createLoad(ctx context.Context, cs *kubernetes.Clientset, p plan, replicas int32) error {
	if err := forEach(p.namespaces, 4, func(ns string) error {
		return retry(ctx, time.Minute, func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			return err
		})
	}); err != nil {
		return fmt.Errorf("namespaces: %w", err)
	}
	return forEach(p.deployments, 8, func(d types.NamespacedName) error {
		core := cs.CoreV1()
		for _, c := range []struct {
			what   string
			create func() error
		}{
			{"service", func() error {
				_, err := core.Services(d.Namespace).Create(ctx, serviceOf(d.Name), metav1.CreateOptions{})
				return err
			}},
			{"configmap", func() error {
				_, err := core.ConfigMaps(d.Namespace).Create(ctx, configMapOf(d.Name), metav1.CreateOptions{})
				return err
			}},
			{"secret", func() error {
				_, err := core.Secrets(d.Namespace).Create(ctx, secretOf(d.Name), metav1.CreateOptions{})
				return err
			}},
		} {
			if err := retry(ctx, time.Minute, c.create); err != nil {
				return fmt.Errorf("%s %s: %w", c.what, d, err)
			}
		}
		return retry(ctx, time.Minute, func() error {
			_, err := cs.AppsV1().Deployments(d.Namespace).Create(ctx, deploymentOf(d.Name, replicas), metav1.CreateOptions{})
			return err
		})
	})
}

// scaleLoad sets every Deployment's replicas.
func scaleLoad(ctx context.Context, cs *kubernetes.Clientset, p plan, replicas int32) error {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	return forEach(p.deployments, 8, func(d types.NamespacedName) error {
		return retry(ctx, time.Minute, func() error {
			_, err := cs.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		})
	})
}

// deleteLoad deletes the Deployments, then their Services, ConfigMaps and Secrets.
func deleteLoad(ctx context.Context, cs *kubernetes.Clientset, p plan) error {
	return forEach(p.deployments, 8, func(d types.NamespacedName) error {
		if err := cs.AppsV1().Deployments(d.Namespace).Delete(ctx, d.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		for _, del := range []func(context.Context, string, metav1.DeleteOptions) error{
			cs.CoreV1().Services(d.Namespace).Delete, cs.CoreV1().ConfigMaps(d.Namespace).Delete, cs.CoreV1().Secrets(d.Namespace).Delete,
		} {
			if err := del(ctx, d.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	})
}

// podTracker watches every pod and times first seen -> first seen Running.
type podTracker struct {
	mu      sync.Mutex
	seen    map[types.UID]time.Time
	running map[types.UID]time.Duration
	live    map[types.UID]bool // seen Running and not deleted
}

func newPodTracker() *podTracker {
	return &podTracker{seen: map[types.UID]time.Time{}, running: map[types.UID]time.Duration{}, live: map[types.UID]bool{}}
}

func (t *podTracker) observe(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if ev.Type == watch.Deleted {
		delete(t.live, p.UID)
		return
	}
	first, ok := t.seen[p.UID]
	if !ok {
		first = now
		t.seen[p.UID] = now
	}
	if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
		if _, done := t.running[p.UID]; !done {
			t.running[p.UID] = now.Sub(first)
		}
		t.live[p.UID] = true
	}
}

func (t *podTracker) liveCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.live)
}

func (t *podTracker) startup() []float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []float64
	for _, d := range t.running {
		out = append(out, d.Seconds())
	}
	return out
}

// watchPods runs a watcher of every pod feeding t.
func watchPods(ctx context.Context, cs *kubernetes.Clientset, t *podTracker) {
	pods := cs.CoreV1().Pods("")
	w := &watcher{
		events: new(atomic.Int64),
		list: func(ctx context.Context, o metav1.ListOptions) (string, error) {
			l, err := pods.List(ctx, o)
			if err != nil {
				return "", err
			}
			for i := range l.Items {
				t.observe(watch.Event{Type: watch.Added, Object: &l.Items[i]})
			}
			return l.ResourceVersion, nil
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			wi, err := pods.Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			return watch.Filter(wi, func(ev watch.Event) (watch.Event, bool) { t.observe(ev); return ev, true }), nil
		},
	}
	w.run(ctx)
}

// steadyLoad is the load generator's request mix through the VIP: ConfigMap creates and
// patches, gets of Nodes and ConfigMaps, lists of a namespace's pods and of all pods.
type steadyLoad struct {
	cs    *kubernetes.Clientset
	ns    string
	nodes []string
	quick bool

	mu    sync.Mutex
	acked []string
}

func (l *steadyLoad) run(ctx context.Context, namespaces []string) {
	var wg sync.WaitGroup
	every := func(d time.Duration, f func(ctx context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(d)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					f(rctx)
					cancel()
				}
			}
		}()
	}
	i := 0
	every(100*time.Millisecond, func(ctx context.Context) { l.mutate(ctx, i); i++ })
	every(100*time.Millisecond, func(ctx context.Context) {
		_, _ = l.cs.CoreV1().Nodes().Get(ctx, l.nodes[rand.IntN(len(l.nodes))], metav1.GetOptions{})
	})
	every(500*time.Millisecond, func(ctx context.Context) {
		_, _ = l.cs.CoreV1().Pods(namespaces[rand.IntN(len(namespaces))]).List(ctx, metav1.ListOptions{})
	})
	cluster := 5 * time.Second
	if l.quick {
		cluster = 2 * time.Second
	}
	every(cluster, func(ctx context.Context) { _, _ = l.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{}) })
	wg.Wait()
}

// mutate creates ConfigMap cm-i, or patches an acknowledged one (odd i).
func (l *steadyLoad) mutate(ctx context.Context, i int) {
	cms := l.cs.CoreV1().ConfigMaps(l.ns)
	l.mu.Lock()
	n := len(l.acked)
	l.mu.Unlock()
	if i%2 == 1 && n > 0 {
		l.mu.Lock()
		name := l.acked[rand.IntN(n)]
		l.mu.Unlock()
		_, _ = cms.Patch(ctx, name, types.MergePatchType, fmt.Appendf(nil, `{"data":{"i":"%d"}}`, i), metav1.PatchOptions{})
		_, _ = cms.Get(ctx, name, metav1.GetOptions{})
		return
	}
	name := fmt.Sprintf("cm-%d", i)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": "0"}}, metav1.CreateOptions{}); err == nil {
		l.mu.Lock()
		l.acked = append(l.acked, name)
		l.mu.Unlock()
	}
}

// lost counts acknowledged creates missing from a list read through cs.
func (l *steadyLoad) lost(ctx context.Context, cs *kubernetes.Clientset) (lost, acked int, err error) {
	list, err := cs.CoreV1().ConfigMaps(l.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	have := map[string]bool{}
	for _, cm := range list.Items {
		have[cm.Name] = true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.acked {
		if !have[n] {
			lost++
		}
	}
	return lost, len(l.acked), nil
}

// createMarkers creates a selector-less Service and an EndpointSlice named name, which
// every node's kube-proxy watches must deliver.
func createMarkers(ctx context.Context, cs *kubernetes.Clientset, ns, name string) error {
	if err := retry(ctx, time.Minute, func() error {
		_, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	port, proto := int32(80), corev1.ProtocolTCP
	return retry(ctx, time.Minute, func() error {
		_, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Port: &port, Protocol: &proto}},
		}, metav1.CreateOptions{})
		return err
	})
}
