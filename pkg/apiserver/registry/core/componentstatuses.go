package core

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var componentStatusNames = registry.Names{Version: "v1", Kind: "ComponentStatus", ListKind: "ComponentStatusList", Plural: "componentstatuses",
	Singular: "componentstatus", ShortNames: []string{"cs"}}

// componentProbes are the components upstream's componentstatuses report besides etcd: the
// scheduler's and controller-manager's secure /healthz on this host, as kube-apiserver 1.33
// probes them.
var componentProbes = map[string]string{
	"scheduler":          "https://127.0.0.1:10259/healthz",
	"controller-manager": "https://127.0.0.1:10257/healthz",
}

// ComponentStatusStore serves componentstatuses (get and list; deprecated upstream since
// 1.19 but still served): etcd-N for each etcd endpoint of this apiserver, checked with an
// etcd Status call, and the scheduler and controller-manager probed on this host.
type ComponentStatusStore struct {
	client *clientv3.Client
	// probes maps component names to health URLs.
	probes map[string]string
}

func (c *ComponentStatusStore) New() runtime.Object     { return &corev1.ComponentStatus{} }
func (c *ComponentStatusStore) NewList() runtime.Object { return &corev1.ComponentStatusList{} }
func (c *ComponentStatusStore) Kind() schema.GroupVersionKind {
	return componentStatusNames.GVK()
}

// components returns the name and check of every component, in upstream's order.
func (c *ComponentStatusStore) components() ([]string, map[string]func(context.Context) (bool, string, string)) {
	checks := map[string]func(context.Context) (bool, string, string){}
	var names []string
	for name, url := range c.probes {
		names = append(names, name)
		checks[name] = func(ctx context.Context) (bool, string, string) { return probeHealthz(ctx, url) }
	}
	sort.Strings(names)
	if c.client != nil {
		for i, ep := range c.client.Endpoints() {
			name := fmt.Sprintf("etcd-%d", i)
			names = append(names, name)
			checks[name] = func(ctx context.Context) (bool, string, string) {
				if _, err := c.client.Status(ctx, ep); err != nil {
					return false, "", err.Error()
				}
				return true, `{"health":"true","reason":""}`, ""
			}
		}
	}
	return names, checks
}

func (c *ComponentStatusStore) status(ctx context.Context, name string, check func(context.Context) (bool, string, string)) *corev1.ComponentStatus {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ok, msg, errMsg := check(ctx)
	cond := corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: corev1.ConditionTrue, Message: msg}
	if !ok {
		cond = corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: corev1.ConditionFalse, Error: errMsg}
	}
	cs := &corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: name}, Conditions: []corev1.ComponentCondition{cond}}
	cs.SetGroupVersionKind(c.Kind())
	return cs
}

func (c *ComponentStatusStore) Get(ctx context.Context, _, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	_, checks := c.components()
	check, ok := checks[name]
	if !ok {
		return nil, apierrors.NewNotFound(componentStatusNames.GroupResource(), name)
	}
	return c.status(ctx, name, check), nil
}

func (c *ComponentStatusStore) List(ctx context.Context, _ string, _ *metav1.ListOptions) (runtime.Object, error) {
	names, checks := c.components()
	list := &corev1.ComponentStatusList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ComponentStatusList"))
	out := make([]corev1.ComponentStatus, len(names))
	done := make(chan struct{}, len(names))
	for i, name := range names {
		go func() {
			out[i] = *c.status(ctx, name, checks[name])
			done <- struct{}{}
		}()
	}
	for range names {
		<-done
	}
	list.Items = out
	return list, nil
}

// probeHealthz GETs a component's /healthz, without verifying its serving certificate, as
// upstream does for these loopback probes.
func probeHealthz(ctx context.Context, url string) (bool, string, string) {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // upstream's loopback probe
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, "", err.Error()
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, "", err.Error()
	}
	defer resp.Body.Close()
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	body := string(buf[:n])
	if resp.StatusCode != http.StatusOK {
		return false, "", fmt.Sprintf("unhealthy: %s", body)
	}
	return true, body, ""
}
