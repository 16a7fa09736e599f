package plugins

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
)

// ResourceQuota is upstream's ResourceQuota plugin (k8s.io/apiserver's
// admission/plugin/resourcequota with kube-apiserver's evaluators for pods, services and
// persistent volume claims, and object counts for everything else): a create or update in a
// namespace with ResourceQuotas is charged to every quota whose status.hard tracks what it
// uses; a request that would take a quota past status.hard is refused (403 `exceeded quota:
// NAME, requested: ..., used: ..., limited: ...`), and otherwise the quota's status.used is
// written, with a compare-and-swap on its resourceVersion, before the object is stored.
// Like upstream, admission only ever adds: kube-controller-manager's resourcequota controller
// sets status.hard and recomputes status.used (releasing what deleted objects used).
type ResourceQuota struct {
	admission.Operations
	quotas *informer.Informer[*corev1.ResourceQuota]
	// get reads a quota from storage (after a conflict); update writes its status with the
	// object's resourceVersion as a precondition.
	get    func(ctx context.Context, ns, name string) (*corev1.ResourceQuota, error)
	update func(ctx context.Context, q *corev1.ResourceQuota) (*corev1.ResourceQuota, error)
	now    func() time.Time

	mu      sync.Mutex
	locks   map[string]*sync.Mutex           // per namespace: one charge at a time
	written map[string]*corev1.ResourceQuota // the newest status this server wrote, by ns/name
}

// quotaRetries is how often a conflicting status write is retried, as upstream's
// evaluator (which tries three times).
const quotaRetries = 3

// NewResourceQuota reads quotas from the shared informers and writes their status through update.
func NewResourceQuota(f *informer.Factory, get func(ctx context.Context, ns, name string) (*corev1.ResourceQuota, error),
	update func(ctx context.Context, q *corev1.ResourceQuota) (*corev1.ResourceQuota, error)) *ResourceQuota {
	return &ResourceQuota{Operations: admission.Operations{admission.Create, admission.Update},
		quotas: informer.For[*corev1.ResourceQuota](f, schema.GroupResource{Resource: "resourcequotas"}), get: get, update: update, now: time.Now,
		locks: map[string]*sync.Mutex{}, written: map[string]*corev1.ResourceQuota{}}
}

// Start waits until the quota informer holds its first list.
func (p *ResourceQuota) Start(ctx context.Context) { _ = p.quotas.WaitForSync(ctx) }

// Validate charges the request to its namespace's quotas, or refuses it.
func (p *ResourceQuota) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.Namespace == "" || (a.Resource.Group == "" && a.Resource.Resource == "namespaces") {
		return nil
	}
	if a.Resource.Group == "" && a.Resource.Resource == "events" { // upstream's ignored resources
		return nil
	}
	ev := quotaEvaluatorFor(a.Resource.GroupResource(), p.now)
	if !ev.handles(a) {
		return nil
	}
	if len(p.quotas.List(a.Namespace)) == 0 {
		return nil // the common case: no quota, no lock
	}
	lock := p.nsLock(a.Namespace)
	lock.Lock()
	defer lock.Unlock()
	quotas := p.current(a.Namespace)
	if len(quotas) == 0 {
		return nil
	}
	var lastErr error
	for try := 0; try < quotaRetries; try++ {
		out, err := checkQuotaRequest(quotas, a, ev)
		if err != nil {
			return err
		}
		if a.DryRun {
			return nil
		}
		var failed []string
		for i := range out {
			if quotaEqual(quotas[i].Status.Used, out[i].Status.Used) {
				continue
			}
			written, err := p.update(ctx, out[i])
			if err != nil {
				failed = append(failed, out[i].Name)
				lastErr = err
				continue
			}
			p.remember(written)
		}
		if len(failed) == 0 {
			return nil
		}
		// Read the quotas that moved on and charge them again (upstream charges the others
		// only once as well: their writes are in).
		quotas = nil
		for _, name := range failed {
			q, err := p.get(ctx, a.Namespace, name)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			quotas = append(quotas, q)
		}
		if len(quotas) == 0 {
			return nil
		}
	}
	return lastErr
}

func (p *ResourceQuota) nsLock(ns string) *sync.Mutex {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.locks[ns]
	if !ok {
		l = &sync.Mutex{}
		p.locks[ns] = l
	}
	return l
}

// current are the namespace's quotas from the cache, each replaced by the status this server
// wrote last when the cache has not seen that write yet; copies, in name order.
func (p *ResourceQuota) current(ns string) []*corev1.ResourceQuota {
	cached := p.quotas.List(ns)
	sort.Slice(cached, func(i, j int) bool { return cached[i].Name < cached[j].Name })
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*corev1.ResourceQuota, 0, len(cached))
	seen := map[string]bool{}
	for _, q := range cached {
		key := ns + "/" + q.Name
		seen[key] = true
		if w, ok := p.written[key]; ok {
			if w.UID == q.UID && rvLess(q.ResourceVersion, w.ResourceVersion) {
				out = append(out, w.DeepCopy())
				continue
			}
			delete(p.written, key)
		}
		out = append(out, q.DeepCopy())
	}
	for key := range p.written {
		if strings.HasPrefix(key, ns+"/") && !seen[key] {
			delete(p.written, key)
		}
	}
	return out
}

func (p *ResourceQuota) remember(q *corev1.ResourceQuota) {
	if q == nil {
		return
	}
	p.mu.Lock()
	p.written[q.Namespace+"/"+q.Name] = q
	p.mu.Unlock()
}

// rvLess compares resourceVersions (etcd revisions).
func rvLess(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x < y
}

// checkQuotaRequest is upstream's CheckRequest: the quotas with the request's usage added
// (copies; the unchanged ones as they are), or the error that refuses it.
func checkQuotaRequest(quotas []*corev1.ResourceQuota, a *admission.Attributes, ev quotaEvaluator) ([]*corev1.ResourceQuota, error) {
	obj := a.Object
	var interesting []int
	for i, q := range quotas {
		match, err := quotaMatches(q, obj, ev)
		if err != nil {
			return nil, err
		}
		if !match {
			continue
		}
		restricted := ev.matchingResources(quotaNames(q.Status.Hard))
		if err := ev.constraints(restricted, obj); err != nil {
			return nil, admission.NewForbidden(a, fmt.Errorf("failed quota: %s: %v", q.Name, err))
		}
		if !hasUsageStats(q, restricted) {
			return nil, admission.NewForbidden(a, fmt.Errorf("status unknown for quota: %s, resources: %s", q.Name, prettyNames(restricted)))
		}
		interesting = append(interesting, i)
	}
	if len(interesting) == 0 {
		return quotas, nil
	}
	usage, err := ev.usage(obj)
	if err != nil {
		return nil, err
	}
	var negative []corev1.ResourceName
	for k, v := range usage {
		if v.Sign() < 0 {
			negative = append(negative, k)
		}
	}
	if len(negative) > 0 {
		return nil, admission.NewForbidden(a, fmt.Errorf("quota usage is negative for resource(s): %s", prettyNames(negative)))
	}
	delta := map[int]corev1.ResourceList{}
	for _, i := range interesting {
		delta[i] = usage
	}
	if a.Operation == admission.Update {
		if a.OldObject == nil {
			return nil, admission.NewForbidden(a, errors.New("unable to get previous usage since prior version of object was not found"))
		}
		if m, err := meta.Accessor(a.OldObject); err == nil && m.GetResourceVersion() != "" {
			prev, err := ev.usage(a.OldObject)
			if err != nil {
				return nil, err
			}
			d := quotaSubtractNonNegative(usage, prev)
			for _, i := range interesting {
				match, err := quotaMatches(quotas[i], a.OldObject, ev)
				if err != nil {
					return nil, err
				}
				if match {
					delta[i] = d
				}
			}
		}
	}
	for i, d := range delta {
		if d = quotaRemoveZeros(d); len(d) == 0 {
			delete(delta, i)
		} else {
			delta[i] = d
		}
	}
	if len(delta) == 0 {
		return quotas, nil
	}
	out := make([]*corev1.ResourceQuota, len(quotas))
	copy(out, quotas)
	for _, i := range interesting {
		d, ok := delta[i]
		if !ok {
			continue
		}
		q := quotas[i]
		hard := quotaNames(q.Status.Hard)
		requested := quotaMask(d, hard)
		used := quotaAdd(q.Status.Used, requested)
		if a.Subresource != "status" {
			masked := quotaMask(used, quotaNames(requested))
			if ok, exceeded := quotaLessThanOrEqual(masked, q.Status.Hard); !ok {
				return nil, admission.NewForbidden(a, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
					q.Name, prettyResources(quotaMask(requested, exceeded)), prettyResources(quotaMask(q.Status.Used, exceeded)),
					prettyResources(quotaMask(q.Status.Hard, exceeded))))
			}
		}
		nq := q.DeepCopy()
		nq.Status.Used = used
		out[i] = nq
	}
	return out, nil
}

// quotaMatches is upstream's generic Matches: the quota tracks something the evaluator
// counts, and the object is in every one of its scopes.
func quotaMatches(q *corev1.ResourceQuota, obj runtime.Object, ev quotaEvaluator) (bool, error) {
	if len(ev.matchingResources(quotaNames(q.Status.Hard))) == 0 {
		return false, nil
	}
	for _, sel := range quotaScopeSelectors(q) {
		ok, err := ev.matchesScope(sel, obj)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

func quotaScopeSelectors(q *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		out = append(out, q.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

// hasUsageStats reports whether status.used has a value for each restricted hard limit.
func hasUsageStats(q *corev1.ResourceQuota, restricted []corev1.ResourceName) bool {
	want := map[corev1.ResourceName]bool{}
	for _, r := range restricted {
		want[r] = true
	}
	for name := range q.Status.Hard {
		if !want[name] {
			continue
		}
		if _, ok := q.Status.Used[name]; !ok {
			return false
		}
	}
	return true
}

// prettyResources is upstream's prettyPrint: name=value, sorted by name.
func prettyResources(l corev1.ResourceList) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := l[corev1.ResourceName(k)]
		parts = append(parts, k+"="+v.String())
	}
	return strings.Join(parts, ",")
}

func prettyNames(names []corev1.ResourceName) string {
	s := make([]string, 0, len(names))
	for _, n := range names {
		s = append(s, string(n))
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

// quotaEvaluator is what upstream's quota.Evaluator is to admission: which requests change
// usage, which quota resource names it counts, scopes, constraints, and an object's usage.
type quotaEvaluator interface {
	handles(a *admission.Attributes) bool
	matchingResources(names []corev1.ResourceName) []corev1.ResourceName
	matchesScope(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error)
	constraints(required []corev1.ResourceName, obj runtime.Object) error
	usage(obj runtime.Object) (corev1.ResourceList, error)
}

func quotaEvaluatorFor(gr schema.GroupResource, now func() time.Time) quotaEvaluator {
	if gr.Group == "" {
		switch gr.Resource {
		case "pods":
			return podQuota{now: now}
		case "services":
			return serviceQuota{}
		case "persistentvolumeclaims":
			return pvcQuota{}
		case "configmaps", "resourcequotas", "replicationcontrollers", "secrets":
			return objectCountQuota{gr: gr, alias: corev1.ResourceName(gr.Resource)}
		}
	}
	return objectCountQuota{gr: gr}
}

// objectCountName is upstream's ObjectCountQuotaResourceNameFor: count/RESOURCE[.GROUP].
func objectCountName(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName("count/" + gr.Resource)
	}
	return corev1.ResourceName("count/" + gr.Resource + "." + gr.Group)
}

var one = resource.MustParse("1")

func intersect(names []corev1.ResourceName, known ...corev1.ResourceName) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, n := range names {
		for _, k := range known {
			if n == k {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// objectCountQuota is upstream's generic object count evaluator: one per create, under
// count/RESOURCE.GROUP and the legacy core alias (configmaps, secrets...); scoped quotas
// never match.
type objectCountQuota struct {
	gr    schema.GroupResource
	alias corev1.ResourceName
}

func (o objectCountQuota) handles(a *admission.Attributes) bool {
	return a.Operation == admission.Create && a.Subresource == ""
}
func (o objectCountQuota) matchingResources(names []corev1.ResourceName) []corev1.ResourceName {
	known := []corev1.ResourceName{objectCountName(o.gr)}
	if o.alias != "" {
		known = append(known, o.alias)
	}
	return intersect(names, known...)
}
func (objectCountQuota) matchesScope(corev1.ScopedResourceSelectorRequirement, runtime.Object) (bool, error) {
	return false, nil
}
func (objectCountQuota) constraints([]corev1.ResourceName, runtime.Object) error { return nil }
func (o objectCountQuota) usage(runtime.Object) (corev1.ResourceList, error) {
	out := corev1.ResourceList{objectCountName(o.gr): one.DeepCopy()}
	if o.alias != "" {
		out[o.alias] = one.DeepCopy()
	}
	return out, nil
}

// serviceQuota is upstream's service evaluator: services, count/services,
// services.nodeports (the ports of NodePort and LoadBalancer services) and
// services.loadbalancers, on create and update (a service's type may change).
type serviceQuota struct{}

func (serviceQuota) handles(a *admission.Attributes) bool {
	return (a.Operation == admission.Create || a.Operation == admission.Update) && a.Subresource == ""
}
func (serviceQuota) matchingResources(names []corev1.ResourceName) []corev1.ResourceName {
	return intersect(names, corev1.ResourceServices, "count/services", corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers)
}
func (serviceQuota) matchesScope(corev1.ScopedResourceSelectorRequirement, runtime.Object) (bool, error) {
	return false, nil
}
func (serviceQuota) constraints([]corev1.ResourceName, runtime.Object) error { return nil }
func (serviceQuota) usage(obj runtime.Object) (corev1.ResourceList, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T for a service quota", obj)
	}
	out := corev1.ResourceList{corev1.ResourceServices: one.DeepCopy(), "count/services": one.DeepCopy()}
	ports := int64(len(svc.Spec.Ports))
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
	case corev1.ServiceTypeLoadBalancer:
		if svc.Spec.AllocateLoadBalancerNodePorts != nil && !*svc.Spec.AllocateLoadBalancerNodePorts {
			n := int64(0)
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					n++
				}
			}
			ports = n
		}
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
		out[corev1.ResourceServicesLoadBalancers] = one.DeepCopy()
	}
	return out, nil
}

// storageClassSuffix joins a storage class and a resource in per-class quota names
// (gold.storageclass.storage.k8s.io/requests.storage).
const storageClassSuffix = ".storageclass.storage.k8s.io/"

// pvcQuota is upstream's persistent volume claim evaluator: persistentvolumeclaims,
// count/persistentvolumeclaims and requests.storage, overall and per storage class.
type pvcQuota struct{}

func (pvcQuota) handles(a *admission.Attributes) bool {
	return (a.Operation == admission.Create || a.Operation == admission.Update) && a.Subresource == ""
}
func (pvcQuota) matchingResources(names []corev1.ResourceName) []corev1.ResourceName {
	out := intersect(names, corev1.ResourcePersistentVolumeClaims, "count/persistentvolumeclaims", corev1.ResourceRequestsStorage)
	for _, n := range names {
		if s := string(n); strings.Contains(s, storageClassSuffix) &&
			(strings.HasSuffix(s, storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims)) || strings.HasSuffix(s, storageClassSuffix+string(corev1.ResourceRequestsStorage))) {
			out = append(out, n)
		}
	}
	return out
}
func (pvcQuota) matchesScope(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok || sel.ScopeName != corev1.ResourceQuotaScopeVolumeAttributesClass {
		return false, nil
	}
	class := ""
	if pvc.Spec.VolumeAttributesClassName != nil {
		class = *pvc.Spec.VolumeAttributesClassName
	}
	if sel.Operator == corev1.ScopeSelectorOpExists {
		return class != "", nil
	}
	return scopeSelectorMatches(sel, class)
}
func (pvcQuota) constraints([]corev1.ResourceName, runtime.Object) error { return nil }
func (pvcQuota) usage(obj runtime.Object) (corev1.ResourceList, error) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T for a persistent volume claim quota", obj)
	}
	out := corev1.ResourceList{corev1.ResourcePersistentVolumeClaims: one.DeepCopy(), "count/persistentvolumeclaims": one.DeepCopy()}
	class := pvc.Annotations[corev1.BetaStorageClassAnnotation]
	if class == "" && pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	}
	if class != "" {
		out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims))] = one.DeepCopy()
	}
	var storage *resource.Quantity
	if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		storage = &q
	}
	if q, ok := pvc.Status.AllocatedResources[corev1.ResourceStorage]; ok && (storage == nil || q.Cmp(*storage) > 0) {
		storage = &q
	}
	if storage != nil {
		out[corev1.ResourceRequestsStorage] = storage.DeepCopy()
		if class != "" {
			out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourceRequestsStorage))] = storage.DeepCopy()
		}
	}
	return out, nil
}

// scopeSelectorMatches evaluates a scope selector's In/NotIn/Exists/DoesNotExist on value,
// as upstream's ScopedResourceSelectorRequirementsAsSelector does with a one-label set.
func scopeSelectorMatches(sel corev1.ScopedResourceSelectorRequirement, value string) (bool, error) {
	var op selection.Operator
	switch sel.Operator {
	case corev1.ScopeSelectorOpIn:
		op = selection.In
	case corev1.ScopeSelectorOpNotIn:
		op = selection.NotIn
	case corev1.ScopeSelectorOpExists:
		op = selection.Exists
	case corev1.ScopeSelectorOpDoesNotExist:
		op = selection.DoesNotExist
	default:
		return false, fmt.Errorf("%q is not a valid scope selector operator", sel.Operator)
	}
	r, err := labels.NewRequirement(string(sel.ScopeName), op, sel.Values)
	if err != nil {
		return false, err
	}
	return labels.NewSelector().Add(*r).Matches(labels.Set{string(sel.ScopeName): value}), nil
}

// podQuota is upstream's pod evaluator: count/pods always; pods and the compute resources
// (cpu, memory, ephemeral-storage as requests.* and limits.*, hugepages, extended
// resources' requests.*) while the pod is not terminal; on create, and on a resize.
type podQuota struct{ now func() time.Time }

var podQuotaResources = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourcePods, "count/pods",
}

// podQuotaValidation are the resources each container must name when a quota tracks them
// (upstream's backward-compatible constraint).
var podQuotaValidation = sets.New[corev1.ResourceName](corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory)

func (podQuota) handles(a *admission.Attributes) bool {
	switch a.Subresource {
	case "":
		return a.Operation == admission.Create
	case "resize":
		return a.Operation == admission.Update
	}
	return false
}

func (podQuota) matchingResources(names []corev1.ResourceName) []corev1.ResourceName {
	out := intersect(names, podQuotaResources...)
	for _, n := range names {
		s := string(n)
		if strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix) ||
			isExtendedResourceNameForQuota(n) {
			out = append(out, n)
		}
	}
	return out
}

func isExtendedResourceName(n corev1.ResourceName) bool {
	s := string(n)
	if strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) || !strings.Contains(s, "/") {
		return false
	}
	domain := s[:strings.Index(s, "/")]
	return domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}

func isExtendedResourceNameForQuota(n corev1.ResourceName) bool {
	s := string(n)
	return strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) && isExtendedResourceName(corev1.ResourceName(strings.TrimPrefix(s, corev1.DefaultResourceRequestsPrefix)))
}

func (podQuota) matchesScope(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return false, fmt.Errorf("unexpected object %T for a pod quota", obj)
	}
	switch sel.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return podTerminating(pod), nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return !podTerminating(pod), nil
	case corev1.ResourceQuotaScopeBestEffort:
		return podBestEffort(pod), nil
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !podBestEffort(pod), nil
	case corev1.ResourceQuotaScopePriorityClass:
		if sel.Operator == corev1.ScopeSelectorOpExists {
			return pod.Spec.PriorityClassName != "", nil
		}
		return scopeSelectorMatches(sel, pod.Spec.PriorityClassName)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(pod), nil
	}
	return false, nil
}

func podTerminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

// podBestEffort is QoS class BestEffort: no container asks for or limits cpu or memory.
func podBestEffort(pod *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
					if q, ok := l[n]; ok && q.Sign() > 0 {
						return false
					}
				}
			}
		}
	}
	return true
}

func crossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	cross := func(t corev1.PodAffinityTerm) bool { return len(t.Namespaces) > 0 || t.NamespaceSelector != nil }
	var terms []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	for _, t := range terms {
		if cross(t) {
			return true
		}
	}
	return false
}

// constraints is upstream's: when a quota tracks cpu or memory, every container must name it.
func (podQuota) constraints(required []corev1.ResourceName, obj runtime.Object) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("unexpected object %T for a pod quota", obj)
	}
	req := sets.New(required...).Intersection(podQuotaValidation)
	missing := map[corev1.ResourceName]sets.Set[string]{}
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			have := sets.New(quotaNames(podComputeUsage(c.Resources.Requests, c.Resources.Limits))...)
			for _, r := range req.Difference(have).UnsortedList() {
				if missing[r] == nil {
					missing[r] = sets.New[string]()
				}
				missing[r].Insert(c.Name)
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]corev1.ResourceName, 0, len(missing))
	for r := range missing {
		names = append(names, r)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	var parts []string
	for _, r := range names {
		parts = append(parts, fmt.Sprintf("must specify %s for: %s", r, strings.Join(sets.List(missing[r]), ",")))
	}
	return errors.New(strings.Join(parts, "; "))
}

func (p podQuota) usage(obj runtime.Object) (corev1.ResourceList, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T for a pod quota", obj)
	}
	out := corev1.ResourceList{"count/pods": one.DeepCopy()}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return out, nil
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		end := pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
		if p.now().After(end) {
			return out, nil
		}
	}
	return quotaAdd(out, podComputeUsage(podRequests(pod), podLimits(pod))), nil
}

// podComputeUsage is upstream's podComputeUsageHelper.
func podComputeUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: one.DeepCopy()}
	pairs := []struct{ plain, req, lim corev1.ResourceName }{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	}
	for _, p := range pairs {
		if q, ok := requests[p.plain]; ok {
			out[p.plain] = q.DeepCopy()
			out[p.req] = q.DeepCopy()
		}
		if q, ok := limits[p.plain]; ok {
			out[p.lim] = q.DeepCopy()
		}
	}
	for n, q := range requests {
		if strings.HasPrefix(string(n), corev1.ResourceHugePagesPrefix) {
			out[n] = q.DeepCopy()
			out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(n))] = q.DeepCopy()
		}
		if isExtendedResourceName(n) {
			out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(n))] = q.DeepCopy()
		}
	}
	return out
}
