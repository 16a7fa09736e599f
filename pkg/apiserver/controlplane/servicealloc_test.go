package controlplane_test

import (
	"context"
	"fmt"
	"math/big"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/registry/core"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// smallRanges hold 14 ClusterIPs (10.0.0.1-14) and 10 NodePorts (30000-30009).
var smallRanges = core.ServiceRanges{ClusterIPRange: "10.0.0.0/28", NodePortRange: "30000-30009"}

func startRegistry(t *testing.T, c *clientv3.Client, ranges core.ServiceRanges) *controlplane.Registry {
	t.Helper()
	r := controlplane.New(c, controlplane.Config{ServiceRanges: ranges, ServiceRepairInterval: -1})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); r.Wait() })
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

func service(name string, typ corev1.ServiceType, ports ...int32) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{Type: typ}}
	if len(ports) == 0 {
		ports = []int32{80}
	}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: fmt.Sprintf("p%d", p), Port: p})
	}
	return svc
}

func createService(t *testing.T, s *registry.Store, svc *corev1.Service) *corev1.Service {
	t.Helper()
	obj, err := s.Create(context.Background(), "default", "", svc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service %s: %v", svc.Name, err)
	}
	return obj.(*corev1.Service)
}

// wantInvalid checks err is a 422 with a cause on field whose message contains msg.
func wantInvalid(t *testing.T, err error, field, msg string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got %v, want 422 Invalid on %s", err, field)
	}
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		if c.Field == field && strings.Contains(c.Message, msg) {
			return
		}
	}
	t.Fatalf("got %v, want a cause on %s saying %q", err, field, msg)
}

func reservedIPs(t *testing.T, c *clientv3.Client) map[string]bool {
	t.Helper()
	resp, err := c.Get(context.Background(), "/registry/ipaddresses/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), "/registry/ipaddresses/")] = true
	}
	return out
}

func reservedPorts(t *testing.T, r *controlplane.Registry, c *clientv3.Client) map[int]bool {
	t.Helper()
	resp, err := c.Get(context.Background(), "/registry/services/nodeports")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]bool{}
	if len(resp.Kvs) == 0 {
		return out
	}
	ra := &corev1.RangeAllocation{}
	if err := controlplane.DecodeRangeAllocation(resp.Kvs[0].Value, ra); err != nil {
		t.Fatal(err)
	}
	if ra.Range != "30000-30009" {
		t.Fatalf("RangeAllocation range %q, want 30000-30009", ra.Range)
	}
	bits := new(big.Int).SetBytes(ra.Data)
	for off := range 10 {
		if bits.Bit(off) == 1 {
			out[30000+off] = true
		}
	}
	return out
}

func TestServiceClusterIPs(t *testing.T) {
	c := etcdtest.Client(t)
	r := startRegistry(t, c, smallRanges)
	svcs := store(r, "", "services")
	ctx := context.Background()
	cidr := netip.MustParsePrefix("10.0.0.0/28")

	seen := map[string]string{}
	for i := range 14 {
		svc := createService(t, svcs, service(fmt.Sprintf("s%d", i), ""))
		ip := svc.Spec.ClusterIP
		addr, err := netip.ParseAddr(ip)
		if err != nil || !cidr.Contains(addr) || ip == "10.0.0.0" || ip == "10.0.0.15" {
			t.Fatalf("service %s got ClusterIP %q: not a usable address of %s", svc.Name, ip, cidr)
		}
		if other, dup := seen[ip]; dup {
			t.Fatalf("services %s and %s both got %s", other, svc.Name, ip)
		}
		seen[ip] = svc.Name
		if len(svc.Spec.ClusterIPs) != 1 || svc.Spec.ClusterIPs[0] != ip {
			t.Fatalf("clusterIPs %v, want [%s]", svc.Spec.ClusterIPs, ip)
		}
	}
	if got := reservedIPs(t, c); len(got) != 14 {
		t.Fatalf("%d IPAddress objects for 14 services: %v", len(got), got)
	}
	_, err := svcs.Create(ctx, "default", "", service("full", ""), &metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "range is full") {
		t.Fatalf("15th service in a /28: %v, want 500 range is full", err)
	}
	// Headless and ExternalName services take no address.
	headless := service("headless", "")
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	if got := createService(t, svcs, headless); got.Spec.ClusterIP != "None" || len(got.Spec.ClusterIPs) != 1 || got.Spec.ClusterIPs[0] != "None" {
		t.Fatalf("headless service: clusterIP %q clusterIPs %v", got.Spec.ClusterIP, got.Spec.ClusterIPs)
	}

	// A deleted Service's address is free again, and taken by the next one.
	obj, err := svcs.Get(ctx, "default", "s3", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	freed := obj.(*corev1.Service).Spec.ClusterIP
	if _, _, err := svcs.Delete(ctx, "default", "s3", &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if reservedIPs(t, c)[freed] {
		t.Fatalf("%s still reserved after its service was deleted", freed)
	}
	if got := createService(t, svcs, service("again", "")); got.Spec.ClusterIP != freed {
		t.Fatalf("the only free address is %s, the new service got %s", freed, got.Spec.ClusterIP)
	}

	// Asking for an address: taken, out of range, not an address.
	if _, _, err := svcs.Delete(ctx, "default", "s5", &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	taken := service("taken", "")
	taken.Spec.ClusterIP = createdIP(t, svcs, "s6")
	_, err = svcs.Create(ctx, "default", "", taken, &metav1.CreateOptions{})
	wantInvalid(t, err, "spec.clusterIPs[0]", "provided IP is already allocated")
	outside := service("outside", "")
	outside.Spec.ClusterIP = "10.0.1.1"
	_, err = svcs.Create(ctx, "default", "", outside, &metav1.CreateOptions{})
	wantInvalid(t, err, "spec.clusterIPs[0]", "The range of valid IPs is 10.0.0.0/28")

	// A dry run picks a free address and reserves nothing.
	before := reservedIPs(t, c)
	obj, err = svcs.Create(ctx, "default", "", service("dry", ""), &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	if ip := obj.(*corev1.Service).Spec.ClusterIP; ip == "" || before[ip] {
		t.Fatalf("dry-run service got %q, want a free address", ip)
	}
	if after := reservedIPs(t, c); len(after) != len(before) {
		t.Fatalf("a dry run reserved an address: %d before, %d after", len(before), len(after))
	}

	// An update that leaves the address out keeps it (kubectl replace of a manifest).
	put := service("s7", "")
	put.Spec.Ports[0].Port = 8080
	put.Spec.Ports[0].Name = "p8080"
	obj, _, err = svcs.Update(ctx, "default", "s7", func(context.Context, runtime.Object) (runtime.Object, error) { return put, nil }, &metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("PUT without clusterIP: %v", err)
	}
	if got := obj.(*corev1.Service).Spec.ClusterIP; got != seenIP(seen, "s7") {
		t.Fatalf("PUT without clusterIP changed it from %s to %s", seenIP(seen, "s7"), got)
	}
	// Turned into an ExternalName Service, it gives its address back.
	ext := obj.(*corev1.Service).DeepCopy()
	ext.Spec.Type, ext.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
	if _, _, err := svcs.Update(ctx, "default", "s7", func(context.Context, runtime.Object) (runtime.Object, error) { return ext, nil }, &metav1.UpdateOptions{}); err != nil {
		t.Fatalf("to ExternalName: %v", err)
	}
	if reservedIPs(t, c)[seenIP(seen, "s7")] {
		t.Fatalf("%s still reserved after s7 became ExternalName", seenIP(seen, "s7"))
	}
}

func seenIP(seen map[string]string, name string) string {
	for ip, n := range seen {
		if n == name {
			return ip
		}
	}
	return ""
}

func createdIP(t *testing.T, s *registry.Store, name string) string {
	t.Helper()
	obj, err := s.Get(context.Background(), "default", name, &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*corev1.Service).Spec.ClusterIP
}

// Two apiservers on one etcd hand out every address of a range at once, and none twice;
// a third, started afterwards (a restart), knows what is taken.
func TestServiceClusterIPsAcrossAPIServers(t *testing.T) {
	c := etcdtest.Client(t)
	stores := []*registry.Store{store(startRegistry(t, c, smallRanges), "", "services"), store(startRegistry(t, c, smallRanges), "", "services")}
	var wg sync.WaitGroup
	errs := make(chan error, 14)
	for i := range 14 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := stores[i%2].Create(context.Background(), "default", "", service(fmt.Sprintf("s%d", i), ""), &metav1.CreateOptions{})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	list, err := stores[0].List(context.Background(), "default", &metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, svc := range list.(*corev1.ServiceList).Items {
		if other, dup := seen[svc.Spec.ClusterIP]; dup {
			t.Fatalf("services %s and %s both got %s", other, svc.Name, svc.Spec.ClusterIP)
		}
		seen[svc.Spec.ClusterIP] = svc.Name
	}
	if len(seen) != 14 {
		t.Fatalf("%d services with distinct addresses, want 14", len(seen))
	}
	restarted := store(startRegistry(t, c, smallRanges), "", "services")
	_, err = restarted.Create(context.Background(), "default", "", service("late", ""), &metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) {
		t.Fatalf("a restarted apiserver gave out an address of a full range: %v", err)
	}
}

func TestServiceNodePorts(t *testing.T) {
	c := etcdtest.Client(t)
	r := startRegistry(t, c, smallRanges)
	svcs := store(r, "", "services")
	ctx := context.Background()

	np := createService(t, svcs, service("np", corev1.ServiceTypeNodePort, 80, 443))
	a, b := int(np.Spec.Ports[0].NodePort), int(np.Spec.Ports[1].NodePort)
	if a < 30000 || a > 30009 || b < 30000 || b > 30009 || a == b {
		t.Fatalf("node ports %d and %d: want two distinct ports in 30000-30009", a, b)
	}
	if np.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
		t.Fatalf("externalTrafficPolicy %q, want Cluster", np.Spec.ExternalTrafficPolicy)
	}
	if got := reservedPorts(t, r, c); len(got) != 2 || !got[a] || !got[b] {
		t.Fatalf("bitmap holds %v, want %d and %d", got, a, b)
	}

	clash := service("clash", corev1.ServiceTypeNodePort)
	clash.Spec.Ports[0].NodePort = int32(a)
	_, err := svcs.Create(ctx, "default", "", clash, &metav1.CreateOptions{})
	wantInvalid(t, err, "spec.ports[0].nodePort", "provided port is already allocated")
	clash.Spec.Ports[0].NodePort = 31000
	_, err = svcs.Create(ctx, "default", "", clash, &metav1.CreateOptions{})
	wantInvalid(t, err, "spec.ports[0].nodePort", "The range of valid ports is 30000-30009")
	if _, err := svcs.Get(ctx, "default", "clash", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a refused service was stored: %v", err)
	}
	if got := reservedIPs(t, c); len(got) != 1 {
		t.Fatalf("a refused service kept its ClusterIP: reserved %v", got)
	}

	// A load balancer with externalTrafficPolicy Local also gets a health check port.
	lb := service("lb", corev1.ServiceTypeLoadBalancer)
	lb.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	lb = createService(t, svcs, lb)
	if lb.Spec.HealthCheckNodePort == 0 || lb.Spec.Ports[0].NodePort == 0 || lb.Spec.HealthCheckNodePort == lb.Spec.Ports[0].NodePort {
		t.Fatalf("load balancer: nodePort %d healthCheckNodePort %d", lb.Spec.Ports[0].NodePort, lb.Spec.HealthCheckNodePort)
	}
	if got := reservedPorts(t, r, c); len(got) != 4 {
		t.Fatalf("bitmap holds %v, want 4 ports", got)
	}

	// A PUT without node ports keeps them; a change to ClusterIP gives them back.
	put := service("np", corev1.ServiceTypeNodePort, 80, 443)
	obj, _, err := svcs.Update(ctx, "default", "np", func(context.Context, runtime.Object) (runtime.Object, error) { return put, nil }, &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.(*corev1.Service); int(got.Spec.Ports[0].NodePort) != a || int(got.Spec.Ports[1].NodePort) != b {
		t.Fatalf("PUT without node ports changed them: %d %d, want %d %d", got.Spec.Ports[0].NodePort, got.Spec.Ports[1].NodePort, a, b)
	}
	toClusterIP := obj.(*corev1.Service).DeepCopy()
	toClusterIP.Spec.Type = corev1.ServiceTypeClusterIP
	obj, _, err = svcs.Update(ctx, "default", "np", func(context.Context, runtime.Object) (runtime.Object, error) { return toClusterIP, nil }, &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.(*corev1.Service); got.Spec.Ports[0].NodePort != 0 || got.Spec.ExternalTrafficPolicy != "" {
		t.Fatalf("ClusterIP service kept nodePort %d / externalTrafficPolicy %q", got.Spec.Ports[0].NodePort, got.Spec.ExternalTrafficPolicy)
	}
	if got := reservedPorts(t, r, c); got[a] || got[b] || len(got) != 2 {
		t.Fatalf("bitmap holds %v after np became ClusterIP, want only lb's two", got)
	}
	// Deleting the load balancer frees the rest.
	if _, _, err := svcs.Delete(ctx, "default", "lb", &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := reservedPorts(t, r, c); len(got) != 0 {
		t.Fatalf("bitmap holds %v with no NodePort service left", got)
	}
}

// A reservation left behind by an apiserver that died between reserving and storing (made
// here by deleting a Service's key behind the registry's back) is freed by the second repair
// pass that finds it, not the first; a Service whose reservation is missing gets it back.
func TestServiceAllocationRepair(t *testing.T) {
	c := etcdtest.Client(t)
	r := startRegistry(t, c, smallRanges)
	svcs := store(r, "", "services")
	ctx := context.Background()
	gone := createService(t, svcs, service("gone", corev1.ServiceTypeNodePort))
	kept := createService(t, svcs, service("kept", corev1.ServiceTypeNodePort))
	if _, err := c.Delete(ctx, "/registry/services/specs/default/gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, "/registry/ipaddresses/"+kept.Spec.ClusterIP); err != nil {
		t.Fatal(err)
	}
	if err := r.RepairServices(ctx); err != nil {
		t.Fatal(err)
	}
	ips := reservedIPs(t, c)
	if !ips[gone.Spec.ClusterIP] || !reservedPorts(t, r, c)[int(gone.Spec.Ports[0].NodePort)] {
		t.Fatal("the first repair pass after the leak freed it: a Service being created right then would lose its reservation")
	}
	if !ips[kept.Spec.ClusterIP] {
		t.Fatalf("repair did not reserve %s again for kept", kept.Spec.ClusterIP)
	}
	if err := r.RepairServices(ctx); err != nil {
		t.Fatal(err)
	}
	if reservedIPs(t, c)[gone.Spec.ClusterIP] {
		t.Fatalf("%s still reserved after two repair passes", gone.Spec.ClusterIP)
	}
	ports := reservedPorts(t, r, c)
	if ports[int(gone.Spec.Ports[0].NodePort)] || !ports[int(kept.Spec.Ports[0].NodePort)] {
		t.Fatalf("after two passes the bitmap holds %v: want kept's %d and not gone's %d", ports, kept.Spec.Ports[0].NodePort, gone.Spec.Ports[0].NodePort)
	}
}
