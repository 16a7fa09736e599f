package plugins

import (
	"context"
	"fmt"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
)

// Upstream's constants (k8s.io/kubernetes/plugin/pkg/admission/serviceaccount).
const (
	// DefaultServiceAccountName is the account a pod without one runs as.
	DefaultServiceAccountName = "default"
	// DefaultAPITokenMountPath is where the token volume is mounted.
	DefaultAPITokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// tokenExpirationSeconds is the projected token's lifetime (upstream's
	// WarnOnlyBoundTokenExpirationSeconds, 1h + 7s).
	tokenExpirationSeconds = 3607
	rootCAConfigMap        = "kube-root-ca.crt"
	mirrorPodAnnotation    = "kubernetes.io/config.mirror"
)

// ServiceAccount is upstream's ServiceAccount plugin: a pod runs as its namespace's
// "default" account unless it names one, the account must exist, and unless
// automountServiceAccountToken (the pod's, else the account's) is false, every container
// gets the kube-api-access-xxxxx projected volume (a bound token, the cluster CA, the
// namespace) at /var/run/secrets/kubernetes.io/serviceaccount.
type ServiceAccount struct {
	admission.Operations
	accounts *informer.Informer[*corev1.ServiceAccount]
	get      func(ctx context.Context, ns, name string) (runtime.Object, error)
}

// NewServiceAccount reads accounts from the shared informers, and from get on a cache miss (an account just
// created), as upstream does.
func NewServiceAccount(f *informer.Factory, get func(ctx context.Context, ns, name string) (runtime.Object, error)) *ServiceAccount {
	return &ServiceAccount{Operations: admission.Operations{admission.Create}, accounts: informer.For[*corev1.ServiceAccount](f, schema.GroupResource{Resource: "serviceaccounts"}), get: get}
}

// Start waits until the account informer holds its first list.
func (s *ServiceAccount) Start(ctx context.Context) { _ = s.accounts.WaitForSync(ctx) }

// Upstream's lookups of the default account, which is created just after its namespace:
// a pod created right after the namespace waits for it rather than failing.
const (
	defaultAccountAttempts = 10
	defaultAccountInterval = 500 * time.Millisecond
)

func (s *ServiceAccount) account(ctx context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	if sa, ok := s.accounts.Get(ns, name); ok {
		return sa, nil
	}
	attempts := 1
	if name == DefaultServiceAccountName {
		attempts = defaultAccountAttempts
	}
	for i := 1; ; i++ {
		obj, err := s.get(ctx, ns, name)
		if err == nil {
			return obj.(*corev1.ServiceAccount), nil
		}
		if !apierrors.IsNotFound(err) || i == attempts {
			return nil, err
		}
		t := time.NewTimer(defaultAccountInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// Admit assigns the account and mounts its token.
func (s *ServiceAccount) Admit(ctx context.Context, a *admission.Attributes) error {
	if !isPod(a) {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest("Resource was marked with kind Pod but was unable to be converted")
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		return nil // Validate refuses what a mirror pod may not use
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccountName
	}
	sa, err := s.account(ctx, a.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.Namespace, pod.Spec.ServiceAccountName, err))
	}
	if automount(sa, pod) {
		mountToken(pod)
	}
	return nil
}

// Validate refuses mirror pods that use an account or its secrets, as upstream.
func (s *ServiceAccount) Validate(_ context.Context, a *admission.Attributes) error {
	if !isPod(a) {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; !mirror {
		return nil
	}
	if pod.Spec.ServiceAccountName != "" {
		return admission.NewForbidden(a, fmt.Errorf("a mirror pod may not reference service accounts"))
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			return admission.NewForbidden(a, fmt.Errorf("a mirror pod may not reference secrets"))
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ServiceAccountToken != nil {
					return admission.NewForbidden(a, fmt.Errorf("a mirror pod may not use ServiceAccountToken volume projections"))
				}
			}
		}
	}
	return nil
}

func automount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountToken adds the projected token volume and mounts it in every container (and init
// container) that has nothing mounted at the token path yet.
func mountToken(pod *corev1.Pod) {
	needs := func(c *corev1.Container) bool {
		for _, m := range c.VolumeMounts {
			if m.MountPath == DefaultAPITokenMountPath {
				return false
			}
		}
		return true
	}
	missing := false
	for i := range pod.Spec.InitContainers {
		missing = missing || needs(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		missing = missing || needs(&pod.Spec.Containers[i])
	}
	if !missing {
		return
	}
	taken := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		taken[v.Name] = true
	}
	name := "kube-api-access-" + utilrand.String(5)
	for taken[name] {
		name = "kube-api-access-" + utilrand.String(5)
	}
	expiration := int64(tokenExpirationSeconds)
	mode := int32(0o644)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &expiration, Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: rootCAConfigMap},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
		DefaultMode: &mode,
	}}})
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: DefaultAPITokenMountPath}
	for i := range pod.Spec.InitContainers {
		if needs(&pod.Spec.InitContainers[i]) {
			pod.Spec.InitContainers[i].VolumeMounts = append(pod.Spec.InitContainers[i].VolumeMounts, mount)
		}
	}
	for i := range pod.Spec.Containers {
		if needs(&pod.Spec.Containers[i]) {
			pod.Spec.Containers[i].VolumeMounts = append(pod.Spec.Containers[i].VolumeMounts, mount)
		}
	}
}
