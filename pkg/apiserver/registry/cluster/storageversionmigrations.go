package cluster

import (
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// StorageVersionMigrationsKind serves StorageVersionMigrations (storagemigration.k8s.io/v1,
// GA in 1.37): a request to rewrite every object of a resource at the current storage
// version, carried out by the controller-manager, which reports through /status.
func StorageVersionMigrationsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "storagemigration.k8s.io", Version: "v1", Kind: "StorageVersionMigration", ListKind: "StorageVersionMigrationList",
			Plural: "storageversionmigrations", Singular: "storageversionmigration"},
		New:     func() runtime.Object { return &storagemigrationv1.StorageVersionMigration{} },
		NewList: func() runtime.Object { return &storagemigrationv1.StorageVersionMigrationList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForCreate: func(obj runtime.Object) {
				obj.(*storagemigrationv1.StorageVersionMigration).Status = storagemigrationv1.StorageVersionMigrationStatus{}
			},
			PrepareForUpdate: registry.Rule(func(m, old *storagemigrationv1.StorageVersionMigration) { m.Status = old.Status }),
			PrepareForStatusUpdate: registry.Rule(func(m, old *storagemigrationv1.StorageVersionMigration) {
				m.Spec = old.Spec
				metav1.ResetObjectMetaForStatus(&m.ObjectMeta, &old.ObjectMeta)
			}),
			Validate: func(obj runtime.Object) field.ErrorList {
				r := obj.(*storagemigrationv1.StorageVersionMigration).Spec.Resource
				p := field.NewPath("spec", "resource")
				var errs field.ErrorList
				if r.Resource == "" {
					errs = append(errs, field.Required(p.Child("resource"), "resource is required to be set"))
				} else if msgs := utilvalidation.IsDNS1035Label(r.Resource); len(msgs) > 0 {
					errs = append(errs, field.Invalid(p.Child("resource"), r.Resource, strings.Join(msgs, ",")))
				}
				if r.Group != "" {
					if msgs := utilvalidation.IsDNS1123Subdomain(r.Group); len(msgs) > 0 {
						errs = append(errs, field.Invalid(p.Child("group"), r.Group, strings.Join(msgs, ",")))
					}
				}
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				m, o := obj.(*storagemigrationv1.StorageVersionMigration), old.(*storagemigrationv1.StorageVersionMigration)
				return registry.ImmutableField(m.Spec, o.Spec, field.NewPath("spec"))
			},
		},
	}
}
