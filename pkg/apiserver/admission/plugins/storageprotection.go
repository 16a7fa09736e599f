package plugins

import (
	"context"
	"fmt"
	"slices"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The finalizers StorageObjectInUseProtection adds; kube-controller-manager's pvc-protection
// and pv-protection controllers remove them once no pod uses the claim (no claim is bound to
// the volume).
const (
	pvcProtectionFinalizer = "kubernetes.io/pvc-protection"
	pvProtectionFinalizer  = "kubernetes.io/pv-protection"
)

// StorageObjectInUseProtection is upstream's plugin of that name: a new
// PersistentVolumeClaim or PersistentVolume gets its protection finalizer, so that deleting
// one in use only marks it until it is no longer used.
type StorageObjectInUseProtection struct{ admission.Operations }

// NewStorageObjectInUseProtection returns the plugin.
func NewStorageObjectInUseProtection() *StorageObjectInUseProtection {
	return &StorageObjectInUseProtection{admission.Operations{admission.Create}}
}

// Admit adds the finalizer.
func (StorageObjectInUseProtection) Admit(_ context.Context, a *admission.Attributes) error {
	if a.Resource.Group != "" || a.Subresource != "" {
		return nil
	}
	add := func(finalizers *[]string, f string) {
		if !slices.Contains(*finalizers, f) {
			*finalizers = append(*finalizers, f)
		}
	}
	switch o := a.Object.(type) {
	case *corev1.PersistentVolumeClaim:
		add(&o.Finalizers, pvcProtectionFinalizer)
	case *corev1.PersistentVolume:
		add(&o.Finalizers, pvProtectionFinalizer)
	}
	return nil
}

// PersistentVolumeClaimResize is upstream's plugin of that name: a claim's storage request
// may grow only once it is bound, and only when its StorageClass allows volume expansion.
type PersistentVolumeClaimResize struct {
	admission.Operations
	classes *informer.Informer[*storagev1.StorageClass]
}

// NewPersistentVolumeClaimResize reads StorageClasses from the shared informers.
func NewPersistentVolumeClaimResize(f *informer.Factory) *PersistentVolumeClaimResize {
	return &PersistentVolumeClaimResize{Operations: admission.Operations{admission.Update}, classes: informer.For[*storagev1.StorageClass](f, schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"})}
}

// Start waits until the class informer holds its first list.
func (p *PersistentVolumeClaimResize) Start(ctx context.Context) { _ = p.classes.WaitForSync(ctx) }

// Validate refuses a growth the claim's state or class does not allow.
func (p *PersistentVolumeClaimResize) Validate(_ context.Context, a *admission.Attributes) error {
	if a.Resource.Group != "" || a.Resource.Resource != "persistentvolumeclaims" || a.Subresource != "" {
		return nil
	}
	pvc, ok1 := a.Object.(*corev1.PersistentVolumeClaim)
	old, ok2 := a.OldObject.(*corev1.PersistentVolumeClaim)
	if !ok1 || !ok2 {
		return nil
	}
	newSize, oldSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage], old.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) <= 0 {
		return nil
	}
	if old.Status.Phase != corev1.ClaimBound {
		//lint:ignore ST1005 upstream's exact message
		return admission.NewForbidden(a, fmt.Errorf("Only bound persistent volume claims can be expanded"))
	}
	if !p.allowResize(pvc, old) {
		return admission.NewForbidden(a, fmt.Errorf("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"))
	}
	return nil
}

func (p *PersistentVolumeClaimResize) allowResize(pvc, old *corev1.PersistentVolumeClaim) bool {
	name, oldName := claimClass(pvc), claimClass(old)
	if name == "" || oldName == "" || name != oldName {
		return false
	}
	sc, ok := p.classes.Get("", name)
	return ok && sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
}

// claimClass is the claim's class: spec.storageClassName, else the beta annotation.
func claimClass(pvc *corev1.PersistentVolumeClaim) string {
	if c, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		return c
	}
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}
