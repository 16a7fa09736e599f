package controlplane_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	resourcev1 "k8s.io/api/resource/v1"
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
	case "resourceclaims":
		return &resourcev1.ResourceClaim{ObjectMeta: om, Spec: sampleClaimSpec()}
	case "resourceclaimtemplates":
		return &resourcev1.ResourceClaimTemplate{ObjectMeta: om, Spec: resourcev1.ResourceClaimTemplateSpec{Spec: sampleClaimSpec()}}
	case "podcertificaterequests":
		return &certificatesv1.PodCertificateRequest{ObjectMeta: om, Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: "example.com/signer", PodName: "web", PodUID: "pod-uid", ServiceAccountName: "default", ServiceAccountUID: "sa-uid",
			NodeName: "n1", NodeUID: "node-uid", MaxExpirationSeconds: ptr(int32(86400)), StubPKCS10Request: stubCSR()}}
	}
	return nil
}

func minimalPVC(om metav1.ObjectMeta) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: om, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
}

func sampleClaimSpec() resourcev1.ResourceClaimSpec {
	return resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
		Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}}
}

// stubCSR is a signed, empty PKCS#10 request for a fresh Ed25519 key, as a kubelet sends.
func stubCSR() []byte {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		panic(err)
	}
	return der
}
