package plugins

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	"github.com/hacp/hacp/pkg/apiserver/request"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	psaconfig "k8s.io/pod-security-admission/admission/api"
	psaload "k8s.io/pod-security-admission/admission/api/load"
	psavalidation "k8s.io/pod-security-admission/admission/api/validation"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// PodSecurity is upstream's PodSecurity plugin for pods: the namespace's
// pod-security.kubernetes.io/{enforce,warn,audit}[-version] labels pick a level
// (privileged, baseline, restricted) per mode; a pod that violates the enforce level is
// refused, the warn level's violations go to the client as warnings, the audit level's to
// the audit annotations. Workload resources' pod templates (Deployments, ReplicaSets,
// StatefulSets, DaemonSets, Jobs, CronJobs, ReplicationControllers, PodTemplates) get the
// warn and audit levels only, never enforce, as upstream. A namespace update that tightens
// its enforce level warns about the existing pods that would violate it. The levels
// themselves are k8s.io/pod-security-admission's policy package. Namespaces with invalid
// labels are refused (422). Not done: exemptions (upstream's admission configuration file).
type PodSecurity struct {
	admission.Operations
	namespaces *informer.Informer[*corev1.Namespace]
	evaluator  policy.Evaluator
	// ListPods, when set, lists a namespace's pods for the enforce-label-change warnings.
	ListPods func(ctx context.Context, ns string) ([]*corev1.Pod, error)

	defaults psaapi.Policy // for namespaces without labels
	exempt   psaconfig.PodSecurityExemptions
}

// ConfigurePodSecurity reads the plugin's PodSecurityConfiguration
// (pod-security.admission.config.k8s.io/v1, from --admission-control-config-file) and checks
// it as upstream does.
func ConfigurePodSecurity(data []byte) (*psaconfig.PodSecurityConfiguration, error) {
	cfg, err := psaload.LoadFromData(data)
	if err != nil {
		return nil, err
	}
	if errs := psavalidation.ValidatePodSecurityConfiguration(cfg); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return cfg, nil
}

// Configure sets the default levels and the exemptions (nil: upstream's defaults, none).
func (p *PodSecurity) Configure(cfg *psaconfig.PodSecurityConfiguration) error {
	if cfg == nil {
		return nil
	}
	pol, err := psaconfig.ToPolicy(cfg.Defaults)
	if err != nil {
		return err
	}
	p.defaults, p.exempt = pol, cfg.Exemptions
	return nil
}

// exemption is why a request is exempt ("namespace", "user", "runtimeClass"), "" if it is not.
func (p *PodSecurity) exemption(a *admission.Attributes, spec *corev1.PodSpec) string {
	switch {
	case a.Namespace != "" && slices.Contains(p.exempt.Namespaces, a.Namespace):
		return "namespace"
	case a.UserName() != "" && slices.Contains(p.exempt.Usernames, a.UserName()):
		return "user"
	case spec != nil && spec.RuntimeClassName != nil && *spec.RuntimeClassName != "" && slices.Contains(p.exempt.RuntimeClasses, *spec.RuntimeClassName):
		return "runtimeClass"
	}
	return ""
}

// exempted records an exemption in the audit annotations.
func (p *PodSecurity) exempted(ctx context.Context, a *admission.Attributes, spec *corev1.PodSpec) bool {
	why := p.exemption(a, spec)
	if why != "" {
		request.AddAnnotation(ctx, "pod-security.kubernetes.io/"+psaapi.ExemptionReasonAnnotationKey, why)
	}
	return why != ""
}

// Upstream's defaults for checking existing pods against a new enforce level.
const (
	namespaceMaxPodsToCheck  = 3000
	namespacePodCheckTimeout = time.Second
)

// NewPodSecurity reads namespaces from the shared informers.
func NewPodSecurity(f *informer.Factory) (*PodSecurity, error) {
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, fmt.Errorf("pod security: %w", err)
	}
	return &PodSecurity{Operations: admission.Operations{admission.Create, admission.Update},
		namespaces: informer.For[*corev1.Namespace](f, schema.GroupResource{Resource: "namespaces"}), evaluator: ev, defaults: defaultPolicy}, nil
}

// Start waits until the namespace informer holds its first list.
func (p *PodSecurity) Start(ctx context.Context) { _ = p.namespaces.WaitForSync(ctx) }

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
		newPolicy, errs := psaapi.PolicyToEvaluate(ns.Labels, p.defaults)
		if len(errs) > 0 {
			return apierrors.NewInvalid(a.Kind.GroupKind(), a.Name, errs)
		}
		if old, ok := a.OldObject.(*corev1.Namespace); ok && a.Operation == admission.Update {
			oldPolicy, _ := psaapi.PolicyToEvaluate(old.Labels, p.defaults)
			for _, w := range p.enforceChangeWarnings(ctx, ns.Name, newPolicy.Enforce, oldPolicy.Enforce) {
				request.AddWarning(ctx, w)
			}
		}
		return nil
	case a.Resource.Group == "" && a.Resource.Resource == "pods" && (a.Subresource == "" || a.Subresource == "ephemeralcontainers"):
	case a.Subresource == "" && podTemplateResources[a.Resource.GroupResource()]:
		return p.validateTemplate(ctx, a)
	default:
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	if p.exempted(ctx, a, &pod.Spec) {
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
	pol, errs := psaapi.PolicyToEvaluate(labels, p.defaults)
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

// podTemplateResources are the workload resources whose pod templates upstream evaluates.
var podTemplateResources = map[schema.GroupResource]bool{
	{Resource: "podtemplates"}: true, {Resource: "replicationcontrollers"}: true,
	{Group: "apps", Resource: "replicasets"}: true, {Group: "apps", Resource: "deployments"}: true,
	{Group: "apps", Resource: "statefulsets"}: true, {Group: "apps", Resource: "daemonsets"}: true,
	{Group: "batch", Resource: "jobs"}: true, {Group: "batch", Resource: "cronjobs"}: true,
}

// podTemplate is upstream's DefaultPodSpecExtractor: the object's pod template, nil for none.
func podTemplate(obj runtime.Object) *corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *corev1.PodTemplate:
		return &o.Template
	case *corev1.ReplicationController:
		return o.Spec.Template
	case *appsv1.ReplicaSet:
		return &o.Spec.Template
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.DaemonSet:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	case *batchv1.Job:
		return &o.Spec.Template
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template
	}
	return nil
}

// validateTemplate is upstream's ValidatePodController: a workload's pod template against
// the namespace's audit and warn levels (never enforce: the pods it makes are checked).
func (p *PodSecurity) validateTemplate(ctx context.Context, a *admission.Attributes) error {
	if p.exempted(ctx, a, nil) { // namespace or user; a runtime class once the template is known
		return nil
	}
	var labels map[string]string
	if ns, ok := p.namespaces.Get("", a.Namespace); ok {
		labels = ns.Labels
	}
	pol, errs := psaapi.PolicyToEvaluate(labels, p.defaults)
	if len(errs) == 0 && pol.Warn.Level == psaapi.LevelPrivileged && pol.Audit.Level == psaapi.LevelPrivileged {
		return nil
	}
	tmpl := podTemplate(a.Object)
	if tmpl == nil || p.exempted(ctx, a, &tmpl.Spec) {
		return nil
	}
	if len(errs) > 0 {
		request.AddAnnotation(ctx, "pod-security.kubernetes.io/error", fmt.Sprintf("Failed to parse policy: %v", errs.ToAggregate()))
	}
	audit := policy.AggregateCheckResults(p.evaluator.EvaluatePod(pol.Audit, &tmpl.ObjectMeta, &tmpl.Spec))
	if !audit.Allowed {
		request.AddAnnotation(ctx, "pod-security.kubernetes.io/"+psaapi.AuditViolationsAnnotationKey,
			fmt.Sprintf("would violate PodSecurity %q: %s", pol.Audit.String(), audit.ForbiddenDetail()))
	}
	warn := audit
	if pol.Warn != pol.Audit {
		warn = policy.AggregateCheckResults(p.evaluator.EvaluatePod(pol.Warn, &tmpl.ObjectMeta, &tmpl.Spec))
	}
	if !warn.Allowed {
		request.AddWarning(ctx, fmt.Sprintf("would violate PodSecurity %q: %s", pol.Warn.String(), warn.ForbiddenDetail()))
	}
	return nil
}

// enforceChangeWarnings is upstream's check of a namespace's existing pods when its enforce
// level tightens: one warning per distinct violation, naming the first pod (and how many
// others), after "existing pods in namespace ... violate the new PodSecurity enforce level".
func (p *PodSecurity) enforceChangeWarnings(ctx context.Context, ns string, newLV, oldLV psaapi.LevelVersion) []string {
	if newLV == oldLV || newLV.Level == psaapi.LevelPrivileged || p.ListPods == nil || slices.Contains(p.exempt.Namespaces, ns) {
		return nil
	}
	if newLV.Version == oldLV.Version && psaapi.CompareLevels(newLV.Level, oldLV.Level) < 1 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, namespacePodCheckTimeout)
	defer cancel()
	pods, err := p.ListPods(ctx, ns)
	if err != nil {
		return []string{"failed to list pods while checking new PodSecurity enforce level"}
	}
	// One pod per controller first, as upstream's prioritizePods.
	var first, dups []*corev1.Pod
	seen := map[types.UID]bool{}
	for _, pod := range pods {
		ref := metav1.GetControllerOfNoCopy(pod)
		switch {
		case ref == nil:
			first = append(first, pod)
		case seen[ref.UID]:
			dups = append(dups, pod)
		default:
			seen[ref.UID] = true
			first = append(first, pod)
		}
	}
	pods = append(first, dups...)
	total := len(pods)
	if len(pods) > namespaceMaxPodsToCheck {
		pods = pods[:namespaceMaxPodsToCheck]
	}
	type count struct {
		name string
		n    int
	}
	counts := map[string]*count{}
	var reasons []string
	checked := len(pods)
	for i, pod := range pods {
		if rc := pod.Spec.RuntimeClassName; rc != nil && slices.Contains(p.exempt.RuntimeClasses, *rc) {
			continue
		}
		r := policy.AggregateCheckResults(p.evaluator.EvaluatePod(newLV, &pod.ObjectMeta, &pod.Spec))
		if !r.Allowed {
			reason := r.ForbiddenReason()
			c, ok := counts[reason]
			if !ok {
				c = &count{name: pod.Name}
				counts[reason] = c
				reasons = append(reasons, reason)
			} else if pod.Name < c.name {
				c.name = pod.Name
			}
			c.n++
		}
		if ctx.Err() != nil {
			checked = i + 1
			break
		}
	}
	var out []string
	if checked < total {
		out = append(out, fmt.Sprintf("new PodSecurity enforce level only checked against the first %d of %d existing pods", checked, total))
	}
	if len(reasons) > 0 {
		out = append(out, fmt.Sprintf("existing pods in namespace %q violate the new PodSecurity enforce level %q", ns, newLV.String()))
	}
	for i, r := range reasons {
		c := counts[r]
		switch c.n {
		case 1:
			reasons[i] = fmt.Sprintf("%s: %s", c.name, r)
		case 2:
			reasons[i] = fmt.Sprintf("%s (and 1 other pod): %s", c.name, r)
		default:
			reasons[i] = fmt.Sprintf("%s (and %d other pods): %s", c.name, c.n-1, r)
		}
	}
	sort.Strings(reasons)
	return append(out, reasons...)
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
