package server

import (
	"context"
	"fmt"
	"slices"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/admission/plugins"
	"github.com/hacp/hacp/pkg/apiserver/admission/policy"
	"github.com/hacp/hacp/pkg/apiserver/admission/webhook"
	"github.com/hacp/hacp/pkg/apiserver/authz"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/request"
	"github.com/hacp/hacp/pkg/apiserver/webhookclient"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	psaconfig "k8s.io/pod-security-admission/admission/api"
)

// implementedAdmission are the admission plugins hacp has.
var implementedAdmission = map[string]bool{
	admission.NamespaceLifecycle:            true,
	admission.LimitRanger:                   true,
	admission.ServiceAccount:                true,
	admission.Priority:                      true,
	admission.NodeRestriction:               true,
	admission.PodSecurity:                   true,
	admission.DefaultStorageClass:           true,
	admission.TaintNodesByCondition:         true,
	admission.DefaultTolerationSeconds:      true,
	admission.StorageObjectInUseProtection:  true,
	admission.PodGroupProtection:            true,
	admission.PersistentVolumeClaimResize:   true,
	admission.RuntimeClass:                  true,
	admission.CertificateApproval:           true,
	admission.CertificateSigning:            true,
	admission.ClusterTrustBundleAttest:      true,
	admission.CertificateSubjectRestriction: true,
	admission.DefaultIngressClass:           true,
	admission.PodTopologyLabels:             true,
	admission.NodeDeclaredFeatureValidator:  true,
	admission.PodResizeValidator:            true,
	admission.MutatingAdmissionPolicy:       true,
	admission.MutatingAdmissionWebhook:      true,
	admission.ValidatingAdmissionPolicy:     true,
	admission.ValidatingAdmissionWebhook:    true,
	admission.ResourceQuota:                 true,
	admission.AlwaysAdmit:                   true,
	admission.AlwaysDeny:                    true,
}

// AdmissionPlugins is the plugin list --enable-admission-plugins and
// --disable-admission-plugins make, in the order they run.
func AdmissionPlugins(enable, disable []string) ([]string, error) {
	return admission.Plugins(enable, disable, implementedAdmission)
}

// DefaultAdmissionPlugins are the plugins on when no flag is given (upstream's recommended
// set, of those hacp has).
func DefaultAdmissionPlugins() []string {
	names, _ := AdmissionPlugins(nil, nil)
	return names
}

// OptionalAdmissionPlugins are the plugins hacp has that are off unless enabled.
func OptionalAdmissionPlugins() []string {
	on := DefaultAdmissionPlugins()
	var out []string
	for n := range implementedAdmission {
		if !slices.Contains(on, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// startAdmission builds the admission chain the flags ask for and installs it in the
// registry; its caches follow storage until ctx ends.
func (s *Server) startAdmission(ctx context.Context) error {
	names, err := AdmissionPlugins(s.cfg.EnableAdmissionPlugins, s.cfg.DisableAdmissionPlugins)
	if err != nil {
		return err
	}
	b := &admissionBuilder{s: s, ctx: ctx}
	var chain admission.Chain
	for _, n := range names {
		h, err := b.plugin(n)
		if err != nil {
			return err
		}
		if h != nil {
			chain = append(chain, h)
		}
	}
	s.webhooks = b.hooks
	s.admissionPlugins = names
	s.registry.SetAdmission(chain)
	return nil
}

// admissionBuilder builds the admission plugins on the registry's stores, starting those
// that watch something with ctx.
type admissionBuilder struct {
	s     *Server
	ctx   context.Context
	hooks *webhook.Dispatcher // the webhooks' dispatcher, once a webhook plugin is on
}

func (b *admissionBuilder) store(group, resource string) *registry.Store {
	return b.s.registry.Resource(schema.GroupResource{Group: group, Resource: resource}).Store
}

func getFrom(st *registry.Store) func(ctx context.Context, ns, name string) (runtime.Object, error) {
	return func(ctx context.Context, ns, name string) (runtime.Object, error) {
		return st.Get(ctx, ns, name, &metav1.GetOptions{})
	}
}

// start starts a plugin that keeps a cache.
func (b *admissionBuilder) start(p interface {
	admission.Handler
	Start(context.Context)
}) admission.Handler {
	p.Start(b.ctx)
	return p
}

// dispatcher is the webhooks' dispatcher, made and started on first use: the mutating
// and the validating plugin share it.
func (b *admissionBuilder) dispatcher() *webhook.Dispatcher {
	if b.hooks != nil {
		return b.hooks
	}
	s := b.s
	b.hooks = webhook.New(webhook.Config{
		Informers:   s.registry.Informers(),
		Resolve:     webhookclient.EndpointsResolver(getFrom(b.store("", "services")), getFrom(b.store("", "endpoints"))),
		Logger:      s.log,
		Authorizer:  celAuthorizer{s},
		Equivalents: s.equivalents,
		Convert:     s.registry.ConvertForAdmission,
	})
	b.hooks.Start(b.ctx)
	return b.hooks
}

// policyConfig configures both policy plugins: the registry's informers, the webhooks'
// equivalents and conversion, params read from the served resources, the kinds' schemas
// (for ApplyConfiguration) and the registry's scheme.
func (b *admissionBuilder) policyConfig() policy.Config {
	s := b.s
	return policy.Config{
		TypeConverter: s.typeConverter,
		Scheme:        registry.Scheme,
		Informers:     s.registry.Informers(),
		Logger:        s.log,
		Authorizer:    celAuthorizer{s},
		Equivalents:   s.equivalents,
		Convert:       s.registry.ConvertForAdmission,
		ParamResource: func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, bool) {
			for _, list := range [][]*registry.Resource{s.registry.Resources, s.registry.CustomResources()} {
				for _, res := range list {
					if k := res.Store.Definition(); k.GVK() == gvk {
						return k.GroupVersion().WithResource(k.Plural), k.Namespaced, true
					}
				}
			}
			return schema.GroupVersionResource{}, false, false
		},
		GetParam: func(ctx context.Context, gr schema.GroupResource, ns, name string) (runtime.Object, error) {
			res := s.registry.Resource(gr)
			if res == nil {
				return nil, apierrors.NewNotFound(gr, name)
			}
			return res.Store.Get(ctx, ns, name, &metav1.GetOptions{})
		},
		GetNamespace: func(ctx context.Context, name string) (*corev1.Namespace, error) {
			obj, err := b.store("", "namespaces").Get(ctx, "", name, &metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			ns, ok := obj.(*corev1.Namespace)
			if !ok {
				return nil, fmt.Errorf("namespace %s: unexpected %T", name, obj)
			}
			return ns, nil
		},
	}
}

// equivalents are the resources serving gvr's objects, for matchPolicy Equivalent.
func (s *Server) equivalents(gvr schema.GroupVersionResource) []webhook.Equivalent {
	var out []webhook.Equivalent
	for _, e := range s.registry.EquivalentResources(gvr) {
		out = append(out, webhook.Equivalent{Resource: e.Resource, Kind: e.Kind})
	}
	return out
}

// plugin builds the admission plugin named n; nil for one the registry's stores enforce
// themselves (NamespaceLifecycle).
func (b *admissionBuilder) plugin(n string) (admission.Handler, error) {
	s, store, inf := b.s, b.store, b.s.registry.Informers()
	switch n {
	case admission.NamespaceLifecycle:
		// The registry's stores refuse content in missing or terminating namespaces and
		// the deletion of the standard ones themselves (see registry.namespaceAccepts).
	case admission.LimitRanger:
		return b.start(plugins.NewLimitRanger(inf)), nil
	case admission.ServiceAccount:
		return b.start(plugins.NewServiceAccount(inf, getFrom(store("", "serviceaccounts")))), nil
	case admission.NodeRestriction:
		return plugins.NewNodeRestriction(getFrom(store("", "pods"))), nil
	case admission.PodSecurity:
		return b.podSecurity()
	case admission.Priority:
		return b.start(plugins.NewPriority(inf)), nil
	case admission.DefaultStorageClass:
		return b.start(plugins.NewDefaultStorageClass(inf)), nil
	case admission.TaintNodesByCondition:
		return plugins.NewTaintNodesByCondition(), nil
	case admission.DefaultTolerationSeconds:
		return plugins.NewDefaultTolerationSeconds(s.cfg.DefaultNotReadyTolerationSeconds, s.cfg.DefaultUnreachableTolerationSeconds), nil
	case admission.StorageObjectInUseProtection:
		return plugins.NewStorageObjectInUseProtection(), nil
	case admission.PodGroupProtection:
		// GenericWorkload is off by default in 1.37 and hacp has no --feature-gates.
		return plugins.NewPodGroupProtection(false), nil
	case admission.PersistentVolumeClaimResize:
		return b.start(plugins.NewPersistentVolumeClaimResize(inf)), nil
	case admission.RuntimeClass:
		return b.start(plugins.NewRuntimeClass(inf)), nil
	case admission.CertificateApproval:
		return plugins.NewCertificateApproval(s.signerAuthorizer), nil
	case admission.CertificateSigning:
		return plugins.NewCertificateSigning(s.signerAuthorizer), nil
	case admission.ClusterTrustBundleAttest:
		return plugins.NewClusterTrustBundleAttest(s.signerAuthorizer), nil
	case admission.CertificateSubjectRestriction:
		return plugins.NewCertificateSubjectRestriction(), nil
	case admission.DefaultIngressClass:
		return b.start(plugins.NewDefaultIngressClass(inf)), nil
	case admission.PodTopologyLabels:
		return b.start(plugins.NewPodTopologyLabels(inf)), nil
	case admission.NodeDeclaredFeatureValidator:
		return b.start(plugins.NewNodeDeclaredFeatureValidator(inf)), nil
	case admission.PodResizeValidator:
		return b.start(plugins.NewPodResizeValidator(inf)), nil
	case admission.MutatingAdmissionPolicy:
		return b.start(policy.NewMutating(b.policyConfig())), nil
	case admission.MutatingAdmissionWebhook:
		return b.dispatcher().Mutating(), nil
	case admission.ValidatingAdmissionPolicy:
		return b.start(policy.New(b.policyConfig())), nil
	case admission.ValidatingAdmissionWebhook:
		return b.dispatcher().Validating(), nil
	case admission.ResourceQuota:
		return b.start(s.resourceQuotaPlugin()), nil
	case admission.AlwaysDeny:
		return admission.AlwaysDenyPlugin{}, nil
	}
	return nil, nil
}

// podSecurity builds PodSecurity, configured from --admission-control-config-file when
// given, listing a namespace's pods from the registry.
func (b *admissionBuilder) podSecurity() (admission.Handler, error) {
	ps, err := plugins.NewPodSecurity(b.s.registry.Informers())
	if err != nil {
		return nil, err
	}
	if f := b.s.cfg.AdmissionControlConfigFile; f != "" {
		cfg, err := loadPodSecurityConfig(f)
		if err != nil {
			return nil, fmt.Errorf("--admission-control-config-file: %w", err)
		}
		if err := ps.Configure(cfg); err != nil {
			return nil, fmt.Errorf("--admission-control-config-file: %s: %w", f, err)
		}
	}
	pods := b.store("", "pods")
	ps.ListPods = func(ctx context.Context, ns string) ([]*corev1.Pod, error) {
		list, err := pods.List(ctx, ns, &metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		pl, ok := list.(*corev1.PodList)
		if !ok {
			return nil, fmt.Errorf("pods: unexpected list %T", list)
		}
		out := make([]*corev1.Pod, len(pl.Items))
		for i := range pl.Items {
			out[i] = &pl.Items[i]
		}
		return out, nil
	}
	return b.start(ps), nil
}

// loadPodSecurityConfig reads PodSecurity's configuration from an AdmissionConfiguration
// file (nil when it has none).
func loadPodSecurityConfig(file string) (*psaconfig.PodSecurityConfiguration, error) {
	f, err := admission.LoadConfigFile(file)
	if err != nil {
		return nil, err
	}
	data, ok := f.Plugins[admission.PodSecurity]
	if !ok {
		return nil, nil
	}
	cfg, err := plugins.ConfigurePodSecurity(data)
	if err != nil {
		return nil, fmt.Errorf("%s: plugin PodSecurity: %w", file, err)
	}
	return cfg, nil
}

// resourceQuotaPlugin is the ResourceQuota plugin on the registry's resourcequotas: it reads
// a quota after a conflict and writes status.used through the status subresource, with the
// quota's resourceVersion as the precondition.
func (s *Server) resourceQuotaPlugin() *plugins.ResourceQuota {
	res := s.registry.Resource(schema.GroupResource{Resource: "resourcequotas"})
	status, _ := res.Subresources["status"].(registry.Updater)
	get := func(ctx context.Context, ns, name string) (*corev1.ResourceQuota, error) {
		obj, err := res.Store.Get(ctx, ns, name, &metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		q, ok := obj.(*corev1.ResourceQuota)
		if !ok {
			return nil, fmt.Errorf("resource quota %s/%s: unexpected %T", ns, name, obj)
		}
		return q, nil
	}
	update := func(ctx context.Context, q *corev1.ResourceQuota) (*corev1.ResourceQuota, error) {
		if status == nil {
			return nil, fmt.Errorf("resource quotas have no status subresource")
		}
		obj, _, err := status.Update(ctx, q.Namespace, q.Name, func(context.Context, runtime.Object) (runtime.Object, error) {
			return q.DeepCopy(), nil
		}, &metav1.UpdateOptions{})
		if err != nil {
			return nil, err
		}
		out, ok := obj.(*corev1.ResourceQuota)
		if !ok {
			return nil, fmt.Errorf("resource quota %s/%s: unexpected %T", q.Namespace, q.Name, obj)
		}
		return out, nil
	}
	return plugins.NewResourceQuota(s.registry.Informers(), get, update)
}

// celAuthorizer is the server's authorizer in k8s.io/apiserver's terms, for the
// authorizer variable of webhooks' matchConditions.
// signerAuthorizer asks the server's authorizer whether user may verb the signers resource
// named name (the certificate plugins).
func (s *Server) signerAuthorizer(ctx context.Context, user *request.User, verb, name string) bool {
	if s.authz == nil {
		return true // no authorization configured: every request is allowed
	}
	d, _, err := s.authz.Authorize(ctx, authz.Attributes{User: user, Verb: verb, ResourceRequest: true,
		APIGroup: "certificates.k8s.io", APIVersion: "*", Resource: "signers", Name: name})
	return err == nil && d == authz.Allow
}

type celAuthorizer struct{ s *Server }

func (c celAuthorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if c.s.authz == nil {
		return authorizer.DecisionNoOpinion, "no authorizer", nil
	}
	var u *request.User
	if ui := a.GetUser(); ui != nil {
		u = &request.User{Name: ui.GetName(), UID: ui.GetUID(), Groups: ui.GetGroups(), Extra: ui.GetExtra()}
	}
	d, reason, err := c.s.authz.Authorize(ctx, authz.Attributes{User: u, Verb: a.GetVerb(), ResourceRequest: a.IsResourceRequest(),
		Namespace: a.GetNamespace(), APIGroup: a.GetAPIGroup(), APIVersion: a.GetAPIVersion(), Resource: a.GetResource(),
		Subresource: a.GetSubresource(), Name: a.GetName(), Path: a.GetPath()})
	switch d {
	case authz.Allow:
		return authorizer.DecisionAllow, reason, err
	case authz.Deny:
		return authorizer.DecisionDeny, reason, err
	}
	return authorizer.DecisionNoOpinion, reason, err
}

// Webhooks returns the webhook dispatcher, nil when both webhook plugins are off (tests).
func (s *Server) Webhooks() *webhook.Dispatcher { return s.webhooks }
