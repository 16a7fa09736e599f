package webhook

import (
	"slices"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// RuleMatches is upstream's rules.Matcher: does one rule cover the request's operation,
// group, version, resource (with subresource) and scope?
func RuleMatches(r admissionregv1.RuleWithOperations, a *admission.Attributes) bool {
	return opMatches(r.Operations, a.Operation) &&
		oneOf(r.APIGroups, a.Resource.Group) &&
		oneOf(r.APIVersions, a.Resource.Version) &&
		resourceMatches(r.Resources, a.Resource.Resource, a.Subresource) &&
		scopeMatches(r.Scope, a)
}

func opMatches(ops []admissionregv1.OperationType, op admission.Operation) bool {
	for _, o := range ops {
		if o == admissionregv1.OperationAll || string(o) == string(op) {
			return true
		}
	}
	return false
}

func oneOf(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}

// resourceMatches follows upstream's resource patterns: "pods" is the resource alone,
// "pods/status" one subresource, "pods/*" every subresource of pods, "*" every resource
// (no subresources), "*/status" that subresource of every resource, "*/*" everything.
func resourceMatches(patterns []string, resource, sub string) bool {
	for _, p := range patterns {
		res, s, hasSub := strings.Cut(p, "/")
		switch {
		case p == "*/*":
			return true
		case !hasSub:
			if sub == "" && (res == "*" || res == resource) {
				return true
			}
		default:
			if (res == "*" || res == resource) && (s == "*" || s == sub) && sub != "" {
				return true
			}
		}
	}
	return false
}

func scopeMatches(scope *admissionregv1.ScopeType, a *admission.Attributes) bool {
	if scope == nil || *scope == admissionregv1.AllScopes {
		return true
	}
	// A namespace itself is cluster-scoped, though its request names it as a namespace.
	clusterScoped := a.Namespace == "" || (a.Resource.Group == "" && a.Resource.Resource == "namespaces")
	if *scope == admissionregv1.ClusterScope {
		return clusterScoped
	}
	return !clusterScoped
}

// objectLabels are the labels of obj, nil for none or no object.
func objectLabels(obj runtime.Object) (labels.Set, bool) {
	if obj == nil {
		return nil, false
	}
	a, err := meta.Accessor(obj)
	if err != nil {
		return nil, false
	}
	return labels.Set(a.GetLabels()), true
}

// ObjectSelectorMatches is upstream's object matcher: the new or the old object matches.
func ObjectSelectorMatches(sel *metav1.LabelSelector, a *admission.Attributes) (bool, error) {
	if sel == nil {
		return true, nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, err
	}
	if s.Empty() {
		return true, nil
	}
	for _, o := range []runtime.Object{a.Object, a.OldObject} {
		if l, ok := objectLabels(o); ok && s.Matches(l) {
			return true, nil
		}
	}
	return false, nil
}

// NamespaceSelectorMatches is upstream's namespace matcher: a namespace request is matched on
// the namespace's own labels, a cluster-scoped one always matches, any other on the labels of
// its namespace (namespace looks it up); a namespace that is not there is a NotFound error.
func NamespaceSelectorMatches(sel *metav1.LabelSelector, a *admission.Attributes, namespace func(name string) (*corev1.Namespace, bool)) (bool, error) {
	if sel == nil {
		return true, nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, err
	}
	if s.Empty() {
		return true, nil
	}
	var nsLabels labels.Set
	switch {
	case a.Resource.Group == "" && a.Resource.Resource == "namespaces":
		obj := a.Object
		if obj == nil {
			obj = a.OldObject
		}
		nsLabels, _ = objectLabels(obj)
	case a.Namespace == "":
		return true, nil // cluster-scoped: the namespace selector does not apply
	default:
		ns, ok := namespace(a.Namespace)
		if !ok {
			return false, apierrors.NewNotFound(corev1.Resource("namespaces"), a.Namespace)
		}
		nsLabels = ns.Labels
	}
	return s.Matches(nsLabels), nil
}
