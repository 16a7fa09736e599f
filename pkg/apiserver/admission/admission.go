// Package admission is the apiserver's admission chain: the plugins that may change
// (mutating) and then accept or refuse (validating) every create, update and delete after
// authorization, as kube-apiserver's k8s.io/apiserver/pkg/admission. The registry runs the
// chain around a kind's own defaulting and validation; plugins live in subpackages.
package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/request"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Operation is what a request does to an object (admission.k8s.io's names).
type Operation string

// The operations admission sees.
const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// Attributes describe one admitted write.
type Attributes struct {
	Operation   Operation
	Kind        schema.GroupVersionKind
	Resource    schema.GroupVersionResource
	Subresource string
	Namespace   string
	Name        string
	// Object is the new object (nil on delete); mutating plugins change it in place.
	Object runtime.Object
	// OldObject is the stored object (update, delete); plugins must not change it.
	OldObject runtime.Object
	// Options are the request's CreateOptions, UpdateOptions or DeleteOptions.
	Options runtime.Object
	DryRun  bool
	User    *request.User
}

// UserName is the requesting user's name, "" when none is known.
func (a *Attributes) UserName() string {
	if a.User == nil {
		return ""
	}
	return a.User.Name
}

// Handler says which operations a plugin cares about.
type Handler interface {
	Handles(op Operation) bool
}

// Mutator changes the object of a request before validation.
type Mutator interface {
	Handler
	Admit(ctx context.Context, a *Attributes) error
}

// Validator accepts or refuses a request after the kind's own validation; it must not change
// the object.
type Validator interface {
	Handler
	Validate(ctx context.Context, a *Attributes) error
}

// Interface is what the registry runs: every mutating plugin, then (after the kind's own
// validation) every validating one.
type Interface interface {
	Admit(ctx context.Context, a *Attributes) error
	Validate(ctx context.Context, a *Attributes) error
}

// Chain runs plugins in order. A plugin may be both a Mutator and a Validator.
type Chain []Handler

// Admit runs each mutating plugin that handles the operation; the first error stops it.
func (c Chain) Admit(ctx context.Context, a *Attributes) error {
	for _, p := range c {
		if m, ok := p.(Mutator); ok && p.Handles(a.Operation) {
			if err := m.Admit(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// Validate runs each validating plugin that handles the operation; the first error stops it.
func (c Chain) Validate(ctx context.Context, a *Attributes) error {
	for _, p := range c {
		if v, ok := p.(Validator); ok && p.Handles(a.Operation) {
			if err := v.Validate(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// Operations is a Handler for a fixed set of operations, for embedding in plugins.
type Operations []Operation

// Handles reports whether op is one of ops.
func (ops Operations) Handles(op Operation) bool { return slices.Contains(ops, op) }

// NewForbidden is upstream's admission.NewForbidden: 403 "<resource> \"<name>\" is
// forbidden: <err>", named after the object (its generateName before a name is given,
// "Unknown" without an object, as on delete); a Forbidden err is returned as it is.
func NewForbidden(a *Attributes, err error) error {
	if apierrors.IsForbidden(err) {
		return err
	}
	name := "Unknown"
	if o, ok := a.Object.(metav1.Object); ok && a.Object != nil {
		if o.GetName() != "" {
			name = o.GetName()
		} else if o.GetGenerateName() != "" {
			name = o.GetGenerateName()
		}
	}
	return apierrors.NewForbidden(a.Resource.GroupResource(), name, err)
}

// Plugin names, upstream's spelling. Order matters: it is the order plugins run in
// (upstream's AllOrderedPlugins, for those hacp knows).
const (
	NamespaceLifecycle            = "NamespaceLifecycle"
	LimitRanger                   = "LimitRanger"
	ServiceAccount                = "ServiceAccount"
	NodeRestriction               = "NodeRestriction"
	PodSecurity                   = "PodSecurity"
	Priority                      = "Priority"
	DefaultStorageClass           = "DefaultStorageClass"
	TaintNodesByCondition         = "TaintNodesByCondition"
	DefaultTolerationSeconds      = "DefaultTolerationSeconds"
	StorageObjectInUseProtection  = "StorageObjectInUseProtection"
	PodGroupProtection            = "PodGroupProtection"
	PersistentVolumeClaimResize   = "PersistentVolumeClaimResize"
	RuntimeClass                  = "RuntimeClass"
	CertificateApproval           = "CertificateApproval"
	CertificateSigning            = "CertificateSigning"
	ClusterTrustBundleAttest      = "ClusterTrustBundleAttest"
	CertificateSubjectRestriction = "CertificateSubjectRestriction"
	DefaultIngressClass           = "DefaultIngressClass"
	PodTopologyLabels             = "PodTopologyLabels"
	NodeDeclaredFeatureValidator  = "NodeDeclaredFeatureValidator"
	PodResizeValidator            = "PodResizeValidator"
	MutatingAdmissionPolicy       = "MutatingAdmissionPolicy"
	MutatingAdmissionWebhook      = "MutatingAdmissionWebhook"
	ValidatingAdmissionPolicy     = "ValidatingAdmissionPolicy"
	ValidatingAdmissionWebhook    = "ValidatingAdmissionWebhook"
	ResourceQuota                 = "ResourceQuota"
	AlwaysAdmit                   = "AlwaysAdmit"
	AlwaysDeny                    = "AlwaysDeny"
)

// upstreamOrder is kube-apiserver 1.37's AllOrderedPlugins
// (k8s.io/kubernetes/pkg/kubeapiserver/options): every name its --enable-admission-plugins
// accepts, in the order they run. 1.37 no longer knows SecurityContextDeny and
// PersistentVolumeLabel.
var upstreamOrder = []string{
	"AlwaysAdmit", "NamespaceAutoProvision", "NamespaceLifecycle", "NamespaceExists",
	"LimitPodHardAntiAffinityTopology", "LimitRanger", "ServiceAccount",
	"NodeRestriction", "TaintNodesByCondition", "AlwaysPullImages", "ImagePolicyWebhook",
	"PodSecurity", "PodNodeSelector", "Priority", "DefaultTolerationSeconds",
	"PodTolerationRestriction", "EventRateLimit", "ExtendedResourceToleration",
	"DefaultStorageClass", "StorageObjectInUseProtection", "PodGroupProtection",
	"OwnerReferencesPermissionEnforcement", "PersistentVolumeClaimResize", "RuntimeClass",
	"CertificateApproval", "CertificateSigning", "ClusterTrustBundleAttest",
	"CertificateSubjectRestriction", "DefaultIngressClass", "DenyServiceExternalIPs",
	"PodTopologyLabels", "NodeDeclaredFeatureValidator", "PodResizeValidator",
	"MutatingAdmissionPolicy", "MutatingAdmissionWebhook",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "ResourceQuota", "AlwaysDeny",
}

// upstreamDefaultOff are the plugins kube-apiserver 1.37 leaves off unless enabled (the
// complement of DefaultOffAdmissionPlugins' default-on set).
var upstreamDefaultOff = map[string]bool{
	"AlwaysAdmit": true, "NamespaceAutoProvision": true, "NamespaceExists": true,
	"LimitPodHardAntiAffinityTopology": true, "NodeRestriction": true,
	"AlwaysPullImages": true, "ImagePolicyWebhook": true, "PodNodeSelector": true,
	"PodTolerationRestriction": true, "EventRateLimit": true, "ExtendedResourceToleration": true,
	"OwnerReferencesPermissionEnforcement": true, "DenyServiceExternalIPs": true,
	"AlwaysDeny": true,
}

// Plugins resolves --enable-admission-plugins and --disable-admission-plugins as upstream:
// the result is the recommended (default-on) set plus enable minus disable, in upstream's
// order, restricted to the plugins implemented (the names in implemented). Names upstream
// does not know are errors, as is a name in both lists, and so is enabling a plugin hacp
// does not implement (a security plugin asked for must not silently be absent).
func Plugins(enable, disable []string, implemented map[string]bool) ([]string, error) {
	known := map[string]bool{}
	for _, n := range upstreamOrder {
		known[n] = true
	}
	var errs []string
	for _, n := range enable {
		switch {
		case !known[n]:
			errs = append(errs, fmt.Sprintf("enable-admission-plugins plugin %q is unknown", n))
		case !implemented[n]:
			errs = append(errs, fmt.Sprintf("enable-admission-plugins plugin %q is not implemented by hacp (implemented: %s)", n, strings.Join(sortedNames(implemented), ", ")))
		}
	}
	for _, n := range disable {
		if !known[n] {
			errs = append(errs, fmt.Sprintf("disable-admission-plugins plugin %q is unknown", n))
		}
	}
	var both []string
	for _, n := range enable {
		if slices.Contains(disable, n) && !slices.Contains(both, n) {
			both = append(both, n)
		}
	}
	if len(both) > 0 {
		slices.Sort(both)
		errs = append(errs, fmt.Sprintf("%v in enable-admission-plugins and disable-admission-plugins overlapped", both))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	var out []string
	for _, n := range upstreamOrder {
		on := (!upstreamDefaultOff[n] || slices.Contains(enable, n)) && !slices.Contains(disable, n)
		if on && implemented[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

func sortedNames(m map[string]bool) []string {
	var out []string
	for _, n := range upstreamOrder {
		if m[n] {
			out = append(out, n)
		}
	}
	return out
}

// AlwaysDenyPlugin is upstream's AlwaysDeny: every write is refused (tests only).
type AlwaysDenyPlugin struct{}

// Handles every operation.
func (AlwaysDenyPlugin) Handles(Operation) bool { return true }

// Admit refuses, as upstream: 403 "admission control is denying all modifications".
func (AlwaysDenyPlugin) Admit(_ context.Context, a *Attributes) error {
	return NewForbidden(a, errors.New("admission control is denying all modifications"))
}
