package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Defaults of --service-cluster-ip-range (kubeadm's, which the kubeadm HA guide uses) and
// --service-node-port-range (kube-apiserver's).
const (
	DefaultServiceClusterIPRange = "10.96.0.0/12"
	DefaultServiceNodePortRange  = "30000-32767"
)

// Labels kube-apiserver 1.33 puts on the IPAddress objects its allocator creates.
const (
	labelIPFamily  = "ipaddress.kubernetes.io/ip-family"
	labelManagedBy = "ipaddress.kubernetes.io/managed-by"
	ipAllocatorID  = "ipallocator.k8s.io"
)

// ServiceAllocator hands out Service ClusterIPs and NodePorts so that no two Services get the
// same one, across every apiserver on one etcd and across restarts. It keeps them where
// kube-apiserver 1.33 does, so either can take over the other's etcd: one IPAddress object
// per ClusterIP (networking.k8s.io/v1, named by the address, parentRef the Service; etcd's
// create-if-absent makes the reservation atomic) and the NodePort bitmap in the
// RangeAllocation at /registry/services/nodeports (updated with compare-and-swap).
type ServiceAllocator struct {
	ips       storage.Interface // networking.k8s.io/v1 IPAddress
	ipRoot    string            // key root of IPAddress objects
	nodePorts storage.Interface // core/v1 RangeAllocation
	portsKey  string
	cidr      netip.Prefix
	ipSize    uint64 // usable addresses: offsets 1..ipSize
	portBase  int
	portSize  int
	log       *slog.Logger

	mu        sync.Mutex
	ipLeaks   map[string]types.UID // seen leaked by the last repair pass (by the reservation's uid)
	portLeaks map[int]bool
}

// ServiceRanges are the pools Services draw from.
type ServiceRanges struct {
	ClusterIPRange string // CIDR
	NodePortRange  string // "first-last"
}

// ParseServiceCIDR checks a --service-cluster-ip-range value.
func ParseServiceCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a CIDR", s)
	}
	if p != p.Masked() {
		return netip.Prefix{}, fmt.Errorf("%q has host bits set (did you mean %s?)", s, p.Masked())
	}
	if host := p.Addr().BitLen() - p.Bits(); host < 2 {
		return netip.Prefix{}, fmt.Errorf("%q is too small: it holds no usable address", s)
	}
	return p, nil
}

// ParseNodePortRange checks a --service-node-port-range value ("30000-32767", or one port).
func ParseNodePortRange(s string) (base, size int, err error) {
	lo, hi, found := strings.Cut(s, "-")
	if !found {
		hi = lo
	}
	first, err1 := strconv.Atoi(strings.TrimSpace(lo))
	last, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil || first < 1 || last > 65535 || first > last {
		return 0, 0, fmt.Errorf("%q is not a port range like 30000-32767", s)
	}
	return first, last - first + 1, nil
}

func NewServiceAllocator(ips, nodePorts storage.Interface, ipRoot, portsKey string, r ServiceRanges, log *slog.Logger) (*ServiceAllocator, error) {
	cidr, err := ParseServiceCIDR(r.ClusterIPRange)
	if err != nil {
		return nil, fmt.Errorf("service-cluster-ip-range: %w", err)
	}
	base, size, err := ParseNodePortRange(r.NodePortRange)
	if err != nil {
		return nil, fmt.Errorf("service-node-port-range: %w", err)
	}
	a := &ServiceAllocator{ips: ips, ipRoot: ipRoot, nodePorts: nodePorts, portsKey: portsKey, cidr: cidr,
		portBase: base, portSize: size, log: log}
	host := cidr.Addr().BitLen() - cidr.Bits()
	switch {
	case host >= 32:
		a.ipSize = 1<<32 - 1 // plenty; offsets stay in 32 bits
	case cidr.Addr().Is4():
		a.ipSize = 1<<host - 2 // neither the network nor the broadcast address
	default:
		a.ipSize = 1<<host - 1 // not the subnet-router anycast address
	}
	return a, nil
}

// addrAt is the address offset places after the range's network address.
func (a *ServiceAllocator) addrAt(offset uint64) netip.Addr {
	b := a.cidr.Addr().As16()
	n := new(big.Int).SetBytes(b[:])
	n.Add(n, new(big.Int).SetUint64(offset))
	n.FillBytes(b[:])
	addr := netip.AddrFrom16(b)
	if a.cidr.Addr().Is4() {
		addr = addr.Unmap()
	}
	return addr
}

// offsetOf is addr's offset in the range, and whether it is one the range hands out.
func (a *ServiceAllocator) offsetOf(addr netip.Addr) (uint64, bool) {
	if !a.cidr.Contains(addr) {
		return 0, false
	}
	base, x := a.cidr.Addr().As16(), addr.As16()
	off := new(big.Int).Sub(new(big.Int).SetBytes(x[:]), new(big.Int).SetBytes(base[:]))
	if !off.IsUint64() || off.Uint64() < 1 || off.Uint64() > a.ipSize {
		return 0, false
	}
	return off.Uint64(), true
}

// staticBand is how many of the first offsets of a range of size n are left to users who ask
// for a given value, as upstream's KEP-3070/3668: dynamic allocation takes the rest first.
func staticBand(n uint64, lo, hi, step uint64) uint64 {
	if n < lo {
		return 0
	}
	return min(max(n/step, lo), hi)
}

// scanOrder calls try on the offsets 1..n, upper band from a random start first, then the
// static band, until try reports done.
func scanOrder(n, band uint64, try func(off uint64) (done bool, err error)) error {
	upper := n - band
	if upper > 0 {
		start := rand.Uint64N(upper)
		for i := range upper {
			if done, err := try(band + 1 + (start+i)%upper); done || err != nil {
				return err
			}
		}
	}
	for off := uint64(1); off <= band; off++ {
		if done, err := try(off); done || err != nil {
			return err
		}
	}
	return errRangeFull
}

var errRangeFull = errors.New("range is full")

func needsClusterIP(svc *corev1.Service) bool {
	return svc != nil && svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

func needsNodePorts(svc *corev1.Service) bool {
	if svc == nil {
		return false
	}
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

func needsHealthCheckNodePort(svc *corev1.Service) bool {
	return svc != nil && svc.Spec.Type == corev1.ServiceTypeLoadBalancer &&
		svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// heldIPs and heldPorts are what a stored Service holds.
func heldIPs(svc *corev1.Service) []string {
	if !needsClusterIP(svc) {
		return nil
	}
	return svc.Spec.ClusterIPs
}

func heldPorts(svc *corev1.Service) map[int]bool {
	held := map[int]bool{}
	if svc == nil {
		return held
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			held[int(p.NodePort)] = true
		}
	}
	if svc.Spec.HealthCheckNodePort != 0 {
		held[int(svc.Spec.HealthCheckNodePort)] = true
	}
	return held
}

func asService(obj runtime.Object) *corev1.Service {
	svc, _ := obj.(*corev1.Service)
	return svc
}

// patchAllocatedValues carries what a Service already holds into an update that leaves it
// out (a PUT or apply without clusterIP or nodePort), as upstream does, so that such an
// update keeps its address and ports instead of failing on an immutable field.
func patchAllocatedValues(svc, old *corev1.Service) {
	if needsClusterIP(old) && needsClusterIP(svc) && svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) == 0 {
		svc.Spec.ClusterIP = old.Spec.ClusterIP
		svc.Spec.ClusterIPs = append([]string(nil), old.Spec.ClusterIPs...)
	}
	if needsNodePorts(old) && needsNodePorts(svc) {
		used := map[int32]bool{}
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				used[p.NodePort] = true
			}
		}
		byName := map[string]int32{}
		for _, p := range old.Spec.Ports {
			byName[p.Name] = p.NodePort
		}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if old, ok := byName[p.Name]; ok && p.NodePort == 0 && !used[old] {
				p.NodePort = old
				used[old] = true
			}
		}
	}
	if needsHealthCheckNodePort(old) && needsHealthCheckNodePort(svc) && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
}

var servicesGR = schema.GroupResource{Resource: "services"}

func (a *ServiceAllocator) invalid(svc *corev1.Service, errs field.ErrorList) error {
	return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, svc.Name, errs)
}

// Allocate implements allocator.
func (a *ServiceAllocator) Allocate(ctx context.Context, obj, oldObj runtime.Object, dryRun bool) (func(), error) {
	svc, old := asService(obj), asService(oldObj)
	if svc == nil {
		return func() {}, nil
	}
	var undos []func()
	undo := func() {
		for _, u := range undos {
			u()
		}
	}
	u, err := a.allocateIP(ctx, svc, old, dryRun)
	if err != nil {
		return nil, err
	}
	undos = append(undos, u)
	u, err = a.allocatePorts(ctx, svc, old, dryRun)
	if err != nil {
		undo()
		return nil, err
	}
	return func() { undo(); u() }, nil
}

func (a *ServiceAllocator) ipKey(ip string) string { return a.ipRoot + "/" + ip }

func (a *ServiceAllocator) allocateIP(ctx context.Context, svc, old *corev1.Service, dryRun bool) (func(), error) {
	noop := func() {}
	if !needsClusterIP(svc) {
		if svc.Spec.ClusterIP == corev1.ClusterIPNone {
			svc.Spec.ClusterIPs = []string{corev1.ClusterIPNone}
		}
		return noop, nil
	}
	if svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) > 0 {
		svc.Spec.ClusterIP = svc.Spec.ClusterIPs[0]
	}
	path := field.NewPath("spec", "clusterIPs").Index(0)
	if svc.Spec.ClusterIP != "" {
		for _, held := range heldIPs(old) {
			if held == svc.Spec.ClusterIP {
				return noop, nil // it has it already
			}
		}
		addr, err := netip.ParseAddr(svc.Spec.ClusterIP)
		if err != nil {
			return nil, a.invalid(svc, field.ErrorList{field.Invalid(path, svc.Spec.ClusterIP, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")})
		}
		if _, ok := a.offsetOf(addr); !ok {
			return nil, a.invalid(svc, field.ErrorList{field.Invalid(path, svc.Spec.ClusterIP,
				fmt.Sprintf("failed to allocate IP %s: the provided IP (%s) is not in the valid range. The range of valid IPs is %s", addr, addr, a.cidr))})
		}
		svc.Spec.ClusterIP = addr.String()
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		if dryRun {
			err := a.ips.Get(ctx, a.ipKey(svc.Spec.ClusterIP), storage.GetOptions{}, &networkingv1.IPAddress{})
			if err == nil {
				return nil, a.ipTaken(svc, path)
			}
			if !storage.IsNotFound(err) {
				return nil, registry.Interpret(err, servicesGR, svc.Name)
			}
			return noop, nil
		}
		if err := a.reserveIP(ctx, svc, addr); err != nil {
			if storage.IsExists(err) {
				return nil, a.ipTaken(svc, path)
			}
			return nil, registry.Interpret(err, servicesGR, svc.Name)
		}
		return func() { a.releaseIP(ctx, svc, svc.Spec.ClusterIP) }, nil
	}
	var got netip.Addr
	err := scanOrder(a.ipSize, staticBand(a.ipSize, 16, 256, 16), func(off uint64) (bool, error) {
		addr := a.addrAt(off)
		if dryRun {
			err := a.ips.Get(ctx, a.ipKey(addr.String()), storage.GetOptions{}, &networkingv1.IPAddress{})
			if storage.IsNotFound(err) {
				got = addr
				return true, nil
			}
			return false, err
		}
		err := a.reserveIP(ctx, svc, addr)
		switch {
		case err == nil:
			got = addr
			return true, nil
		case storage.IsExists(err):
			return false, nil
		}
		return false, err
	})
	if errors.Is(err, errRangeFull) {
		return nil, apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: range is full"))
	}
	if err != nil {
		return nil, registry.Interpret(err, servicesGR, svc.Name)
	}
	svc.Spec.ClusterIP = got.String()
	svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	if dryRun {
		return noop, nil
	}
	return func() { a.releaseIP(ctx, svc, svc.Spec.ClusterIP) }, nil
}

func (a *ServiceAllocator) ipTaken(svc *corev1.Service, path *field.Path) error {
	return a.invalid(svc, field.ErrorList{field.Invalid(path, svc.Spec.ClusterIP,
		fmt.Sprintf("failed to allocate IP %s: provided IP is already allocated", svc.Spec.ClusterIP))})
}

// reserveIP creates addr's IPAddress object for svc; storage.IsExists when it is taken.
func (a *ServiceAllocator) reserveIP(ctx context.Context, svc *corev1.Service, addr netip.Addr) error {
	family := "IPv4"
	if addr.Is6() {
		family = "IPv6"
	}
	ip := &networkingv1.IPAddress{
		TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "IPAddress"},
		ObjectMeta: metav1.ObjectMeta{Name: addr.String(), UID: types.UID(uuid.NewUUID()), CreationTimestamp: metav1.Now(),
			Labels: map[string]string{labelIPFamily: family, labelManagedBy: ipAllocatorID}},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: svc.Namespace, Name: svc.Name}},
	}
	return a.ips.Create(ctx, a.ipKey(ip.Name), ip, &networkingv1.IPAddress{})
}

// releaseIP deletes ip's IPAddress object if svc still owns it.
func (a *ServiceAllocator) releaseIP(ctx context.Context, svc *corev1.Service, ip string) {
	err := a.ips.Delete(context.WithoutCancel(ctx), a.ipKey(ip), &networkingv1.IPAddress{}, nil, func(_ context.Context, cur runtime.Object) error {
		ref := cur.(*networkingv1.IPAddress).Spec.ParentRef
		if ref == nil || ref.Resource != "services" || ref.Namespace != svc.Namespace || ref.Name != svc.Name {
			return errNotOurs
		}
		return nil
	})
	if err != nil && !storage.IsNotFound(err) && !errors.Is(err, errNotOurs) {
		a.log.Warn("could not release a service IP; the repair pass will", "ip", ip, "service", svc.Namespace+"/"+svc.Name, "err", err)
	}
}

var errNotOurs = errors.New("held by another object")

func (a *ServiceAllocator) portBand() int {
	return int(staticBand(uint64(a.portSize), 16, 128, 32))
}

// allocatePorts reserves svc's NodePorts (and health check NodePort) that old does not hold,
// in one compare-and-swap of the bitmap.
func (a *ServiceAllocator) allocatePorts(ctx context.Context, svc, old *corev1.Service, dryRun bool) (func(), error) {
	noop := func() {}
	if !needsNodePorts(svc) {
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0 // as upstream: a ClusterIP Service holds none
		}
	}
	if !needsHealthCheckNodePort(svc) {
		svc.Spec.HealthCheckNodePort = 0
	}
	held := heldPorts(old)
	var wants []portWant
	if needsNodePorts(svc) {
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			wants = append(wants, portWant{field.NewPath("spec", "ports").Index(i).Child("nodePort"), func(v int32) { p.NodePort = v }, int(p.NodePort)})
		}
	}
	if needsHealthCheckNodePort(svc) {
		wants = append(wants, portWant{field.NewPath("spec", "healthCheckNodePort"), func(v int32) { svc.Spec.HealthCheckNodePort = v }, int(svc.Spec.HealthCheckNodePort)})
	}
	if len(wants) == 0 {
		return noop, nil
	}
	var taken []int // what this call set in the bitmap
	apply := func(bits *big.Int) error {
		var err error
		taken, err = a.takePorts(svc, wants, held, bits)
		return err
	}
	// Fixed ports are set first; the chosen ones go into svc only once the bitmap accepted them.
	for _, w := range wants {
		if w.port != 0 {
			w.set(int32(w.port))
		}
	}
	if dryRun {
		ra := &corev1.RangeAllocation{}
		if err := a.nodePorts.Get(ctx, a.portsKey, storage.GetOptions{IgnoreNotFound: true}, ra); err != nil {
			return nil, registry.Interpret(err, servicesGR, svc.Name)
		}
		if err := apply(new(big.Int).SetBytes(ra.Data)); err != nil {
			return nil, err
		}
		return noop, nil
	}
	err := a.updatePorts(ctx, nil, apply)
	if err != nil {
		return nil, err
	}
	got := append([]int(nil), taken...)
	return func() { a.releasePorts(ctx, got) }, nil
}

// portWant is one NodePort a Service asks for: where it goes in the spec, and which port
// (0: any free one).
type portWant struct {
	path *field.Path
	set  func(int32)
	port int
}

// takePorts sets the ports of wants in the bitmap bits: the fixed ones (unless held, which
// svc has already), then free ones for the others, which it sets in svc. It returns the
// ports it set.
func (a *ServiceAllocator) takePorts(svc *corev1.Service, wants []portWant, held map[int]bool, bits *big.Int) ([]int, error) {
	var taken []int
	var errs field.ErrorList
	mine := map[int]bool{} // ports given to this Service in this call
	for _, w := range wants {
		if w.port == 0 {
			continue
		}
		off := w.port - a.portBase
		if off < 0 || off >= a.portSize {
			errs = append(errs, field.Invalid(w.path, w.port, fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %d-%d", a.portBase, a.portBase+a.portSize-1)))
			continue
		}
		if held[w.port] || mine[w.port] {
			continue // the Service has it already (two protocols may share a port)
		}
		if bits.Bit(off) == 1 {
			errs = append(errs, field.Invalid(w.path, w.port, "provided port is already allocated"))
			continue
		}
		bits.SetBit(bits, off, 1)
		mine[w.port] = true
		taken = append(taken, w.port)
	}
	if len(errs) > 0 {
		return taken, a.invalid(svc, errs)
	}
	for _, w := range wants {
		if w.port != 0 {
			continue
		}
		var got int
		err := scanOrder(uint64(a.portSize), uint64(a.portBand()), func(off uint64) (bool, error) {
			if bits.Bit(int(off-1)) == 0 {
				got = int(off-1) + a.portBase
				return true, nil
			}
			return false, nil
		})
		if err != nil {
			return taken, apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: range is full"))
		}
		bits.SetBit(bits, got-a.portBase, 1)
		taken = append(taken, got)
		w.set(int32(got))
	}
	return taken, nil
}

// updatePorts runs change on the current bitmap and stores the result, retrying on conflict
// unless precond pins the version change was computed from.
func (a *ServiceAllocator) updatePorts(ctx context.Context, precond *storage.Preconditions, change func(bits *big.Int) error) error {
	want := fmt.Sprintf("%d-%d", a.portBase, a.portBase+a.portSize-1)
	err := a.nodePorts.GuaranteedUpdate(ctx, a.portsKey, &corev1.RangeAllocation{}, true, precond, func(cur runtime.Object) (runtime.Object, error) {
		ra := cur.(*corev1.RangeAllocation)
		bits := new(big.Int).SetBytes(ra.Data)
		if ra.Range != "" && ra.Range != want {
			// The range changed (a restart with another --service-node-port-range): the bits
			// are offsets into the old range. Repair recomputes them from the Services.
			bits = new(big.Int)
		}
		if err := change(bits); err != nil {
			return nil, err
		}
		ra.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "RangeAllocation"}
		ra.Range = want
		ra.Data = bits.Bytes()
		if ra.CreationTimestamp.IsZero() {
			ra.CreationTimestamp = metav1.Now()
		}
		return ra, nil
	})
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return err
		}
		return registry.Interpret(err, servicesGR, "")
	}
	return nil
}

func (a *ServiceAllocator) releasePorts(ctx context.Context, ports []int) {
	if len(ports) == 0 {
		return
	}
	err := a.updatePorts(context.WithoutCancel(ctx), nil, func(bits *big.Int) error {
		for _, p := range ports {
			if off := p - a.portBase; off >= 0 && off < a.portSize {
				bits.SetBit(bits, off, 0)
			}
		}
		return nil
	})
	if err != nil {
		a.log.Warn("could not release node ports; the repair pass will", "ports", ports, "err", err)
	}
}

// Release implements allocator.
func (a *ServiceAllocator) Release(ctx context.Context, obj, oldObj runtime.Object) {
	svc, old := asService(obj), asService(oldObj)
	if old == nil {
		return
	}
	keep := map[string]bool{}
	for _, ip := range heldIPs(svc) {
		keep[ip] = true
	}
	for _, ip := range heldIPs(old) {
		if !keep[ip] {
			a.releaseIP(ctx, old, ip)
		}
	}
	keepPorts := heldPorts(svc)
	if !needsNodePorts(svc) && !needsHealthCheckNodePort(svc) {
		keepPorts = nil
	}
	var gone []int
	for p := range heldPorts(old) {
		if !keepPorts[p] {
			gone = append(gone, p)
		}
	}
	a.releasePorts(ctx, gone)
}

// Repair makes the pools agree with the Services that exist, as upstream's repair
// controllers do: a reservation no Service holds (its apiserver died between reserving and
// storing the Service, or a release failed) is freed once two passes in a row found it so,
// because a Service being created right now has its reservation before it is stored; a
// value a Service holds without a reservation (an etcd restored from a backup) is reserved.
func (a *ServiceAllocator) Repair(ctx context.Context, services *registry.Store) error {
	// Reservations first, then the Services: whatever is reserved after the first read
	// belongs to a Service the list may not show yet, and is not looked at.
	ipList := &networkingv1.IPAddressList{}
	if err := a.ips.GetList(ctx, a.ipRoot+"/", storage.ListOptions{Recursive: true}, ipList); err != nil {
		return fmt.Errorf("list IP addresses: %w", err)
	}
	ra := &corev1.RangeAllocation{}
	if err := a.nodePorts.Get(ctx, a.portsKey, storage.GetOptions{IgnoreNotFound: true}, ra); err != nil {
		return fmt.Errorf("read node port allocations: %w", err)
	}
	list, err := services.List(ctx, "", &metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list services: %w", err)
	}
	svcs := list.(*corev1.ServiceList).Items
	usedIPs := map[string]*corev1.Service{}
	usedPorts := map[int]bool{}
	for i := range svcs {
		svc := &svcs[i]
		for _, ip := range heldIPs(svc) {
			usedIPs[ip] = svc
		}
		for p := range heldPorts(svc) {
			usedPorts[p] = true
		}
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.repairIPs(ctx, ipList, usedIPs); err != nil {
		return err
	}
	return a.repairPorts(ctx, ra, usedPorts)
}

// repairIPs deletes the IP reservations no Service in usedIPs holds, when the previous
// pass found them too, and reserves the Services' IPs that have none. a.mu is held.
func (a *ServiceAllocator) repairIPs(ctx context.Context, ipList *networkingv1.IPAddressList, usedIPs map[string]*corev1.Service) error {
	ipLeaks := map[string]types.UID{}
	reserved := map[string]bool{}
	for i := range ipList.Items {
		ip := &ipList.Items[i]
		reserved[ip.Name] = true
		if ip.Labels[labelManagedBy] != ipAllocatorID {
			continue
		}
		ref := ip.Spec.ParentRef
		if svc := usedIPs[ip.Name]; svc != nil && ref != nil && ref.Namespace == svc.Namespace && ref.Name == svc.Name {
			continue
		}
		if a.ipLeaks[ip.Name] != ip.UID {
			ipLeaks[ip.Name] = ip.UID // first sighting of this reservation: look again next pass
			continue
		}
		a.log.Info("releasing a service IP no service holds", "ip", ip.Name)
		uid := ip.UID
		err := a.ips.Delete(ctx, a.ipKey(ip.Name), &networkingv1.IPAddress{}, &storage.Preconditions{UID: &uid}, nil)
		if err != nil && !storage.IsNotFound(err) {
			a.log.Warn("could not release a leaked service IP", "ip", ip.Name, "err", err)
		}
	}
	a.ipLeaks = ipLeaks
	for ip, svc := range usedIPs {
		addr, err := netip.ParseAddr(ip)
		if err != nil || reserved[ip] {
			continue
		}
		if _, ok := a.offsetOf(addr); !ok {
			continue // outside today's range: nothing to reserve it in
		}
		if err := a.reserveIP(ctx, svc, addr); err != nil && !storage.IsExists(err) {
			return fmt.Errorf("reserve %s for service %s/%s: %w", ip, svc.Namespace, svc.Name, err)
		}
	}
	return nil
}

// repairPorts frees the NodePorts of the bitmap ra that no Service holds (usedPorts), when
// the previous pass found them too, and sets those held. a.mu is held.
func (a *ServiceAllocator) repairPorts(ctx context.Context, ra *corev1.RangeAllocation, usedPorts map[int]bool) error {
	bits := new(big.Int).SetBytes(ra.Data)
	portLeaks := map[int]bool{}
	var free []int
	for off := range a.portSize {
		p := a.portBase + off
		if bits.Bit(off) == 1 && !usedPorts[p] {
			if a.portLeaks[p] {
				free = append(free, p)
			} else {
				portLeaks[p] = true
			}
		}
	}
	a.portLeaks = portLeaks
	// Only on the bitmap just read: a port released and given out again since then must not
	// be freed. A conflict is retried by the next pass.
	rv := ra.ResourceVersion
	err := a.updatePorts(ctx, &storage.Preconditions{ResourceVersion: &rv}, func(cur *big.Int) error {
		for p := range usedPorts {
			if off := p - a.portBase; off >= 0 && off < a.portSize {
				cur.SetBit(cur, off, 1)
			}
		}
		for _, p := range free {
			cur.SetBit(cur, p-a.portBase, 0)
		}
		return nil
	})
	if apierrors.IsConflict(err) {
		a.portLeaks = nil // the bitmap moved on: start counting again next pass
		return nil
	}
	return err
}

// ClusterIPRange is the range Service ClusterIPs are allocated from.
func (a *ServiceAllocator) ClusterIPRange() netip.Prefix { return a.cidr }

// KubernetesServiceIP is the ClusterIP of the "kubernetes" Service: the range's first
// address after the network's, as upstream.
func (a *ServiceAllocator) KubernetesServiceIP() netip.Addr { return a.addrAt(1) }
