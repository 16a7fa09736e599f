package tableconvert

// The rbac.authorization.k8s.io printers, as kube-apiserver's printers for roles and
// bindings: roles show when they were created, bindings their role and (wide) subjects.

import (
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func init() {
	createdAt := col("Created At", "date", metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"])
	register(&rbacv1.RoleList{}, []metav1.TableColumnDefinition{nameColumn(), createdAt},
		func(r *rbacv1.Role, _ time.Time) ([]any, []metav1.TableRowCondition) {
			return []any{r.Name, r.CreationTimestamp.UTC().Format(time.RFC3339)}, nil
		})
	register(&rbacv1.ClusterRoleList{}, []metav1.TableColumnDefinition{nameColumn(), createdAt},
		func(r *rbacv1.ClusterRole, _ time.Time) ([]any, []metav1.TableRowCondition) {
			return []any{r.Name, r.CreationTimestamp.UTC().Format(time.RFC3339)}, nil
		})
	bindingColumns := []metav1.TableColumnDefinition{
		nameColumn(),
		col("Role", "string", rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]),
		ageColumn(),
		wide("Users", "string", "Users in the roleBinding"),
		wide("Groups", "string", "Groups in the roleBinding"),
		wide("ServiceAccounts", "string", "ServiceAccounts in the roleBinding"),
	}
	register(&rbacv1.RoleBindingList{}, bindingColumns, func(b *rbacv1.RoleBinding, now time.Time) ([]any, []metav1.TableRowCondition) {
		return bindingRow(b.Name, b.RoleRef, b.Subjects, b.CreationTimestamp, now), nil
	})
	register(&rbacv1.ClusterRoleBindingList{}, bindingColumns, func(b *rbacv1.ClusterRoleBinding, now time.Time) ([]any, []metav1.TableRowCondition) {
		return bindingRow(b.Name, b.RoleRef, b.Subjects, b.CreationTimestamp, now), nil
	})
}

// bindingRow is upstream's printRoleBinding with rbac.SubjectsStrings.
func bindingRow(name string, ref rbacv1.RoleRef, subjects []rbacv1.Subject, created metav1.Time, now time.Time) []any {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		}
	}
	return []any{name, ref.Kind + "/" + ref.Name, age(created, now), strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}
