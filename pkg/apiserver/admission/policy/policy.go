// Package policy enforces ValidatingAdmissionPolicies and their bindings as kube-apiserver's
// ValidatingAdmissionPolicy plugin does: CEL validations (with variables, matchConditions,
// params, messageExpression and auditAnnotations) evaluated in process for the requests a
// policy's matchConstraints and a binding's matchResources select, denying, warning or
// auditing as the binding's validationActions say. Policies, bindings, namespaces and params
// come from the shared informers; the CEL compiler and evaluator are k8s.io/apiserver's leaf
// package admission/plugin/cel, so expressions behave exactly as upstream's.
package policy

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/admission/webhook"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Config configures the plugin.
type Config struct {
	// Informers gives the shared informers of the policies, bindings, namespaces and params.
	Informers *informer.Factory
	Logger    *slog.Logger
	// Authorizer answers the expressions' authorizer checks (nil: they fail).
	Authorizer authorizer.UnconditionalAuthorizer
	// Equivalents are the resources serving the same objects as a resource, with their
	// kinds, for matchPolicy Equivalent; nil: none.
	Equivalents func(schema.GroupVersionResource) []webhook.Equivalent
	// Convert returns obj as kind to (a new object), for a policy matched through an
	// equivalent resource; nil: such a match is a configuration error.
	Convert func(ctx context.Context, obj runtime.Object, to schema.GroupVersionKind) (runtime.Object, error)
	// ParamResource finds the served resource of a paramKind and whether it is namespaced;
	// ok is false when nothing serves the kind.
	ParamResource func(gvk schema.GroupVersionKind) (gvr schema.GroupVersionResource, namespaced, ok bool)
	// GetParam reads a param the informer does not hold (yet), as upstream's direct read
	// after a cache miss; nil: none.
	GetParam func(ctx context.Context, gr schema.GroupResource, ns, name string) (runtime.Object, error)
	// GetNamespace reads a namespace the informer does not hold (yet); nil: none.
	GetNamespace func(ctx context.Context, name string) (*corev1.Namespace, error)
	// TypeConverter is the structured-merge-diff schema of a kind, for the mutating
	// plugin's ApplyConfiguration; nil or an error: the kind is unknown (503, as upstream).
	TypeConverter func(gvk schema.GroupVersionKind) (managedfields.TypeConverter, error)
	// Scheme creates the built-in kinds, for the mutating plugin's JSONPatch.
	Scheme *runtime.Scheme
}

// hook is a policy with its bindings and compiled expressions.
type hook struct {
	policy   *admissionregv1.ValidatingAdmissionPolicy
	bindings []*admissionregv1.ValidatingAdmissionPolicyBinding
	eval     *compiled
}

// cacheKey identifies a policy's spec: a new generation is compiled again.
type cacheKey struct {
	uid        types.UID
	generation int64
}

// core is what both policy plugins share: the configuration and the namespaces, for
// matching (matchConstraints, matchResources) and params.
type core struct {
	cfg        Config
	namespaces *informer.Informer[*corev1.Namespace]
}

func newCore(cfg Config) core {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return core{cfg: cfg, namespaces: informer.For[*corev1.Namespace](cfg.Informers, schema.GroupResource{Resource: "namespaces"})}
}

// Plugin is the ValidatingAdmissionPolicy admission plugin.
type Plugin struct {
	core
	policies *informer.Informer[*admissionregv1.ValidatingAdmissionPolicy]
	bindings *informer.Informer[*admissionregv1.ValidatingAdmissionPolicyBinding]

	hooks atomic.Pointer[[]*hook]

	mu       sync.Mutex // serializes rebuilds and guards compiled
	compiled map[cacheKey]*compiled
}

// New returns the plugin; Start waits for its informers.
func New(cfg Config) *Plugin {
	p := &Plugin{core: newCore(cfg), compiled: map[cacheKey]*compiled{}}
	empty := []*hook{}
	p.hooks.Store(&empty)
	const group = "admissionregistration.k8s.io"
	p.policies = informer.For[*admissionregv1.ValidatingAdmissionPolicy](cfg.Informers, schema.GroupResource{Group: group, Resource: "validatingadmissionpolicies"})
	p.bindings = informer.For[*admissionregv1.ValidatingAdmissionPolicyBinding](cfg.Informers, schema.GroupResource{Group: group, Resource: "validatingadmissionpolicybindings"})
	p.policies.AddHandler(informer.OnChange[*admissionregv1.ValidatingAdmissionPolicy](p.rebuild))
	p.bindings.AddHandler(informer.OnChange[*admissionregv1.ValidatingAdmissionPolicyBinding](p.rebuild))
	return p
}

// Start returns once the policies, bindings and namespaces are listed (or ctx ends).
func (p *Plugin) Start(ctx context.Context) {
	_ = p.policies.WaitForSync(ctx)
	_ = p.bindings.WaitForSync(ctx)
	_ = p.namespaces.WaitForSync(ctx)
}

// Enforced reports whether the policy is enforced with the binding, at the policy's
// resourceVersion policyRV ("": any), for tests that wait for a change to take effect.
func (p *Plugin) Enforced(policy, policyRV, binding string) bool {
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

// rebuild makes the hooks from the cached policies and bindings (policies and their
// bindings by name), compiling only policies whose spec changed.
func (p *Plugin) rebuild() {
	p.mu.Lock()
	defer p.mu.Unlock()
	pols := p.policies.List("")
	sort.Slice(pols, func(i, j int) bool { return pols[i].Name < pols[j].Name })
	byPolicy := map[string][]*admissionregv1.ValidatingAdmissionPolicyBinding{}
	for _, b := range p.bindings.List("") {
		byPolicy[b.Spec.PolicyName] = append(byPolicy[b.Spec.PolicyName], b)
	}
	hooks := []*hook{}
	keep := map[cacheKey]*compiled{}
	for _, pol := range pols {
		bs := byPolicy[pol.Name]
		if len(bs) == 0 {
			continue // an unbound policy does nothing
		}
		sort.Slice(bs, func(i, j int) bool { return bs[i].Name < bs[j].Name })
		k := cacheKey{pol.UID, pol.Generation}
		c := p.compiled[k]
		if c == nil {
			c = compile(pol)
		}
		keep[k] = c
		hooks = append(hooks, &hook{policy: pol, bindings: bs, eval: c})
	}
	p.compiled = keep
	p.hooks.Store(&hooks)
}

// Handles every operation (CREATE, UPDATE, DELETE and CONNECT, as upstream).
func (p *Plugin) Handles(admission.Operation) bool { return true }
