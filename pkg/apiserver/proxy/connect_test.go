package proxy

import (
	"context"
	"net/url"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestNodeAddress(t *testing.T) {
	node := func(labels map[string]string, addrs ...corev1.NodeAddress) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Status: corev1.NodeStatus{Addresses: addrs}}
	}
	internal := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}
	host := corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n1"}
	external := corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "1.2.3.4"}
	for _, tc := range []struct {
		name      string
		node      *corev1.Node
		preferred []corev1.NodeAddressType
		want      string
		err       bool
	}{
		{"default order picks Hostname", node(nil, internal, host), DefaultPreferredAddressTypes, "n1", false},
		{"InternalIP first", node(nil, host, internal), []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeHostName}, "10.0.0.1", false},
		{"falls through to a later type", node(nil, external), DefaultPreferredAddressTypes, "1.2.3.4", false},
		{"hostname label stands in", node(map[string]string{corev1.LabelHostname: "from-label"}, internal), DefaultPreferredAddressTypes, "from-label", false},
		{"none of the types", node(nil, external), []corev1.NodeAddressType{corev1.NodeInternalIP}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NodeAddress(tc.node, tc.preferred)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("NodeAddress = %q, %v; want %q (error %v)", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestSplitSchemeNamePort(t *testing.T) {
	for _, tc := range []struct {
		id                 string
		scheme, name, port string
		ok                 bool
	}{
		{"web", "", "web", "", true},
		{"web:http", "", "web", "http", true},
		{"https:web:443", "https", "web", "443", true},
		{"ftp:web:21", "", "", "", false},
		{":80", "", "", "", false},
		{"a:b:c:d", "", "", "", false},
	} {
		scheme, name, port, ok := splitSchemeNamePort(tc.id)
		if scheme != tc.scheme || name != tc.name || port != tc.port || ok != tc.ok {
			t.Errorf("%q: %q %q %q %v", tc.id, scheme, name, port, ok)
		}
	}
}

func TestParseLogOptions(t *testing.T) {
	for _, tc := range []struct {
		query   string
		kubelet string // the kubelet's query, when valid
		invalid bool   // 422
		bad     bool   // 400
	}{
		{"", "", false, false},
		{"follow=true&previous=1&timestamps=true&tailLines=10&limitBytes=5&sinceSeconds=3", "follow=true&limitBytes=5&previous=true&sinceSeconds=3&tailLines=10&timestamps=true", false, false},
		{"sinceTime=2026-01-02T03:04:05Z", "sinceTime=2026-01-02T03%3A04%3A05Z", false, false},
		{"follow=false&tailLines=0", "tailLines=0", false, false},
		{"tailLines=-1", "", true, false},
		{"limitBytes=0", "", true, false},
		{"sinceSeconds=0", "", true, false},
		{"sinceSeconds=5&sinceTime=2026-01-02T03:04:05Z", "", true, false},
		{"tailLines=ten", "", false, true},
		{"follow=yes", "", false, true},
		{"sinceTime=yesterday", "", false, true},
	} {
		q, _ := url.ParseQuery(tc.query)
		o, err := parseLogOptions("p", q)
		switch {
		case tc.invalid:
			if !apierrors.IsInvalid(err) {
				t.Errorf("%q: %v, want 422", tc.query, err)
			}
		case tc.bad:
			if !apierrors.IsBadRequest(err) {
				t.Errorf("%q: %v, want 400", tc.query, err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.query, err)
		case o.kubeletQuery() != tc.kubelet:
			t.Errorf("%q: kubelet query %q, want %q", tc.query, o.kubeletQuery(), tc.kubelet)
		}
	}
}

func TestPodContainer(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{
		InitContainers:      []corev1.Container{{Name: "init"}},
		Containers:          []corev1.Container{{Name: "a"}, {Name: "b"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}},
	}}
	for _, c := range []string{"a", "b", "init", "debug"} {
		if got, err := podContainer(pod, c); err != nil || got != c {
			t.Errorf("container %q: %q %v", c, got, err)
		}
	}
	_, err := podContainer(pod, "")
	want := "a container name must be specified for pod p, choose one of: [a b] or one of the init containers: [init] or one of the ephemeral containers: [debug]"
	if !apierrors.IsBadRequest(err) || err.Error() != want {
		t.Errorf("no container named: %v", err)
	}
	if _, err := podContainer(pod, "z"); !apierrors.IsBadRequest(err) || err.Error() != "container z is not valid for pod p" {
		t.Errorf("unknown container: %v", err)
	}
	one := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "only"}}}}
	if got, err := podContainer(one, ""); err != nil || got != "only" {
		t.Errorf("the only container: %q %v", got, err)
	}
}

func TestIsProxyableIP(t *testing.T) {
	for _, tc := range []struct {
		ip       string
		ok       bool // upstream's IsProxyableIP
		loopback bool // with Config.AllowLoopback
	}{
		{"10.77.0.5", true, true},
		{"192.0.2.10", true, true},
		{"2001:db8::5", true, true},
		{"fd00::5", true, true},
		{"010.077.000.005", true, true}, // leading zeros: parsed as upstream's ParseIPSloppy does
		{"127.0.0.1", false, true},
		{"127.1.2.3", false, true},
		{"::1", false, true},
		{"::ffff:127.0.0.1", false, true},
		{"169.254.169.254", false, true},
		{"fe80::1", false, true},
		{"0.0.0.0", false, false},
		{"::", false, false},
		{"224.0.0.1", false, false},
		{"ff02::1", false, false},
		{"239.1.2.3", false, false},
		{"255.255.255.255", false, false},
		{"", false, false},
		{"localhost", false, false},
		{"10.77.0.5:80", false, false},
	} {
		t.Run(tc.ip, func(t *testing.T) {
			err := IsProxyableIP(tc.ip)
			if (err == nil) != tc.ok || (err != nil && err != ErrAddressNotAllowed) {
				t.Errorf("IsProxyableIP(%q) = %v, want allowed %v", tc.ip, err, tc.ok)
			}
			c := &Connector{cfg: Config{AllowLoopback: true}}
			if err := c.proxyable(tc.ip); (err == nil) != tc.loopback {
				t.Errorf("with AllowLoopback: %q: %v, want allowed %v", tc.ip, err, tc.loopback)
			}
		})
	}
}

func TestPodProxyTargets(t *testing.T) {
	pods := map[string]*corev1.Pod{}
	add := func(name, podIP string, podIPs ...string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Status: corev1.PodStatus{PodIP: podIP}}
		for _, ip := range podIPs {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
		}
		pods[name] = p
	}
	add("global", "10.77.0.5", "10.77.0.5")
	add("only-podips", "", "10.77.0.6")
	add("podip-wins", "10.77.0.7", "127.0.0.1") // upstream's conversion: status.podIP is authoritative
	add("loopback", "127.0.0.1", "127.0.0.1")
	add("loopback-podip", "127.0.0.1", "10.77.0.8")
	add("unspecified", "0.0.0.0")
	add("unspecified6", "::")
	add("link-local", "169.254.169.254")
	add("none", "")
	pods["port"] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "port"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "a"}, {Name: "b", Ports: []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 9090}}}}},
		Status: corev1.PodStatus{PodIP: "10.77.0.9"}}
	objects := ObjectsFunc(func(_ context.Context, resource, _, name string) (runtime.Object, error) {
		if p, ok := pods[name]; ok && resource == "pods" {
			return p, nil
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
	})
	c := New(Config{}, objects)
	defer c.Close()
	for _, tc := range []struct {
		id   string
		want string // the backend's URL, or "" for upstream's refusal
	}{
		{"global", "http://10.77.0.5/x"},
		{"https:global:443", "https://10.77.0.5:443/x"},
		{"only-podips:81", "http://10.77.0.6:81/x"},
		{"podip-wins", "http://10.77.0.7/x"},
		{"port", "http://10.77.0.9:8080/x"},
		{"port:7070", "http://10.77.0.9:7070/x"},
		{"loopback", ""},
		{"loopback:2379", ""},
		{"loopback-podip", ""},
		{"unspecified:2379", ""},
		{"unspecified6:2379", ""},
		{"link-local:80", ""},
		{"none", ""},
	} {
		t.Run(tc.id, func(t *testing.T) {
			h, err := c.podProxy(context.Background(), "ns", tc.id, "/x")
			if tc.want == "" {
				if !apierrors.IsBadRequest(err) || err.Error() != "address not allowed" {
					t.Fatalf("podProxy(%q) = %v, want 400 address not allowed", tc.id, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := h.(*Handler).Location.String(); got != tc.want {
				t.Fatalf("podProxy(%q) goes to %s, want %s", tc.id, got, tc.want)
			}
		})
	}
}
