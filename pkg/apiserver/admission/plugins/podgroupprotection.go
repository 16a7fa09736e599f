package plugins

import (
	"context"
	"slices"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodGroupProtectionFinalizer is upstream's scheduling.PodGroupProtectionFinalizer: it keeps
// a PodGroup while pods still name it; kube-controller-manager's PodGroupProtection
// controller removes it once none does.
const PodGroupProtectionFinalizer = "scheduling.k8s.io/podgroup-protection"

// PodGroupProtection is upstream's plugin of that name: with the GenericWorkload feature
// on, a new scheduling.k8s.io PodGroup gets PodGroupProtectionFinalizer. GenericWorkload is
// off by default in 1.37 (and hacp serves no PodGroups then), so kube-apiserver with its
// default gates has the plugin on and doing nothing; hacp's is the same.
type PodGroupProtection struct {
	admission.Operations
	enabled bool
}

// NewPodGroupProtection returns the plugin; genericWorkload is the feature gate's value.
func NewPodGroupProtection(genericWorkload bool) *PodGroupProtection {
	return &PodGroupProtection{Operations: admission.Operations{admission.Create}, enabled: genericWorkload}
}

// Admit adds the finalizer to a new PodGroup that does not have it.
func (p *PodGroupProtection) Admit(_ context.Context, a *admission.Attributes) error {
	if !p.enabled || a.Resource.Group != "scheduling.k8s.io" || a.Resource.Resource != "podgroups" || a.Subresource != "" {
		return nil
	}
	var om *metav1.ObjectMeta
	switch pg := a.Object.(type) {
	case *schedulingv1beta1.PodGroup:
		om = &pg.ObjectMeta
	case *schedulingv1alpha3.PodGroup:
		om = &pg.ObjectMeta
	default:
		return nil
	}
	if !slices.Contains(om.Finalizers, PodGroupProtectionFinalizer) {
		om.Finalizers = append(om.Finalizers, PodGroupProtectionFinalizer)
	}
	return nil
}
