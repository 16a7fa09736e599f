package plugins

import (
	"context"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Annotations that mark the default StorageClass.
const (
	isDefaultClass     = "storageclass.kubernetes.io/is-default-class"
	betaIsDefaultClass = "storageclass.beta.kubernetes.io/is-default-class"
)

// DefaultStorageClass is upstream's DefaultStorageClass plugin: a new
// PersistentVolumeClaim that names no storageClassName gets the default class (the newest
// of those marked default, by name when created at the same time).
type DefaultStorageClass struct {
	admission.Operations
	classes *informer.Informer[*storagev1.StorageClass]
}

// NewDefaultStorageClass reads StorageClasses from the shared informers.
func NewDefaultStorageClass(f *informer.Factory) *DefaultStorageClass {
	return &DefaultStorageClass{Operations: admission.Operations{admission.Create}, classes: informer.For[*storagev1.StorageClass](f, schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"})}
}

// Start waits until the class informer holds its first list.
func (d *DefaultStorageClass) Start(ctx context.Context) { _ = d.classes.WaitForSync(ctx) }

// Admit sets the default class.
func (d *DefaultStorageClass) Admit(_ context.Context, a *admission.Attributes) error {
	if a.Resource.Group != "" || a.Resource.Resource != "persistentvolumeclaims" || a.Subresource != "" {
		return nil
	}
	pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
	if !ok || pvc.Spec.StorageClassName != nil {
		return nil
	}
	def, ok := newestDefault(d.classes.List(""), func(sc *storagev1.StorageClass) bool {
		return sc.Annotations[isDefaultClass] == "true" || sc.Annotations[betaIsDefaultClass] == "true"
	})
	if ok {
		name := def.Name
		pvc.Spec.StorageClassName = &name
	}
	return nil
}

// newestDefault is the newest of classes that isDefault picks (by name when created at the
// same time), and whether there is one: the class upstream's defaulting plugins choose.
func newestDefault[T metav1.Object](classes []T, isDefault func(T) bool) (T, bool) {
	var def T
	found := false
	for _, c := range classes {
		if !isDefault(c) {
			continue
		}
		if !found {
			def, found = c, true
			continue
		}
		ct, dt := c.GetCreationTimestamp(), def.GetCreationTimestamp()
		if ct.After(dt.Time) || (ct.Equal(&dt) && c.GetName() < def.GetName()) {
			def = c
		}
	}
	return def, found
}
