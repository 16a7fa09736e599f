//lint:file-ignore SA1019 the kubernetes Service's core/v1 Endpoints are still written by kube-apiserver 1.33

package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/registry/core"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// MasterEndpoint is how this apiserver appears in the kubernetes Service's endpoints.
type MasterEndpoint struct {
	IP   string // --advertise-address
	Port int    // the secure port
	// TTL is how long a dead apiserver stays listed (upstream's lease reconciler: 15s);
	// a live one renews its entry every TTL/3.
	TTL time.Duration
}

// masterLeaseRoot is where upstream's lease endpoint reconciler keeps one key per live
// apiserver (/registry/masterleases/<ip>), attached to an etcd lease of TTL seconds.
const masterLeaseRoot = "masterleases/"

// kubernetesService is the Service in default that pods use to reach the apiservers.
func kubernetesService(port int, ip string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			Type:            corev1.ServiceTypeClusterIP,
			ClusterIP:       ip,
			SessionAffinity: corev1.ServiceAffinityNone,
			Ports:           []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(int32(port))}},
		},
	}
}

// RunMasterEndpoint keeps, in the background until ctx ends, the kubernetes Service and its
// Endpoints listing every live apiserver, as kube-apiserver's lease endpoint reconciler does:
// each apiserver renews its own key under masterleases/ (an etcd lease makes a dead one's key
// vanish after TTL), and writes the Endpoints from the keys it finds. When ctx ends it
// removes itself, so a graceful stop takes it out of the Service at once. Wait waits for it.
func (r *Registry) RunMasterEndpoint(ctx context.Context, me MasterEndpoint) {
	r.wg.Add(1)
	go r.runMasterEndpoint(ctx, me)
}

func (r *Registry) runMasterEndpoint(ctx context.Context, me MasterEndpoint) {
	defer r.wg.Done()
	if me.TTL <= 0 {
		me.TTL = 15 * time.Second
	}
	if !core.ValidEndpointIP(me.IP) {
		r.log.Warn("the advertise address may not be an endpoint (loopback, link-local or unspecified): the kubernetes service's endpoints leave this apiserver out; set --advertise-address",
			"address", me.IP)
	}
	key := r.cfg.Prefix + "/" + masterLeaseRoot + me.IP
	var lease clientv3.LeaseID
	for {
		if err := r.ensureKubernetesService(ctx, me.Port); err != nil && ctx.Err() == nil {
			r.log.Warn("could not create the kubernetes service", "err", err)
		}
		if err := r.ensureDefaultServiceCIDR(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("could not create the default ServiceCIDR", "err", err)
		}
		id, err := r.renewMasterLease(ctx, key, lease, me)
		if err == nil {
			lease = id
			err = r.reconcileMasterEndpoints(ctx, me.Port)
		}
		if err != nil && ctx.Err() == nil {
			r.log.Warn("could not update the kubernetes service's endpoints", "err", err)
		}
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if lease != 0 {
				_, _ = r.client.Revoke(cctx, lease) // deletes the key
			}
			if err := r.reconcileMasterEndpoints(cctx, me.Port); err != nil {
				r.log.Warn("could not remove this apiserver from the kubernetes service's endpoints", "err", err)
			}
			cancel()
			return
		case <-time.After(me.TTL / 3):
		}
	}
}

// renewMasterLease keeps this apiserver's key alive, with a new lease when the last expired.
func (r *Registry) renewMasterLease(ctx context.Context, key string, lease clientv3.LeaseID, me MasterEndpoint) (clientv3.LeaseID, error) {
	if lease != 0 {
		if _, err := r.client.KeepAliveOnce(ctx, lease); err == nil {
			return lease, nil
		}
	}
	grant, err := r.client.Grant(ctx, int64((me.TTL+time.Second-1)/time.Second))
	if err != nil {
		return 0, err
	}
	value, err := r.endpointsCodec.Encode(&corev1.Endpoints{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Endpoints"},
		ObjectMeta: metav1.ObjectMeta{Name: me.IP},
		Subsets:    []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: me.IP}}}},
	})
	if err != nil {
		return 0, err
	}
	if _, err := r.client.Put(ctx, key, string(value), clientv3.WithLease(grant.ID)); err != nil {
		return 0, err
	}
	return grant.ID, nil
}

// ensureKubernetesService creates the kubernetes Service with the first address of the
// Service range, unless it exists.
func (r *Registry) ensureKubernetesService(ctx context.Context, port int) error {
	svcs := r.byGR[servicesGR].Store
	if _, err := svcs.Get(ctx, metav1.NamespaceDefault, "kubernetes", &metav1.GetOptions{ResourceVersion: "0"}); err == nil {
		return nil
	}
	ip := r.serviceAlloc.KubernetesServiceIP().String()
	_, err := svcs.Create(ctx, metav1.NamespaceDefault, "", kubernetesService(port, ip), &metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// ensureDefaultServiceCIDR creates the ServiceCIDR "kubernetes" for the Service range, Ready,
// as kube-apiserver's default-servicecidr controller does, unless it exists.
func (r *Registry) ensureDefaultServiceCIDR(ctx context.Context) error {
	store := r.byGR[serviceCIDRsGR].Store
	if _, err := store.Get(ctx, "", "kubernetes", &metav1.GetOptions{ResourceVersion: "0"}); err == nil {
		return nil
	}
	cidr := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{r.serviceAlloc.ClusterIPRange().String()}}}
	if _, err := store.Create(ctx, "", "", cidr, &metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	_, _, err := r.byGR[serviceCIDRsGR].Subresources["status"].(registry.Updater).Update(ctx, "", "kubernetes", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		c := cur.(*networkingv1.ServiceCIDR)
		if meta.IsStatusConditionTrue(c.Status.Conditions, networkingv1.ServiceCIDRConditionReady) {
			return nil, errUnchanged
		}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady,
			Status: metav1.ConditionTrue, Reason: "", Message: "Kubernetes default Service CIDR is ready"})
		return c, nil
	}, &metav1.UpdateOptions{})
	if err == errUnchanged {
		return nil
	}
	return err
}

// reconcileMasterEndpoints writes default/kubernetes Endpoints from the live master keys.
func (r *Registry) reconcileMasterEndpoints(ctx context.Context, port int) error {
	resp, err := r.client.Get(ctx, r.cfg.Prefix+"/"+masterLeaseRoot, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return err
	}
	var ips []string
	for _, kv := range resp.Kvs {
		ip := string(kv.Key[len(r.cfg.Prefix)+1+len(masterLeaseRoot):])
		// Only what an Endpoints object may hold: a loopback advertise address (one host,
		// bound to 127.0.0.1) is left out, as kube-apiserver's reconciler cannot write it.
		if _, err := netip.ParseAddr(ip); err == nil && core.ValidEndpointIP(ip) {
			ips = append(ips, ip)
		}
	}
	slices.Sort(ips)
	want := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: "https", Port: int32(port), Protocol: corev1.ProtocolTCP}}}
	for _, ip := range ips {
		want.Addresses = append(want.Addresses, corev1.EndpointAddress{IP: ip})
	}
	subsets := []corev1.EndpointSubset{want}
	if len(ips) == 0 {
		subsets = nil
	}
	eps := r.byGR[endpointsGR].Store
	_, _, err = eps.Update(ctx, metav1.NamespaceDefault, "kubernetes", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		var ep *corev1.Endpoints
		if cur == nil {
			ep = &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault}}
		} else {
			ep = cur.(*corev1.Endpoints)
		}
		// Upstream labels it so that the EndpointSlice mirroring controller leaves it alone.
		if ep.Labels["endpointslice.kubernetes.io/skip-mirror"] == "true" && apiequality.Semantic.DeepEqual(ep.Subsets, subsets) {
			return nil, errUnchanged
		}
		if ep.Labels == nil {
			ep.Labels = map[string]string{}
		}
		ep.Labels["endpointslice.kubernetes.io/skip-mirror"] = "true"
		ep.Subsets = subsets
		return ep, nil
	}, &metav1.UpdateOptions{})
	if err != nil && err != errUnchanged {
		return fmt.Errorf("update endpoints default/kubernetes: %w", err)
	}
	return r.reconcileMasterEndpointSlice(ctx, port, ips)
}

// reconcileMasterEndpointSlice writes default/kubernetes' EndpointSlice (named kubernetes,
// as upstream's reconciler does; the mirroring controller skips the Endpoints): what
// kube-proxy and DNS read to reach the apiservers.
func (r *Registry) reconcileMasterEndpointSlice(ctx context.Context, port int, ips []string) error {
	ready := true
	want := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault, Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, ip := range ips {
		if a, _ := netip.ParseAddr(ip); a.Is6() {
			want.AddressType = discoveryv1.AddressTypeIPv6
		}
		want.Endpoints = append(want.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
	}
	store := r.byGR[endpointSlicesGR].Store
	_, _, err := store.Update(ctx, metav1.NamespaceDefault, "kubernetes", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		if cur == nil {
			return want, nil
		}
		s := cur.(*discoveryv1.EndpointSlice)
		if s.AddressType == want.AddressType && s.Labels[discoveryv1.LabelServiceName] == "kubernetes" &&
			apiequality.Semantic.DeepEqual(s.Endpoints, want.Endpoints) && apiequality.Semantic.DeepEqual(s.Ports, want.Ports) {
			return nil, errUnchanged
		}
		if s.AddressType != want.AddressType {
			// addressType is immutable: replace the slice.
			return nil, errReplace
		}
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[discoveryv1.LabelServiceName] = "kubernetes"
		s.Endpoints, s.Ports = want.Endpoints, want.Ports
		return s, nil
	}, &metav1.UpdateOptions{})
	create := apierrors.IsNotFound(err)
	if err == errReplace {
		_, _, err = store.Delete(ctx, metav1.NamespaceDefault, "kubernetes", &metav1.DeleteOptions{})
		create = err == nil || apierrors.IsNotFound(err)
	}
	if create {
		// PUT does not create EndpointSlices.
		if _, err = store.Create(ctx, metav1.NamespaceDefault, "", want, &metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			err = nil // another apiserver was first; the next pass compares
		}
	}
	if err != nil && err != errUnchanged {
		return fmt.Errorf("update endpointslice default/kubernetes: %w", err)
	}
	return nil
}

var (
	errUnchanged     = errors.New("unchanged")
	errReplace       = errors.New("replace")
	endpointsGR      = schema.GroupResource{Resource: "endpoints"}
	endpointSlicesGR = schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}
	serviceCIDRsGR   = schema.GroupResource{Group: "networking.k8s.io", Resource: "servicecidrs"}
)
