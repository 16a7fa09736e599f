// Package core holds the core ("") API group's kinds: pods (and their spec validation,
// bindings, eviction, ephemeral containers, resize), services (and the ClusterIP and NodePort allocator),
// namespaces, nodes, endpoints, config maps, secrets, events (and events.k8s.io), volumes
// and claims, quotas and limits, replication controllers, component statuses.
// Each kind is one file whose XxxKind function the controlplane lists.
package core

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podStatusUpdate is what a pod's /status write (its node agent's) keeps of the stored pod,
// as upstream's status strategy: the spec; the owner references (old kubelets corrupted
// them); the QoS class, set at creation, when the write leaves it out; the observed
// generations it leaves at 0. Its podIP and podIPs are read as upstream reads a v1 pod
// (podIP wins).
func podStatusUpdate(pod, old *corev1.Pod) {
	pod.Spec = old.Spec
	pod.OwnerReferences = old.OwnerReferences
	if pod.Status.QOSClass == "" {
		pod.Status.QOSClass = old.Status.QOSClass
	}
	keepObservedGenerations(&pod.Status, &old.Status)
	normalizePodIPs(&pod.Status)
}

// keepObservedGenerations keeps old's observedGeneration, of the status and of each
// condition (the n-th condition of a type takes the n-th old one's), where st has none.
func keepObservedGenerations(st, old *corev1.PodStatus) {
	if st.ObservedGeneration == 0 {
		st.ObservedGeneration = old.ObservedGeneration
	}
	oldGens := map[corev1.PodConditionType][]int64{}
	for _, c := range old.Conditions {
		oldGens[c.Type] = append(oldGens[c.Type], c.ObservedGeneration)
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		var gen int64
		if gens := oldGens[c.Type]; len(gens) > 0 {
			gen, oldGens[c.Type] = gens[0], gens[1:]
		}
		if c.ObservedGeneration == 0 {
			c.ObservedGeneration = gen
		}
	}
}

// withPodGeneration makes a pods subresource's merge move the generation when it changes
// the spec, as the main resource's SpecChanged does (upstream's ephemeralcontainers and
// resize strategies).
func withPodGeneration(merge registry.MergeFunc) registry.MergeFunc {
	return func(current, request runtime.Object) (runtime.Object, field.ErrorList, error) {
		before := current.(*corev1.Pod).Spec.DeepCopy()
		out, errs, err := merge(current, request)
		if pod, ok := out.(*corev1.Pod); ok && err == nil && len(errs) == 0 && !apiequality.Semantic.DeepEqual(pod.Spec, *before) {
			pod.Generation++
		}
		return out, errs, err
	}
}

func PodsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Version: "v1", Kind: "Pod", ListKind: "PodList", Plural: "pods", Singular: "pod",
			ShortNames: []string{"po"}, Categories: []string{"all"}, Namespaced: true},
		New:     func() runtime.Object { return &corev1.Pod{} },
		NewList: func() runtime.Object { return &corev1.PodList{} },
		Status:  true,
		Strategy: registry.Strategy{
			GracePeriod:            podGracePeriod,
			PrepareForUpdate:       registry.Rule(func(pod, old *corev1.Pod) { pod.Status = old.Status }),
			PrepareForStatusUpdate: registry.Rule(podStatusUpdate),
			SpecChanged:            registry.Changed(func(pod *corev1.Pod) corev1.PodSpec { return pod.Spec }),
			PrepareForCreate: func(obj runtime.Object) {
				pod := obj.(*corev1.Pod)
				pod.Status = corev1.PodStatus{Phase: corev1.PodPending}
			},
			// The default ServiceAccount is the ServiceAccount admission plugin's, not a
			// default: with the plugin off, upstream leaves serviceAccountName empty.
			Default: func(obj runtime.Object) {
				pod := obj.(*corev1.Pod)
				DefaultPodSpec(&pod.Spec)
				defaultRequestsFromLimits(pod.Spec.InitContainers)
				defaultRequestsFromLimits(pod.Spec.Containers)
				// SetDefaults_Pod: a host-network pod's host ports are its container ports
				if pod.Spec.HostNetwork {
					for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
						for i := range cs {
							for j := range cs[i].Ports {
								if cs[i].Ports[j].HostPort == 0 {
									cs[i].Ports[j].HostPort = cs[i].Ports[j].ContainerPort
								}
							}
						}
					}
				}
				if pod.Spec.EnableServiceLinks == nil {
					t := true
					pod.Spec.EnableServiceLinks = &t
				}
				defaultPodLevelResources(&pod.Spec)
				if pod.Status.QOSClass == "" {
					pod.Status.QOSClass = podQOS(&pod.Spec)
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validatePodSpec(&obj.(*corev1.Pod).Spec, field.NewPath("spec"), podSpecOptions{resourceIsPod: true})
			},
			// upstream's ValidatePodCreate
			ValidateNew: func(obj runtime.Object) field.ErrorList {
				spec := &obj.(*corev1.Pod).Spec
				p := field.NewPath("spec")
				var errs field.ErrorList
				errs = append(errs, initRestartContainerErrs(spec.InitContainers, p.Child("initContainers"))...)
				if len(spec.EphemeralContainers) > 0 {
					errs = append(errs, field.Forbidden(p.Child("ephemeralContainers"), "cannot be set on create"))
				}
				if spec.NodeName != "" && len(spec.SchedulingGates) != 0 {
					errs = append(errs, field.Forbidden(p.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
				}
				return errs
			},
			// The status IPs (a /status write's; on other updates they are the stored ones)
			// and what may change in the spec.
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
				return append(validatePodStatusIPs(pod, oldPod), validatePodSpecUpdate(pod, oldPod)...)
			},
			Fields: func(obj runtime.Object) fields.Set {
				pod := obj.(*corev1.Pod)
				return fields.Set{
					"spec.nodeName":            pod.Spec.NodeName,
					"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
					"spec.schedulerName":       pod.Spec.SchedulerName,
					"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
					"spec.hostNetwork":         strconv.FormatBool(pod.Spec.HostNetwork),
					"status.phase":             string(pod.Status.Phase),
					"status.podIP":             pod.Status.PodIP,
					"status.nominatedNodeName": pod.Status.NominatedNodeName,
				}
			},
		},
	}
}

// validatePodSpecUpdate is what upstream's ValidatePodUpdate lets change in a pod's spec.
func validatePodSpecUpdate(pod, oldPod *corev1.Pod) field.ErrorList {
	p := field.NewPath("spec")
	if len(pod.Spec.Containers) != len(oldPod.Spec.Containers) {
		return field.ErrorList{field.Forbidden(p.Child("containers"), "pod updates may not add or remove containers")}
	}
	// Only images (and a few scheduling fields upstream allows) may change.
	mutated := oldPod.Spec.DeepCopy()
	for i := range mutated.Containers {
		mutated.Containers[i].Image = pod.Spec.Containers[i].Image
	}
	for i := range mutated.InitContainers {
		if i < len(pod.Spec.InitContainers) {
			mutated.InitContainers[i].Image = pod.Spec.InitContainers[i].Image
		}
	}
	mutated.ActiveDeadlineSeconds = pod.Spec.ActiveDeadlineSeconds
	mutated.Tolerations = pod.Spec.Tolerations
	mutated.TerminationGracePeriodSeconds = pod.Spec.TerminationGracePeriodSeconds
	if mutated.NodeName == "" {
		mutated.NodeName = pod.Spec.NodeName
	}
	if !apiequality.Semantic.DeepEqual(*mutated, pod.Spec) {
		return field.ErrorList{field.Forbidden(p, "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)")}
	}
	return nil
}

// BindingStore serves pods/binding: it assigns a pod to a node once.
type BindingStore struct{ pods *registry.Store }

func (b *BindingStore) New() runtime.Object { return &corev1.Binding{} }
func (b *BindingStore) Kind() schema.GroupVersionKind {
	return corev1.SchemeGroupVersion.WithKind("Binding")
}

func (b *BindingStore) Create(ctx context.Context, ns, name string, obj runtime.Object, opts *metav1.CreateOptions) (runtime.Object, error) {
	binding, ok := obj.(*corev1.Binding)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Binding: %T", obj))
	}
	if name == "" {
		name = binding.Name
	}
	if binding.Name != "" && binding.Name != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", binding.Name, name))
	}
	if binding.Target.Name == "" {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, name, field.ErrorList{field.Required(field.NewPath("target", "name"), "")})
	}
	dry := opts != nil && registry.DryRun(opts.DryRun)
	// A binding writes the node name, its annotations and labels, the PodScheduled condition
	// and clears the nominated node, nothing else: as upstream's, it is no update of the
	// pod's spec (its generation stays).
	_, _, err := b.pods.UpdateSubresource(ctx, ns, name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		pod := cur.(*corev1.Pod)
		if err := b.bindable(ns, binding, pod); err != nil {
			return nil, err
		}
		pod.Spec.NodeName = binding.Target.Name
		pod.Status.NominatedNodeName = "" // upstream's ClearingNominatedNodeNameAfterBinding, on in 1.37
		pod.Annotations = withEntries(pod.Annotations, binding.Annotations)
		for _, k := range legacyInitContainerAnnotations {
			delete(pod.Annotations, k)
		}
		// The Binding's labels overwrite the pod's (upstream's, with its
		// PodTopologyLabelsAdmission on by default): the PodTopologyLabels plugin puts the
		// node's topology labels there, and a scheduler may add its own.
		pod.Labels = withEntries(pod.Labels, binding.Labels)
		setPodCondition(&pod.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
		return pod, nil
	}, &metav1.UpdateOptions{DryRun: dryIf(dry)}, mergeBinding)
	if err != nil {
		return nil, err
	}
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: 201}, nil
}

// bindingResource names the refusals of a binding (upstream's pods/binding conflicts).
var bindingResource = schema.GroupResource{Resource: "pods/binding"}

// bindable refuses binding pod as upstream's binding store does: the Binding's UID and
// resourceVersion are preconditions on the stored pod (failing as upstream's storage
// does), and a pod being deleted, already on a node or with scheduling gates is a conflict.
func (b *BindingStore) bindable(ns string, binding *corev1.Binding, pod *corev1.Pod) error {
	if binding.UID != "" && binding.UID != pod.UID {
		return b.pods.PreconditionFailed(ns, pod.Name, fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", binding.UID, pod.UID))
	}
	if rv := binding.ResourceVersion; rv != "" && rv != pod.ResourceVersion {
		return b.pods.PreconditionFailed(ns, pod.Name, fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", rv, pod.ResourceVersion))
	}
	switch {
	case pod.DeletionTimestamp != nil:
		return apierrors.NewConflict(bindingResource, pod.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
	case pod.Spec.NodeName != "":
		return apierrors.NewConflict(bindingResource, pod.Name, fmt.Errorf("pod %v is already assigned to node %q", pod.Name, pod.Spec.NodeName))
	case len(pod.Spec.SchedulingGates) != 0:
		return apierrors.NewConflict(bindingResource, pod.Name, fmt.Errorf("pod %v has non-empty .spec.schedulingGates", pod.Name))
	}
	return nil
}

// legacyInitContainerAnnotations are the alpha and beta init-container annotations
// upstream's binding drops from the pod (its DropInitContainerAnnotations).
var legacyInitContainerAnnotations = []string{
	"pod.beta.kubernetes.io/init-containers", "pod.alpha.kubernetes.io/init-containers",
	"pod.beta.kubernetes.io/init-container-statuses", "pod.alpha.kubernetes.io/init-container-statuses",
}

// setPodCondition sets c on status as upstream's podutil.UpdatePodCondition: its
// lastTransitionTime is now unless a condition of its type had the same status.
func setPodCondition(status *corev1.PodStatus, c corev1.PodCondition) {
	c.LastTransitionTime = metav1.Now()
	for i, old := range status.Conditions {
		if old.Type == c.Type {
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			status.Conditions[i] = c
			return
		}
	}
	status.Conditions = append(status.Conditions, c)
}

// mergeBinding takes of a binding's write the node name, annotations, labels, the
// nominated node and the conditions.
func mergeBinding(current, request runtime.Object) (runtime.Object, field.ErrorList, error) {
	pod, req := current.(*corev1.Pod), request.(*corev1.Pod)
	pod.Spec.NodeName, pod.Annotations, pod.Labels = req.Spec.NodeName, req.Annotations, req.Labels
	pod.Status.NominatedNodeName, pod.Status.Conditions = req.Status.NominatedNodeName, req.Status.Conditions
	return pod, nil, nil
}

// withEntries is m with add's entries set, overwriting; m itself when add is empty.
func withEntries(m, add map[string]string) map[string]string {
	for k, v := range add {
		if m == nil {
			m = map[string]string{}
		}
		m[k] = v
	}
	return m
}

func dryIf(dry bool) []string {
	if dry {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// podGracePeriod is how long a pod's deletion waits for its node agent, as upstream's pod
// strategy decides it: the request's grace period, else the pod's
// terminationGracePeriodSeconds; none for a pod on no node or one that has finished, since
// no agent would confirm it.
func podGracePeriod(obj runtime.Object, opts *metav1.DeleteOptions) int64 {
	pod := obj.(*corev1.Pod)
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if opts != nil && opts.GracePeriodSeconds != nil {
		grace = *opts.GracePeriodSeconds
	}
	if grace < 0 {
		grace = 1 // a negative period is the shortest graceful one, as upstream
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	return grace
}

// defaultRequestsFromLimits sets a pod's container requests to their limits where only the
// limit is given, as upstream's SetDefaults_Pod (pods only, not templates).
func defaultRequestsFromLimits(cs []corev1.Container) {
	for i := range cs {
		r := &cs[i].Resources
		for name, q := range r.Limits {
			if _, ok := r.Requests[name]; ok {
				continue
			}
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests[name] = q.DeepCopy()
		}
	}
}
