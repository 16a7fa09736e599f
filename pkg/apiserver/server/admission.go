package server

import (
	"context"
	"fmt"
	"slices"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/admission/plugins"
	"github.com/hacp/hacp/pkg/apiserver/admission/webhook"
	"github.com/hacp/hacp/pkg/apiserver/authz"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/request"
	"github.com/hacp/hacp/pkg/apiserver/webhookclient"
	corev1 "k8s.io/api/core/v1"
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
	admission.PersistentVolumeClaimResize:   true,
	admission.RuntimeClass:                  true,
	admission.CertificateApproval:           true,
	admission.CertificateSigning:            true,
	admission.CertificateSubjectRestriction: true,
	admission.DefaultIngressClass:           true,
	admission.MutatingAdmissionWebhook:      true,
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
	var chain admission.Chain
	var hooks *webhook.Dispatcher
	store := func(group, resource string) *registry.Store {
		return s.registry.Resource(schema.GroupResource{Group: group, Resource: resource}).Store
	}
	get := func(st *registry.Store) func(ctx context.Context, ns, name string) (runtime.Object, error) {
		return func(ctx context.Context, ns, name string) (runtime.Object, error) {
			return st.Get(ctx, ns, name, &metav1.GetOptions{})
		}
	}
	start := func(p interface {
		admission.Handler
		Start(context.Context)
	}) admission.Handler {
		p.Start(ctx)
		return p
	}
	dispatcher := func() *webhook.Dispatcher {
		if hooks == nil {
			hooks = webhook.New(webhook.Config{
				Mutating:   store("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
				Validating: store("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
				Namespaces: store("", "namespaces"),
				Resolve:    webhookclient.EndpointsResolver(get(store("", "services")), get(store("", "endpoints"))),
				Logger:     s.log,
				Authorizer: celAuthorizer{s},
				Equivalents: func(gvr schema.GroupVersionResource) []webhook.Equivalent {
					var out []webhook.Equivalent
					for _, e := range s.registry.EquivalentResources(gvr) {
						out = append(out, webhook.Equivalent{Resource: e.Resource, Kind: e.Kind})
					}
					return out
				},
				Convert: s.registry.ConvertForAdmission,
			})
			hooks.Start(ctx)
		}
		return hooks
	}
	for _, n := range names {
		switch n {
		case admission.NamespaceLifecycle:
			// The registry's stores refuse content in missing or terminating namespaces and
			// the deletion of the standard ones themselves (see registry.namespaceAccepts).
		case admission.LimitRanger:
			chain = append(chain, start(plugins.NewLimitRanger(store("", "limitranges"))))
		case admission.ServiceAccount:
			sa := store("", "serviceaccounts")
			chain = append(chain, start(plugins.NewServiceAccount(sa, get(sa))))
		case admission.NodeRestriction:
			chain = append(chain, plugins.NewNodeRestriction(get(store("", "pods"))))
		case admission.PodSecurity:
			ps, err := plugins.NewPodSecurity(store("", "namespaces"))
			if err != nil {
				return err
			}
			if f := s.cfg.AdmissionControlConfigFile; f != "" {
				cfg, err := loadPodSecurityConfig(f)
				if err != nil {
					return fmt.Errorf("--admission-control-config-file: %w", err)
				}
				if err := ps.Configure(cfg); err != nil {
					return fmt.Errorf("--admission-control-config-file: %s: %w", f, err)
				}
			}
			pods := store("", "pods")
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
			chain = append(chain, start(ps))
		case admission.Priority:
			chain = append(chain, start(plugins.NewPriority(store("scheduling.k8s.io", "priorityclasses"))))
		case admission.DefaultStorageClass:
			chain = append(chain, start(plugins.NewDefaultStorageClass(store("storage.k8s.io", "storageclasses"))))
		case admission.TaintNodesByCondition:
			chain = append(chain, plugins.NewTaintNodesByCondition())
		case admission.DefaultTolerationSeconds:
			chain = append(chain, plugins.NewDefaultTolerationSeconds(s.cfg.DefaultNotReadyTolerationSeconds, s.cfg.DefaultUnreachableTolerationSeconds))
		case admission.StorageObjectInUseProtection:
			chain = append(chain, plugins.NewStorageObjectInUseProtection())
		case admission.PersistentVolumeClaimResize:
			chain = append(chain, start(plugins.NewPersistentVolumeClaimResize(store("storage.k8s.io", "storageclasses"))))
		case admission.RuntimeClass:
			chain = append(chain, start(plugins.NewRuntimeClass(store("node.k8s.io", "runtimeclasses"))))
		case admission.CertificateApproval:
			chain = append(chain, plugins.NewCertificateApproval(s.signerAuthorizer))
		case admission.CertificateSigning:
			chain = append(chain, plugins.NewCertificateSigning(s.signerAuthorizer))
		case admission.CertificateSubjectRestriction:
			chain = append(chain, plugins.NewCertificateSubjectRestriction())
		case admission.DefaultIngressClass:
			chain = append(chain, start(plugins.NewDefaultIngressClass(store("networking.k8s.io", "ingressclasses"))))
		case admission.MutatingAdmissionWebhook:
			chain = append(chain, dispatcher().Mutating())
		case admission.ValidatingAdmissionWebhook:
			chain = append(chain, dispatcher().Validating())
		case admission.ResourceQuota:
			chain = append(chain, start(s.resourceQuotaPlugin()))
		case admission.AlwaysDeny:
			chain = append(chain, admission.AlwaysDenyPlugin{})
		}
	}
	s.webhooks = hooks
	s.admissionPlugins = names
	s.registry.SetAdmission(chain)
	return nil
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
	return plugins.NewResourceQuota(res.Store, get, update)
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
