package registry

import (
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// Scheme knows every built-in Go type this server serves.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(corev1.AddToScheme(Scheme))
	utilruntime.Must(appsv1.AddToScheme(Scheme))
	utilruntime.Must(coordinationv1.AddToScheme(Scheme))
	utilruntime.Must(autoscalingv1.AddToScheme(Scheme))
	utilruntime.Must(rbacv1.AddToScheme(Scheme))
	utilruntime.Must(authorizationv1.AddToScheme(Scheme))
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	metav1.AddMetaToScheme(Scheme)
}
