package plugins

import (
	"context"
	"fmt"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/request"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// PodSecurity is upstream's PodSecurity plugin for pods: the namespace's
// pod-security.kubernetes.io/{enforce,warn,audit}[-version] labels pick a level
// (privileged, baseline, restricted) per mode; a pod that violates the enforce level is
// refused, the warn level's violations go to the client as warnings, the audit level's to
// the audit annotations. The levels themselves are k8s.io/pod-security-admission's policy
// package. Namespaces with invalid labels are refused (422). Not done: pod templates of
// workload resources (upstream warns and audits them), exemptions, and the warnings for
// existing pods when a namespace's enforce label changes.
type PodSecurity struct {
	admission.Operations
	namespaces *admission.Cache[*corev1.Namespace]
	evaluator  policy.Evaluator
}

// NewPodSecurity reads namespaces from src.
func NewPodSecurity(src admission.Source) (*PodSecurity, error) {
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, fmt.Errorf("pod security: %w", err)
	}
	return &PodSecurity{Operations: admission.Operations{admission.Create, admission.Update},
		namespaces: admission.NewCache[*corev1.Namespace](src, nil), evaluator: ev}, nil
}

// Start fills the namespace cache.
func (p *PodSecurity) Start(ctx context.Context) { p.namespaces.Start(ctx) }

// defaultPolicy is upstream's default configuration: privileged:latest for every mode.
var defaultPolicy = psaapi.Policy{
	Enforce: psaapi.LevelVersion{Level: psaapi.LevelPrivileged, Version: psaapi.LatestVersion()},
	Audit:   psaapi.LevelVersion{Level: psaapi.LevelPrivileged, Version: psaapi.LatestVersion()},
	Warn:    psaapi.LevelVersion{Level: psaapi.LevelPrivileged, Version: psaapi.LatestVersion()},
}

// Validate checks namespaces' labels and pods against their namespace's policy.
func (p *PodSecurity) Validate(ctx context.Context, a *admission.Attributes) error {
	switch {
	case a.Resource.Group == "" && a.Resource.Resource == "namespaces" && a.Subresource == "":
		ns, ok := a.Object.(*corev1.Namespace)
		if !ok {
			return nil
		}
		if _, errs := psaapi.PolicyToEvaluate(ns.Labels, defaultPolicy); len(errs) > 0 {
			return apierrors.NewInvalid(a.Kind.GroupKind(), a.Name, errs)
		}
		return nil
	case a.Resource.Group == "" && a.Resource.Resource == "pods" && (a.Subresource == "" || a.Subresource == "ephemeralcontainers"):
	default:
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	if a.Operation == admission.Update && a.Subresource == "" {
		if old, ok := a.OldObject.(*corev1.Pod); ok && !significantUpdate(pod, old) {
			return nil
		}
	}
	var labels map[string]string
	if ns, ok := p.namespaces.Get("", a.Namespace); ok {
		labels = ns.Labels
	}
	pol, errs := psaapi.PolicyToEvaluate(labels, defaultPolicy)
	if len(errs) > 0 {
		request.AddAnnotation(ctx, "pod-security.kubernetes.io/error", fmt.Sprintf("Failed to parse policy: %v", errs.ToAggregate()))
	}
	results := map[psaapi.LevelVersion]policy.AggregateCheckResult{}
	eval := func(lv psaapi.LevelVersion) policy.AggregateCheckResult {
		if r, ok := results[lv]; ok {
			return r
		}
		r := policy.AggregateCheckResults(p.evaluator.EvaluatePod(lv, &pod.ObjectMeta, &pod.Spec))
		results[lv] = r
		return r
	}
	request.AddAnnotation(ctx, "pod-security.kubernetes.io/"+psaapi.EnforcedPolicyAnnotationKey, pol.Enforce.String())
	enforced := eval(pol.Enforce)
	if r := eval(pol.Audit); !r.Allowed {
		request.AddAnnotation(ctx, "pod-security.kubernetes.io/"+psaapi.AuditViolationsAnnotationKey,
			fmt.Sprintf("would violate PodSecurity %q: %s", pol.Audit.String(), r.ForbiddenDetail()))
	}
	if !enforced.Allowed {
		return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, fmt.Errorf("violates PodSecurity %q: %s", pol.Enforce.String(), enforced.ForbiddenDetail()))
	}
	if r := eval(pol.Warn); !r.Allowed {
		request.AddWarning(ctx, fmt.Sprintf("would violate PodSecurity %q: %s", pol.Warn.String(), r.ForbiddenDetail()))
	}
	return nil
}

// significantUpdate: a pod update is checked again unless it only changes metadata, status
// or container images.
func significantUpdate(pod, old *corev1.Pod) bool {
	a, b := pod.Spec.DeepCopy(), old.Spec.DeepCopy()
	for _, s := range []*corev1.PodSpec{a, b} {
		for i := range s.Containers {
			s.Containers[i].Image = ""
		}
		for i := range s.InitContainers {
			s.InitContainers[i].Image = ""
		}
	}
	return !apiequality.Semantic.DeepEqual(a, b)
}
