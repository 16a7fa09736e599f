package controlplane_test

//lint:file-ignore SA1019 core/v1 Endpoints is deprecated upstream but still served

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// causes renders a 422's causes as "field: message", in order.
func causes(t *testing.T, err error) []string {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want 422 Invalid, got %v", err)
	}
	var out []string
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		out = append(out, c.Field+": "+c.Message)
	}
	return out
}

const (
	msgLoopback    = `may not be in the loopback range (127.0.0.0/8, ::1/128)`
	msgLinkLocal   = `may not be in the link-local range (169.254.0.0/16, fe80::/10)`
	msgLLMulticast = `may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)`
)

// TestEndpointsAddressIPs: an Endpoints address that is unspecified, loopback or link-local
// is refused with upstream's field paths and messages (ValidateEndpointIP), in addresses and
// notReadyAddresses alike, on create and on update; a global unicast address is stored.
func TestEndpointsAddressIPs(t *testing.T) {
	r := newRegistry(t)
	eps := store(r, "", "endpoints")
	endpoints := func(name string, ready, notReady string) *corev1.Endpoints {
		ss := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Port: 80}}}
		if ready != "" {
			ss.Addresses = []corev1.EndpointAddress{{IP: ready}}
		}
		if notReady != "" {
			ss.NotReadyAddresses = []corev1.EndpointAddress{{IP: notReady}}
		}
		return &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name}, Subsets: []corev1.EndpointSubset{ss}}
	}
	const ip = "subsets[0].addresses[0].ip"
	for i, tc := range []struct {
		ready, notReady string
		want            []string
	}{
		{"127.0.0.1", "", []string{ip + `: Invalid value: "127.0.0.1": ` + msgLoopback}},
		{"127.8.9.10", "", []string{ip + `: Invalid value: "127.8.9.10": ` + msgLoopback}},
		{"::1", "", []string{ip + `: Invalid value: "::1": ` + msgLoopback}},
		{"0.0.0.0", "", []string{ip + `: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)`}},
		{"::", "", []string{ip + `: Invalid value: "::": may not be unspecified (::)`}},
		{"169.254.169.254", "", []string{ip + `: Invalid value: "169.254.169.254": ` + msgLinkLocal}},
		{"fe80::1", "", []string{ip + `: Invalid value: "fe80::1": ` + msgLinkLocal}},
		{"224.0.0.251", "", []string{ip + `: Invalid value: "224.0.0.251": ` + msgLLMulticast}},
		{"10.77.0.5", "127.0.0.1", []string{`subsets[0].notReadyAddresses[0].ip: Invalid value: "127.0.0.1": ` + msgLoopback}},
		{"not-an-ip", "", []string{ip + `: Invalid value: "not-an-ip": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
			ip + `: Invalid value: "not-an-ip": must be a valid IP address`}},
		{"", "", []string{`subsets[0]: Required value: must specify ` + "`addresses` or `notReadyAddresses`"}},
	} {
		t.Run(fmt.Sprintf("%s,%s", tc.ready, tc.notReady), func(t *testing.T) {
			_, err := eps.Create(context.Background(), "default", "", endpoints(fmt.Sprint("e", i), tc.ready, tc.notReady), &metav1.CreateOptions{})
			if got := causes(t, err); !slices.Equal(got, tc.want) {
				t.Fatalf("causes %q, want %q", got, tc.want)
			}
		})
	}
	good := create(t, eps, "default", endpoints("web", "10.77.0.5", "2001:db8::5")).(*corev1.Endpoints)
	// Upstream's whole message, as a client sees it.
	bad := good.DeepCopy()
	bad.Subsets[0].Addresses[0].IP = "127.0.0.1"
	_, _, err := eps.Update(context.Background(), "default", "web", put(bad), &metav1.UpdateOptions{})
	want := `Endpoints "web" is invalid: subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": ` + msgLoopback
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Fatalf("update to a loopback address: %v, want %q", err, want)
	}
	// Several ports: each needs a name, as upstream.
	named := good.DeepCopy()
	named.Subsets[0].Ports = append(named.Subsets[0].Ports, corev1.EndpointPort{Name: "b", Port: 81})
	_, _, err = eps.Update(context.Background(), "default", "web", put(named), &metav1.UpdateOptions{})
	if got := causes(t, err); !slices.Equal(got, []string{"subsets[0].ports[0].name: Required value"}) {
		t.Fatalf("two ports, one unnamed: %q", got)
	}
}

// TestEndpointSliceAddressIPs: an IPv4 or IPv6 EndpointSlice refuses the same addresses as
// Endpoints, and the wrong family with upstream's path (the list's, without the index).
func TestEndpointSliceAddressIPs(t *testing.T) {
	r := newRegistry(t)
	slices_ := store(r, "discovery.k8s.io", "endpointslices")
	for i, tc := range []struct {
		family discoveryv1.AddressType
		addr   string
		want   []string // nil: stored
	}{
		{discoveryv1.AddressTypeIPv4, "10.77.0.5", nil},
		{discoveryv1.AddressTypeIPv6, "2001:db8::5", nil},
		{discoveryv1.AddressTypeIPv4, "127.0.0.1", []string{`endpoints[0].addresses[0]: Invalid value: "127.0.0.1": ` + msgLoopback}},
		{discoveryv1.AddressTypeIPv4, "0.0.0.0", []string{`endpoints[0].addresses[0]: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)`}},
		{discoveryv1.AddressTypeIPv4, "169.254.1.1", []string{`endpoints[0].addresses[0]: Invalid value: "169.254.1.1": ` + msgLinkLocal}},
		{discoveryv1.AddressTypeIPv6, "::1", []string{`endpoints[0].addresses[0]: Invalid value: "::1": ` + msgLoopback}},
		{discoveryv1.AddressTypeIPv6, "::", []string{`endpoints[0].addresses[0]: Invalid value: "::": may not be unspecified (::)`}},
		{discoveryv1.AddressTypeIPv4, "fe80::1", []string{`endpoints[0].addresses: Invalid value: "fe80::1": must be an IPv4 address`,
			`endpoints[0].addresses[0]: Invalid value: "fe80::1": ` + msgLinkLocal}},
		{discoveryv1.AddressTypeIPv6, "10.77.0.5", []string{`endpoints[0].addresses: Invalid value: "10.77.0.5": must be an IPv6 address`}},
		{discoveryv1.AddressTypeIPv6, "2001:DB8::5", []string{`endpoints[0].addresses[0]: Invalid value: "2001:DB8::5": must be in canonical form ("2001:db8::5")`}},
		{discoveryv1.AddressTypeIPv4, "10.77.0", []string{`endpoints[0].addresses[0]: Invalid value: "10.77.0": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`}},
	} {
		t.Run(string(tc.family)+","+tc.addr, func(t *testing.T) {
			es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("s", i)}, AddressType: tc.family,
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{tc.addr}}}}
			_, err := slices_.Create(context.Background(), "default", "", es, &metav1.CreateOptions{})
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if got := causes(t, err); !slices.Equal(got, tc.want) {
				t.Fatalf("causes %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPodStatusIPs: a pod status write's podIPs and hostIPs are checked as upstream's
// ValidatePodStatusUpdate does (valid IPs, one per family, hostIPs[0] = hostIP), a loopback
// pod IP included, which upstream stores too (pods/proxy refuses it); podIP wins over a
// podIPs[0] that differs, as upstream's conversion makes it.
func TestPodStatusIPs(t *testing.T) {
	r := newRegistry(t)
	pods := store(r, "", "pods")
	status := r.Resource(schema.GroupResource{Resource: "pods"}).Subresources["status"].(registry.Updater)
	create(t, pods, "default", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}})
	setStatus := func(podIP string, podIPs []string, hostIP string, hostIPs []string) (*corev1.Pod, error) {
		out, _, err := status.Update(context.Background(), "default", "p", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			p := cur.(*corev1.Pod).DeepCopy()
			p.Status.PodIP, p.Status.PodIPs, p.Status.HostIP, p.Status.HostIPs = podIP, nil, hostIP, nil
			for _, ip := range podIPs {
				p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
			}
			for _, ip := range hostIPs {
				p.Status.HostIPs = append(p.Status.HostIPs, corev1.HostIP{IP: ip})
			}
			return p, nil
		}, &metav1.UpdateOptions{})
		if err != nil {
			return nil, err
		}
		return out.(*corev1.Pod), nil
	}
	for _, tc := range []struct {
		name            string
		podIP           string
		podIPs          []string
		hostIP          string
		hostIPs         []string
		want            []string // causes; nil: stored
		wantPodIP       string
		wantPodIPsFirst string
	}{
		{"dual stack", "10.77.0.5", []string{"10.77.0.5", "2001:db8::5"}, "10.77.0.1", []string{"10.77.0.1"}, nil, "10.77.0.5", "10.77.0.5"},
		{"loopback is stored", "127.0.0.1", []string{"127.0.0.1"}, "", nil, nil, "127.0.0.1", "127.0.0.1"},
		{"podIP wins", "10.77.0.6", []string{"127.0.0.1"}, "", nil, nil, "10.77.0.6", "10.77.0.6"},
		{"podIPs only", "", []string{"10.77.0.7"}, "", nil, nil, "10.77.0.7", "10.77.0.7"},
		{"podIP only", "10.77.0.8", nil, "", nil, nil, "10.77.0.8", "10.77.0.8"},
		{"not an ip", "not-an-ip", nil, "", nil, []string{`status.podIPs[0]: Invalid value: "not-an-ip": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`}, "", ""},
		{"two of a family", "10.77.0.5", []string{"10.77.0.5", "10.77.0.6"}, "", nil,
			[]string{`status.podIPs: Invalid value: [{"IP":"10.77.0.5"},{"IP":"10.77.0.6"}]: may specify no more than one IP for each IP family`}, "", ""},
		{"hostIPs[0] is not hostIP", "", nil, "10.77.0.1", []string{"10.77.0.2"},
			[]string{"status.hostIPs[0].ip: Invalid value: \"10.77.0.2\": must be equal to `hostIP`"}, "", ""},
		{"bad host ip", "", nil, "x", []string{"x"},
			[]string{`status.hostIPs[0]: Invalid value: "x": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := setStatus(tc.podIP, tc.podIPs, tc.hostIP, tc.hostIPs)
			if tc.want != nil {
				if got := causes(t, err); !slices.Equal(got, tc.want) {
					t.Fatalf("causes %q, want %q", got, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Status.PodIP != tc.wantPodIP || len(p.Status.PodIPs) == 0 || p.Status.PodIPs[0].IP != tc.wantPodIPsFirst {
				t.Fatalf("stored podIP %q podIPs %v, want %s and podIPs[0] %s", p.Status.PodIP, p.Status.PodIPs, tc.wantPodIP, tc.wantPodIPsFirst)
			}
		})
	}
}
