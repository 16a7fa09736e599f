package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/admission/webhook"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const errNilSelector = "a nil %s selector was passed, please ensure selectors are initialized properly"

// match is a request's resource and kind as a policy matched it: the request's own, or an
// equivalent resource's (matchPolicy Equivalent).
type match struct {
	resource schema.GroupVersionResource
	kind     schema.GroupVersionKind
}

// definitionMatches is upstream's DefinitionMatches: the policy's matchConstraints.
func (p *core) definitionMatches(ctx context.Context, mc *admissionregv1.MatchResources, a *admission.Attributes) (bool, match, error) {
	switch {
	case mc == nil:
		return false, match{}, errors.New("policy contained no match constraints, a required field")
	case mc.NamespaceSelector == nil:
		return false, match{}, fmt.Errorf(errNilSelector, "namespace")
	case mc.ObjectSelector == nil:
		return false, match{}, fmt.Errorf(errNilSelector, "object")
	}
	return p.matches(ctx, mc, a)
}

// bindingMatches is upstream's BindingMatches: no matchResources matches everything the
// policy does.
func (p *core) bindingMatches(ctx context.Context, mr *admissionregv1.MatchResources, a *admission.Attributes) (bool, error) {
	switch {
	case mr == nil:
		return true, nil
	case mr.NamespaceSelector == nil:
		return false, fmt.Errorf(errNilSelector, "namespace")
	case mr.ObjectSelector == nil:
		return false, fmt.Errorf(errNilSelector, "object")
	}
	ok, _, err := p.matches(ctx, mr, a)
	return ok, err
}

// matches is upstream's matching.Matcher: the selectors, then excludeResourceRules, then
// resourceRules (none: every resource). A selector error only counts when the rules match.
func (p *core) matches(ctx context.Context, mr *admissionregv1.MatchResources, a *admission.Attributes) (bool, match, error) {
	nsOK, nsErr := webhook.NamespaceSelectorMatches(mr.NamespaceSelector, a, func(name string) (*corev1.Namespace, bool) { return p.namespace(ctx, name) })
	if !nsOK && nsErr == nil {
		return false, match{}, nil
	}
	objOK, objErr := webhook.ObjectSelectorMatches(mr.ObjectSelector, a)
	if !objOK && objErr == nil {
		return false, match{}, nil
	}
	if excluded, _, err := p.rulesMatch(mr.ExcludeResourceRules, mr.MatchPolicy, a); excluded || err != nil {
		return false, match{}, err
	}
	m := match{resource: a.Resource, kind: a.Kind}
	if len(mr.ResourceRules) > 0 {
		ok, rm, err := p.rulesMatch(mr.ResourceRules, mr.MatchPolicy, a)
		if !ok || err != nil {
			return false, match{}, err
		}
		m = rm
	}
	if nsErr != nil {
		return false, match{}, nsErr
	}
	if objErr != nil {
		return false, match{}, objErr
	}
	return true, m, nil
}

// rulesMatch is upstream's matchesResourceRules: a rule (and its resourceNames) for the
// request's resource, else, with matchPolicy Equivalent, one for an equivalent resource.
func (p *core) rulesMatch(rules []admissionregv1.NamedRuleWithOperations, policy *admissionregv1.MatchPolicyType, a *admission.Attributes) (bool, match, error) {
	for _, r := range rules {
		if webhook.RuleMatches(r.RuleWithOperations, a) && nameMatches(r.ResourceNames, a.Name) {
			return true, match{resource: a.Resource, kind: a.Kind}, nil
		}
	}
	if policy == nil || *policy == admissionregv1.Exact || p.cfg.Equivalents == nil {
		return false, match{}, nil
	}
	eqs := p.cfg.Equivalents(a.Resource)
	alt := *a
	for _, r := range rules {
		for _, eq := range eqs {
			if eq.Resource == a.Resource {
				continue
			}
			alt.Resource = eq.Resource
			if !webhook.RuleMatches(r.RuleWithOperations, &alt) {
				continue
			}
			if eq.Kind.Empty() {
				return false, match{}, fmt.Errorf("unable to convert to %v: unknown kind", eq.Resource)
			}
			if nameMatches(r.ResourceNames, a.Name) {
				return true, match{resource: eq.Resource, kind: eq.Kind}, nil
			}
		}
	}
	return false, match{}, nil
}

// nameMatches: an empty resourceNames list matches every name.
func nameMatches(names []string, name string) bool {
	return len(names) == 0 || slices.Contains(names, name)
}

// namespace is the namespace name from the informer, else (one created just before the
// request) read from storage, as upstream's matcher reads it through its client.
func (p *core) namespace(ctx context.Context, name string) (*corev1.Namespace, bool) {
	if ns, ok := p.namespaces.Get("", name); ok {
		return ns, true
	}
	if p.cfg.GetNamespace == nil {
		return nil, false
	}
	ns, err := p.cfg.GetNamespace(ctx, name)
	return ns, err == nil && ns != nil
}
