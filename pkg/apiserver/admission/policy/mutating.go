package policy

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	celplugin "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
)

// mutatingHook is a mutating policy with its bindings and compiled mutations.
type mutatingHook struct {
	policy   *admissionregv1.MutatingAdmissionPolicy
	bindings []*admissionregv1.MutatingAdmissionPolicyBinding
	eval     *compiledMutations
}

// compiledMutations are a policy's matchConditions and one patcher per mutation, in order.
// An expression that does not compile fails when its mutation runs (failurePolicy decides).
type compiledMutations struct {
	compiler *celplugin.CompositedCompiler // its context gives the mutations the variables
	matcher  matchconditions.Matcher       // nil without matchConditions
	patchers []patch.Patcher
}

// Mutating is the MutatingAdmissionPolicy admission plugin: kube-apiserver's of the same
// name. Each bound policy whose matchConstraints, and binding whose matchResources, select
// a create, update or connect request mutates its object once per param, with its
// mutations in order: CEL ApplyConfiguration expressions merged with server-side apply
// semantics, or CEL JSONPatch lists. The patchers are k8s.io/apiserver's leaf package
// admission/plugin/policy/mutating/patch; matching and params are the validating plugin's.
type Mutating struct {
	core
	policies *informer.Informer[*admissionregv1.MutatingAdmissionPolicy]
	bindings *informer.Informer[*admissionregv1.MutatingAdmissionPolicyBinding]

	hooks atomic.Pointer[[]*mutatingHook]

	mu       sync.Mutex // serializes rebuilds and guards compiled
	compiled map[cacheKey]*compiledMutations
}

// NewMutating returns the MutatingAdmissionPolicy plugin; Start waits for its informers.
// It needs cfg.TypeConverter (ApplyConfiguration) and cfg.Scheme (JSONPatch).
func NewMutating(cfg Config) *Mutating {
	p := &Mutating{core: newCore(cfg), compiled: map[cacheKey]*compiledMutations{}}
	empty := []*mutatingHook{}
	p.hooks.Store(&empty)
	const group = "admissionregistration.k8s.io"
	p.policies = informer.For[*admissionregv1.MutatingAdmissionPolicy](cfg.Informers, schema.GroupResource{Group: group, Resource: "mutatingadmissionpolicies"})
	p.bindings = informer.For[*admissionregv1.MutatingAdmissionPolicyBinding](cfg.Informers, schema.GroupResource{Group: group, Resource: "mutatingadmissionpolicybindings"})
	p.policies.AddHandler(informer.OnChange[*admissionregv1.MutatingAdmissionPolicy](p.rebuild))
	p.bindings.AddHandler(informer.OnChange[*admissionregv1.MutatingAdmissionPolicyBinding](p.rebuild))
	return p
}

// Start returns once the policies, bindings and namespaces are listed (or ctx ends).
func (p *Mutating) Start(ctx context.Context) {
	_ = p.policies.WaitForSync(ctx)
	_ = p.bindings.WaitForSync(ctx)
	_ = p.namespaces.WaitForSync(ctx)
}

// Handles create, update and connect: a delete has no object to mutate (as upstream).
func (p *Mutating) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update || op == admission.Connect
}

// Enforced reports whether the policy is enforced with the binding, at the policy's
// resourceVersion policyRV ("": any), for tests that wait for a change to take effect.
func (p *Mutating) Enforced(policy, policyRV, binding string) bool {
	for _, h := range *p.hooks.Load() {
		if h.policy.Name != policy || (policyRV != "" && h.policy.ResourceVersion != policyRV) {
			continue
		}
		for _, b := range h.bindings {
			if b.Name == binding {
				return true
			}
		}
	}
	return false
}

// rebuild makes the hooks from the cached policies and bindings, compiling only policies
// whose spec changed. Policies run by name and a policy's bindings by name: upstream's
// order is that of a Go map (unspecified), so any fixed order is one upstream may take.
func (p *Mutating) rebuild() {
	p.mu.Lock()
	defer p.mu.Unlock()
	pols := p.policies.List("")
	sort.Slice(pols, func(i, j int) bool { return pols[i].Name < pols[j].Name })
	byPolicy := map[string][]*admissionregv1.MutatingAdmissionPolicyBinding{}
	for _, b := range p.bindings.List("") {
		byPolicy[b.Spec.PolicyName] = append(byPolicy[b.Spec.PolicyName], b)
	}
	hooks := []*mutatingHook{}
	keep := map[cacheKey]*compiledMutations{}
	for _, pol := range pols {
		bs := byPolicy[pol.Name]
		if len(bs) == 0 {
			continue // an unbound policy does nothing
		}
		sort.Slice(bs, func(i, j int) bool { return bs[i].Name < bs[j].Name })
		k := cacheKey{pol.UID, pol.Generation}
		c := p.compiled[k]
		if c == nil {
			c = compileMutations(pol)
		}
		keep[k] = c
		hooks = append(hooks, &mutatingHook{policy: pol, bindings: bs, eval: c})
	}
	p.compiled = keep
	p.hooks.Store(&hooks)
}

// compileMutations is upstream's compilePolicy: variables first, then the matchConditions,
// then each mutation with the JSONPatch and Object types declared; params when the policy
// has a paramKind, the authorizer everywhere.
func compileMutations(pol *admissionregv1.MutatingAdmissionPolicy) *compiledMutations {
	opts := celplugin.OptionalVariableDeclarations{HasParams: pol.Spec.ParamKind != nil, HasAuthorizer: true}
	c, err := celplugin.NewCompositedCompiler(envTemplate())
	if err != nil {
		// Cannot happen with the base environment; the request then fails.
		return &compiledMutations{}
	}
	vars := make([]celplugin.NamedExpressionAccessor, len(pol.Spec.Variables))
	for i, v := range pol.Spec.Variables {
		vars[i] = &variable{Name: v.Name, Expression: v.Expression}
	}
	c.CompileAndStoreVariables(vars, opts, environment.StoredExpressions)
	out := &compiledMutations{compiler: c}
	if conds := pol.Spec.MatchConditions; len(conds) > 0 {
		acc := make([]celplugin.ExpressionAccessor, len(conds))
		for i := range conds {
			acc[i] = (*matchconditions.MatchCondition)(&conds[i])
		}
		out.matcher = matchconditions.NewMatcher(c.CompileCondition(acc, opts, environment.StoredExpressions), pol.Spec.FailurePolicy, "policy", "validate", pol.Name)
	}
	patchOpts := opts
	patchOpts.HasPatchTypes = true
	// A mutation without its patch type's field gets no patcher: the count then differs
	// and the request fails, as upstream's.
	for _, m := range pol.Spec.Mutations {
		switch {
		case m.PatchType == admissionregv1.PatchTypeJSONPatch && m.JSONPatch != nil:
			acc := &patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}
			out.patchers = append(out.patchers, patch.NewJSONPatcher(c.CompileMutatingEvaluator(acc, patchOpts, environment.StoredExpressions)))
		case m.PatchType == admissionregv1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
			acc := &patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}
			out.patchers = append(out.patchers, patch.NewApplyConfigurationPatcher(c.CompileMutatingEvaluator(acc, patchOpts, environment.StoredExpressions)))
		}
	}
	return out
}
