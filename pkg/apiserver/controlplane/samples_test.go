package controlplane_test

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// sampleNonWorkload returns a valid object of each namespaced non-workload kind.
func sampleNonWorkload(plural string, om metav1.ObjectMeta) runtime.Object {
	prefix := networkingv1.PathTypePrefix
	switch plural {
	case "limitranges":
		return &corev1.LimitRange{ObjectMeta: om, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer}}}}
	case "persistentvolumeclaims":
		return minimalPVC(om)
	case "resourcequotas":
		return &corev1.ResourceQuota{ObjectMeta: om, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}}}
	case "ingresses":
		return &networkingv1.Ingress{ObjectMeta: om, Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "a.example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
	case "networkpolicies":
		return &networkingv1.NetworkPolicy{ObjectMeta: om}
	case "endpointslices":
		return &discoveryv1.EndpointSlice{ObjectMeta: om, AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}}}
	case "csistoragecapacities":
		return &storagev1.CSIStorageCapacity{ObjectMeta: om, StorageClassName: "fast"}
	}
	return nil
}

func minimalPVC(om metav1.ObjectMeta) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: om, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
}
