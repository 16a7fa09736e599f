//lint:file-ignore SA1019 services/proxy reads core/v1 Endpoints, as kube-apiserver 1.33 does

package server_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/hacp/hacp/internal/testenv"
	"github.com/hacp/hacp/pkg/apiserver/server"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestProxyTargetsRefused: whoever may write pods/status, nodes/status or Endpoints cannot
// point the proxy subresources at the apiserver's own host. pods/proxy to a pod whose IP is
// unspecified, loopback or link-local, and nodes/proxy to a node whose address is, answer
// upstream's 400 "address not allowed" without connecting anywhere; Endpoints with such an
// address are refused on write (422, upstream's cause), so services/proxy cannot reach them.
// pods/log still reaches a kubelet on a loopback address, as upstream's does.
func TestProxyTargetsRefused(t *testing.T) {
	e := newProxyEnv(t, func(c *server.Config) { c.ProxyAllowLoopback = false })
	// What the refused requests would reach: a port on this host's loopback (etcd's, say).
	trap := testenv.NewSilentListener(t)
	port := strconv.Itoa(trap.Addr().(*net.TCPAddr).Port)

	for i, ip := range []string{"0.0.0.0", "127.0.0.1", "127.0.0.2", "::1", "::", "169.254.169.254", "fe80::1", "224.0.0.1"} {
		name := "target-" + strconv.Itoa(i)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "c", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{ContainerPort: int32(trap.Addr().(*net.TCPAddr).Port)}}}}}}
		pod, err := e.cs.CoreV1().Pods("default").Create(e.ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Status.PodIP, pod.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		if _, err := e.cs.CoreV1().Pods("default").UpdateStatus(e.ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("pod IP %s: upstream stores it, hacp: %v", ip, err)
		}
		for _, path := range []string{
			"/api/v1/namespaces/default/pods/" + name + "/proxy/", // the container's port
			"/api/v1/namespaces/default/pods/" + name + ":" + port + "/proxy/x",
			"/api/v1/namespaces/default/pods/https:" + name + ":" + port + "/proxy/",
		} {
			wantRefused(t, e, path, "address not allowed")
		}
	}

	// n1's InternalIP, preferred, is 127.0.0.1.
	before := e.kubelet.last()
	wantRefused(t, e, "/api/v1/nodes/n1/proxy/healthz", "address not allowed")
	wantRefused(t, e, "/api/v1/nodes/http:n1:"+port+"/proxy/", "address not allowed")
	if got := e.kubelet.last(); got != before {
		t.Fatalf("nodes/proxy reached the kubelet: %q", got)
	}
	if b, err := e.cs.CoreV1().Pods("default").GetLogs("p", &corev1.PodLogOptions{}).DoRaw(e.ctx); err != nil || string(b) != "log of /containerLogs/default/p/c\n" {
		t.Fatalf("pods/log through a kubelet on 127.0.0.1: %q %v", b, err)
	}

	for _, ip := range []string{"127.0.0.1", "0.0.0.0", "169.254.169.254"} {
		eps := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: ip, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "target-1"}}},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: int32(trap.Addr().(*net.TCPAddr).Port)}},
		}}}
		_, err := e.cs.CoreV1().Endpoints("default").Create(e.ctx, eps, metav1.CreateOptions{})
		st, ok := err.(apierrors.APIStatus)
		if !apierrors.IsInvalid(err) || !ok || len(st.Status().Details.Causes) == 0 ||
			st.Status().Details.Causes[0].Field != "subsets[0].addresses[0].ip" {
			t.Fatalf("Endpoints at %s: %v, want 422 on subsets[0].addresses[0].ip", ip, err)
		}
	}
	if n := trap.Accepted(); n != 0 {
		t.Fatalf("the loopback port was connected to %d times", n)
	}
}

// wantRefused asserts that GET path answers 400 BadRequest with msg as its Status message.
func wantRefused(t *testing.T, e *proxyEnv, path, msg string) {
	t.Helper()
	resp, body := e.http.do(e.http.admin, "GET", path, "", nil, nil)
	st := statusOf(t, body)
	if resp.StatusCode != 400 || st.Code != 400 || st.Reason != metav1.StatusReasonBadRequest || st.Message != msg {
		t.Errorf("GET %s: %d %s, want 400 BadRequest %q", path, resp.StatusCode, body, msg)
	}
}
