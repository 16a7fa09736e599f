//lint:file-ignore SA1019 the kubernetes Service's core/v1 Endpoints are still written by kube-apiserver 1.33

package controlplane_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubernetes Service lists every live apiserver, as upstream's lease endpoint reconciler
// keeps it: one that stops leaves at once, one that dies leaves when its entry's TTL runs out.
func TestKubernetesServiceEndpoints(t *testing.T) {
	srv := etcdtest.Start(t)
	client := func() *clientv3.Client {
		c, err := srv.Client()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	start := func(c *clientv3.Client, ip string) (stop func()) {
		r := controlplane.New(c, controlplane.Config{ServiceRanges: smallRanges, ServiceRepairInterval: -1})
		ctx, cancel := context.WithCancel(context.Background())
		if err := r.Start(ctx); err != nil {
			t.Fatal(err)
		}
		r.RunMasterEndpoint(ctx, controlplane.MasterEndpoint{IP: ip, Port: 6443, TTL: 3 * time.Second})
		stopped := false
		stop = func() {
			if !stopped {
				stopped = true
				cancel()
				r.Wait()
			}
		}
		t.Cleanup(stop)
		return stop
	}
	ca, cb, cc := client(), client(), client()
	t.Cleanup(func() { ca.Close(); cb.Close() })
	stopA := start(ca, "10.77.0.1")
	start(cb, "10.77.0.2")
	start(cc, "10.77.0.3")

	obs := store(startRegistry(t, ca, smallRanges), "", "services")
	eps := store(startRegistry(t, ca, smallRanges), "", "endpoints")
	epss := store(startRegistry(t, ca, smallRanges), "discovery.k8s.io", "endpointslices")
	ctx := context.Background()
	addresses := func() []string {
		obj, err := eps.Get(ctx, "default", "kubernetes", &metav1.GetOptions{})
		if err != nil {
			return nil
		}
		var out []string
		for _, s := range obj.(*corev1.Endpoints).Subsets {
			for _, a := range s.Addresses {
				out = append(out, a.IP)
			}
			if len(s.Ports) != 1 || s.Ports[0].Port != 6443 || s.Ports[0].Name != "https" {
				t.Fatalf("endpoints ports %v, want https 6443", s.Ports)
			}
		}
		// The EndpointSlice kube-proxy reads lists the same addresses, all ready.
		obj, err = epss.Get(ctx, "default", "kubernetes", &metav1.GetOptions{})
		if err != nil {
			return append(out, "no EndpointSlice")
		}
		sl := obj.(*discoveryv1.EndpointSlice)
		var inSlice []string
		for _, e := range sl.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				inSlice = append(inSlice, e.Addresses...)
			}
		}
		if !slices.Equal(inSlice, out) || sl.Labels[discoveryv1.LabelServiceName] != "kubernetes" || sl.AddressType != discoveryv1.AddressTypeIPv4 ||
			len(sl.Ports) != 1 || *sl.Ports[0].Port != 6443 || *sl.Ports[0].Name != "https" {
			return append(out, fmt.Sprintf("slice %v %v %v", inSlice, sl.Labels, sl.Ports))
		}
		return out
	}
	waitFor := func(what string, want []string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for got := addresses(); !slices.Equal(got, want); got = addresses() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: endpoints %v, want %v", what, got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("three apiservers", []string{"10.77.0.1", "10.77.0.2", "10.77.0.3"})

	obj, err := obs.Get(ctx, "default", "kubernetes", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc := obj.(*corev1.Service)
	if svc.Spec.ClusterIP != "10.0.0.1" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort.IntValue() != 6443 {
		t.Fatalf("kubernetes service: clusterIP %s ports %v, want 10.0.0.1 and 443->6443", svc.Spec.ClusterIP, svc.Spec.Ports)
	}

	// The default ServiceCIDR, Ready, as kube-apiserver's controller makes it.
	cidrs := store(startRegistry(t, ca, smallRanges), "networking.k8s.io", "servicecidrs")
	obj, err = cidrs.Get(ctx, "", "kubernetes", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc := obj.(*networkingv1.ServiceCIDR)
	if len(sc.Spec.CIDRs) != 1 || !strings.HasPrefix(sc.Spec.CIDRs[0], "10.0.0.0/") || !apimeta.IsStatusConditionTrue(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady) {
		t.Fatalf("default ServiceCIDR: %v %+v", sc.Spec.CIDRs, sc.Status.Conditions)
	}

	stopA()
	waitFor("after a graceful stop", []string{"10.77.0.2", "10.77.0.3"})
	// A crash: its etcd client goes away without revoking anything.
	cc.Close()
	waitFor("after a crash and the TTL", []string{"10.77.0.2"})
}
