package controlplane_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/registry/core"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

func ptr[T any](v T) *T { return &v }

// wantCauses fails unless err is a 422 Invalid naming every field in fields.
func wantCauses(t *testing.T, err error, fields ...string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want 422 Invalid, got %v", err)
	}
	st := err.(apierrors.APIStatus).Status()
	if st.Code != 422 {
		t.Fatalf("code %d, want 422", st.Code)
	}
	for _, f := range fields {
		found := false
		for _, c := range st.Details.Causes {
			found = found || c.Field == f
		}
		if !found {
			t.Fatalf("no cause for %q in %+v", f, st.Details.Causes)
		}
	}
}

func create(t *testing.T, s *registry.Store, ns string, obj runtime.Object) runtime.Object {
	t.Helper()
	out, err := s.Create(context.Background(), ns, "", obj, &metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", s.Names().Plural, err)
	}
	return out
}

func minimalPV(name string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}},
	}}
}

func webhook(name string) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{Name: name, SideEffects: ptr(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "hook"}},
		Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}
}

// TestNonWorkloadDefaults: a minimal object of each kind gets upstream 1.33's defaults.
func TestNonWorkloadDefaults(t *testing.T) {
	r := newRegistry(t)
	om := metav1.ObjectMeta{Name: "a"}
	tests := []struct {
		name  string
		group string
		res   string
		ns    string
		obj   runtime.Object
		check func(runtime.Object) bool
	}{
		{"pv", "", "persistentvolumes", "", minimalPV("a"), func(o runtime.Object) bool {
			pv := o.(*corev1.PersistentVolume)
			return pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRetain && *pv.Spec.VolumeMode == corev1.PersistentVolumeFilesystem &&
				pv.Status.Phase == corev1.VolumePending
		}},
		{"pvc", "", "persistentvolumeclaims", "default", minimalPVC(om), func(o runtime.Object) bool {
			pvc := o.(*corev1.PersistentVolumeClaim)
			return *pvc.Spec.VolumeMode == corev1.PersistentVolumeFilesystem && pvc.Status.Phase == corev1.ClaimPending
		}},
		{"limitrange", "", "limitranges", "default", &corev1.LimitRange{ObjectMeta: om, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}}, func(o runtime.Object) bool {
			it := o.(*corev1.LimitRange).Spec.Limits[0]
			return it.Default.Cpu().String() == "2" && it.DefaultRequest.Cpu().String() == "2"
		}},
		{"storageclass", "storage.k8s.io", "storageclasses", "", &storagev1.StorageClass{ObjectMeta: om, Provisioner: "example.com/disk"}, func(o runtime.Object) bool {
			sc := o.(*storagev1.StorageClass)
			return *sc.ReclaimPolicy == corev1.PersistentVolumeReclaimDelete && *sc.VolumeBindingMode == storagev1.VolumeBindingImmediate
		}},
		{"csidriver", "storage.k8s.io", "csidrivers", "", &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "disk.example.com"}}, func(o runtime.Object) bool {
			s := o.(*storagev1.CSIDriver).Spec
			return *s.AttachRequired && !*s.PodInfoOnMount && !*s.StorageCapacity && !*s.RequiresRepublish && !*s.SELinuxMount &&
				*s.FSGroupPolicy == storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy && len(s.VolumeLifecycleModes) == 1 && s.VolumeLifecycleModes[0] == storagev1.VolumeLifecyclePersistent
		}},
		{"networkpolicy ingress", "networking.k8s.io", "networkpolicies", "default", &networkingv1.NetworkPolicy{ObjectMeta: om}, func(o runtime.Object) bool {
			pt := o.(*networkingv1.NetworkPolicy).Spec.PolicyTypes
			return len(pt) == 1 && pt[0] == networkingv1.PolicyTypeIngress
		}},
		{"networkpolicy egress", "networking.k8s.io", "networkpolicies", "default", &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "b"},
			Spec: networkingv1.NetworkPolicySpec{Egress: []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{}}}}}}, func(o runtime.Object) bool {
			s := o.(*networkingv1.NetworkPolicy).Spec
			return len(s.PolicyTypes) == 2 && s.PolicyTypes[1] == networkingv1.PolicyTypeEgress && *s.Egress[0].Ports[0].Protocol == corev1.ProtocolTCP
		}},
		{"ingressclass", "networking.k8s.io", "ingressclasses", "", &networkingv1.IngressClass{ObjectMeta: om, Spec: networkingv1.IngressClassSpec{Controller: "example.com/ingress",
			Parameters: &networkingv1.IngressClassParametersReference{Kind: "Params", Name: "p"}}}, func(o runtime.Object) bool {
			return *o.(*networkingv1.IngressClass).Spec.Parameters.Scope == networkingv1.IngressClassParametersReferenceScopeCluster
		}},
		{"endpointslice", "discovery.k8s.io", "endpointslices", "default", &discoveryv1.EndpointSlice{ObjectMeta: om, AddressType: discoveryv1.AddressTypeIPv4,
			Ports: []discoveryv1.EndpointPort{{Port: ptr(int32(80))}}}, func(o runtime.Object) bool {
			p := o.(*discoveryv1.EndpointSlice).Ports[0]
			return *p.Protocol == corev1.ProtocolTCP && *p.Name == ""
		}},
		{"priorityclass", "scheduling.k8s.io", "priorityclasses", "", &schedulingv1.PriorityClass{ObjectMeta: om, Value: 10}, func(o runtime.Object) bool {
			return *o.(*schedulingv1.PriorityClass).PreemptionPolicy == corev1.PreemptLowerPriority
		}},
		{"webhook", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: om,
			Webhooks: []admissionregistrationv1.ValidatingWebhook{webhook("v.example.com")}}, func(o runtime.Object) bool {
			w := o.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks[0]
			return *w.FailurePolicy == admissionregistrationv1.Fail && *w.MatchPolicy == admissionregistrationv1.Equivalent && w.NamespaceSelector != nil &&
				w.ObjectSelector != nil && *w.TimeoutSeconds == 10 && *w.Rules[0].Scope == admissionregistrationv1.AllScopes && *w.ClientConfig.Service.Port == 443
		}},
		{"mutating webhook", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: om,
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "m.example.com", SideEffects: ptr(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr("https://hook.example.com/m")}}}}, func(o runtime.Object) bool {
			w := o.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks[0]
			return *w.ReinvocationPolicy == admissionregistrationv1.NeverReinvocationPolicy && *w.FailurePolicy == admissionregistrationv1.Fail && *w.TimeoutSeconds == 10
		}},
		{"flowschema", "flowcontrol.apiserver.k8s.io", "flowschemas", "", &flowcontrolv1.FlowSchema{ObjectMeta: om, Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "global-default"}}}, func(o runtime.Object) bool {
			return o.(*flowcontrolv1.FlowSchema).Spec.MatchingPrecedence == 1000
		}},
		{"prioritylevel", "flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", "", &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: om, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue}}}}, func(o runtime.Object) bool {
			l := o.(*flowcontrolv1.PriorityLevelConfiguration).Spec.Limited
			q := l.LimitResponse.Queuing
			return *l.NominalConcurrencyShares == 30 && *l.LendablePercent == 0 && q.HandSize == 8 && q.Queues == 64 && q.QueueLengthLimit == 50
		}},
		{"runtimeclass", "node.k8s.io", "runtimeclasses", "", &nodev1.RuntimeClass{ObjectMeta: om, Handler: "runc"}, func(o runtime.Object) bool {
			return o.(*nodev1.RuntimeClass).Handler == "runc"
		}},
		{"validatingadmissionpolicy", "admissionregistration.k8s.io", "validatingadmissionpolicies", "", &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: om,
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}}}}}},
				Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= 5"}}}}, func(o runtime.Object) bool {
			s := o.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec
			return *s.FailurePolicy == admissionregistrationv1.Fail && *s.MatchConstraints.MatchPolicy == admissionregistrationv1.Equivalent &&
				*s.MatchConstraints.ResourceRules[0].Scope == admissionregistrationv1.AllScopes
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := create(t, store(r, tc.group, tc.res), tc.ns, tc.obj)
			if !tc.check(out) {
				t.Fatalf("defaults not applied: %+v", out)
			}
		})
	}
}

// TestNonWorkloadInvalid: bad objects are 422 with upstream's field paths.
func TestNonWorkloadInvalid(t *testing.T) {
	r := newRegistry(t)
	om := metav1.ObjectMeta{Name: "a"}
	exact := networkingv1.PathTypeExact
	noSource := minimalPV("nosrc")
	noSource.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{}
	twoSources := minimalPV("twosrc")
	twoSources.Spec.NFS = &corev1.NFSVolumeSource{Server: "nfs", Path: "/x"}
	tests := []struct {
		name   string
		group  string
		res    string
		ns     string
		obj    runtime.Object
		fields []string
	}{
		{"pv without source", "", "persistentvolumes", "", noSource, []string{"spec"}},
		{"pv with two sources", "", "persistentvolumes", "", twoSources, []string{"spec.nfs"}},
		{"pv without capacity or modes", "", "persistentvolumes", "", &corev1.PersistentVolume{ObjectMeta: om, Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/d"}}}}, []string{"spec.capacity", "spec.accessModes"}},
		{"pvc without storage", "", "persistentvolumeclaims", "default", &corev1.PersistentVolumeClaim{ObjectMeta: om, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{"ReadWriteAlways"}}}, []string{"spec.resources[storage]", "spec.accessModes"}},
		{"pvc negative storage", "", "persistentvolumeclaims", "default", &corev1.PersistentVolumeClaim{ObjectMeta: om, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("-1Gi")}}}}, []string{"spec.resources[storage]"}},
		{"quota negative", "", "resourcequotas", "default", &corev1.ResourceQuota{ObjectMeta: om, Spec: corev1.ResourceQuotaSpec{
			Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}}}, []string{"spec.hard[cpu]"}},
		{"limitrange bad type", "", "limitranges", "default", &corev1.LimitRange{ObjectMeta: om, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: "Node"}}}}, []string{"spec.limits[0].type"}},
		{"ingress without pathType", "networking.k8s.io", "ingresses", "default", &networkingv1.Ingress{ObjectMeta: om, Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/",
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}},
			[]string{"spec.rules[0].http.paths[0].pathType"}},
		{"ingress bad path and port", "networking.k8s.io", "ingresses", "default", &networkingv1.Ingress{ObjectMeta: om, Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: "10.0.0.1", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "x", PathType: &exact,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 70000}}}}}}}}}}},
			[]string{"spec.rules[0].host", "spec.rules[0].http.paths[0].path", "spec.rules[0].http.paths[0].backend.service.port.number"}},
		{"ingress empty", "networking.k8s.io", "ingresses", "default", &networkingv1.Ingress{ObjectMeta: om}, []string{"spec"}},
		{"networkpolicy bad port and cidr", "networking.k8s.io", "networkpolicies", "default", &networkingv1.NetworkPolicy{ObjectMeta: om, Spec: networkingv1.NetworkPolicySpec{
			Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr(corev1.Protocol("ICMP"))}},
				From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"192.168.0.0/16"}}}}}}}},
			[]string{"spec.ingress[0].ports[0].protocol", "spec.ingress[0].from[0].ipBlock.except[0]"}},
		{"ipaddress not an ip", "networking.k8s.io", "ipaddresses", "", &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "not-an-ip"},
			Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Name: "x"}}}, []string{"metadata.name"}},
		{"servicecidr bad", "networking.k8s.io", "servicecidrs", "", &networkingv1.ServiceCIDR{ObjectMeta: om, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.0.0.1/8"}}}, []string{"spec.cidrs[0]"}},
		{"endpointslice bad address", "discovery.k8s.io", "endpointslices", "default", &discoveryv1.EndpointSlice{ObjectMeta: om, AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"fe80::1"}}}}, []string{"endpoints[0].addresses[0]"}},
		{"endpointslice no address type", "discovery.k8s.io", "endpointslices", "default", &discoveryv1.EndpointSlice{ObjectMeta: om}, []string{"addressType"}},
		{"storageclass without provisioner", "storage.k8s.io", "storageclasses", "", &storagev1.StorageClass{ObjectMeta: om}, []string{"provisioner"}},
		{"volumeattachment without source", "storage.k8s.io", "volumeattachments", "", &storagev1.VolumeAttachment{ObjectMeta: om,
			Spec: storagev1.VolumeAttachmentSpec{Attacher: "disk.example.com", NodeName: "n1"}}, []string{"spec.source"}},
		{"csinode duplicate driver", "storage.k8s.io", "csinodes", "", &storagev1.CSINode{ObjectMeta: om, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
			{Name: "d", NodeID: "n"}, {Name: "d", NodeID: "n"}}}}, []string{"spec.drivers[1].name"}},
		{"priorityclass too high", "scheduling.k8s.io", "priorityclasses", "", &schedulingv1.PriorityClass{ObjectMeta: om, Value: 2000000000}, []string{"value"}},
		{"priorityclass system prefix", "scheduling.k8s.io", "priorityclasses", "", &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-mine"}, Value: 1}, []string{"metadata.name"}},
		{"runtimeclass bad handler", "node.k8s.io", "runtimeclasses", "", &nodev1.RuntimeClass{ObjectMeta: om, Handler: "Not_Valid"}, []string{"handler"}},
		{"webhook without sideEffects", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: om,
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "v.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr("http://x")}}}},
			[]string{"webhooks[0].sideEffects", "webhooks[0].admissionReviewVersions", "webhooks[0].clientConfig.url"}},
		{"binding without policy name", "admissionregistration.k8s.io", "validatingadmissionpolicybindings", "", &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: om},
			[]string{"spec.policyName", "spec.validationActions"}},
		{"flowschema without level", "flowcontrol.apiserver.k8s.io", "flowschemas", "", &flowcontrolv1.FlowSchema{ObjectMeta: om, Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 20000}},
			[]string{"spec.matchingPrecedence", "spec.priorityLevelConfiguration.name"}},
		{"prioritylevel limited without limited", "flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", "", &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: om,
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited}}, []string{"spec.limited"}},
		{"csr without request", "certificates.k8s.io", "certificatesigningrequests", "", &certificatesv1.CertificateSigningRequest{ObjectMeta: om}, []string{"spec.request", "spec.usages", "spec.signerName"}},
		{"bad label", "networking.k8s.io", "ingressclasses", "", &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"bad key!": "v"}},
			Spec: networkingv1.IngressClassSpec{Controller: "example.com/x"}}, []string{"metadata.labels"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := store(r, tc.group, tc.res).Create(context.Background(), tc.ns, "", tc.obj, &metav1.CreateOptions{})
			wantCauses(t, err, tc.fields...)
		})
	}
}

// TestNonWorkloadImmutable: the fields upstream keeps after creation refuse updates (422),
// the ones it lets change do.
func TestNonWorkloadImmutable(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()

	t.Run("pvc spec except resources of a bound claim", func(t *testing.T) {
		pvcs := store(r, "", "persistentvolumeclaims")
		pvc := create(t, pvcs, "default", minimalPVC(metav1.ObjectMeta{Name: "claim"})).(*corev1.PersistentVolumeClaim)
		changed := pvc.DeepCopy()
		changed.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		_, _, err := pvcs.Update(ctx, "default", "claim", put(changed), &metav1.UpdateOptions{})
		wantCauses(t, err, "spec")
		// Bind it through /status, then grow it: allowed.
		bound := pvc.DeepCopy()
		bound.Status.Phase = corev1.ClaimBound
		bound.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
		if _, _, err := r.Resource(schema.GroupResource{Resource: "persistentvolumeclaims"}).Subresources["status"].(registry.Updater).Update(ctx, "default", "claim", put(bound), &metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		cur, _ := pvcs.Get(ctx, "default", "claim", &metav1.GetOptions{})
		grown := cur.(*corev1.PersistentVolumeClaim).DeepCopy()
		grown.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		out, _, err := pvcs.Update(ctx, "default", "claim", put(grown), &metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("growing a bound claim: %v", err)
		}
		if q := out.(*corev1.PersistentVolumeClaim).Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "2Gi" {
			t.Fatalf("storage %s, want 2Gi", q.String())
		}
		shrunk := out.(*corev1.PersistentVolumeClaim).DeepCopy()
		shrunk.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("512Mi")
		_, _, err = pvcs.Update(ctx, "default", "claim", put(shrunk), &metav1.UpdateOptions{})
		wantCauses(t, err, "spec.resources.requests.storage")
	})
	t.Run("pv source", func(t *testing.T) {
		pvs := store(r, "", "persistentvolumes")
		pv := create(t, pvs, "", minimalPV("vol")).(*corev1.PersistentVolume)
		pv.Spec.HostPath.Path = "/elsewhere"
		_, _, err := pvs.Update(ctx, "", "vol", put(pv), &metav1.UpdateOptions{})
		wantCauses(t, err, "spec.persistentvolumesource")
	})
	t.Run("storageclass provisioner and parameters", func(t *testing.T) {
		scs := store(r, "storage.k8s.io", "storageclasses")
		sc := create(t, scs, "", &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "example.com/disk", Parameters: map[string]string{"type": "ssd"}}).(*storagev1.StorageClass)
		sc.Provisioner = "example.com/other"
		sc.Parameters["type"] = "hdd"
		_, _, err := scs.Update(ctx, "", "fast", put(sc), &metav1.UpdateOptions{})
		wantCauses(t, err, "provisioner", "parameters")
	})
	t.Run("priorityclass value", func(t *testing.T) {
		pcs := store(r, "scheduling.k8s.io", "priorityclasses")
		pc := create(t, pcs, "", &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 100}).(*schedulingv1.PriorityClass)
		pc.Value = 200
		_, _, err := pcs.Update(ctx, "", "high", put(pc), &metav1.UpdateOptions{})
		wantCauses(t, err, "value")
	})
	// Upstream's CSR strategy keeps the stored spec on an update: a changed spec is
	// ignored, not refused.
	t.Run("csr spec", func(t *testing.T) {
		csrs := store(r, "certificates.k8s.io", "certificatesigningrequests")
		csr := create(t, csrs, "", newCSR(t, "spec")).(*certificatesv1.CertificateSigningRequest)
		csr.Spec.Usages = append(csr.Spec.Usages, certificatesv1.UsageServerAuth)
		out, _, err := csrs.Update(ctx, "", "spec", put(csr), &metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := out.(*certificatesv1.CertificateSigningRequest).Spec.Usages; slices.Contains(got, certificatesv1.UsageServerAuth) {
			t.Fatalf("usages %v: the update changed the spec", got)
		}
	})
}

// newCSR returns a CSR with a real, signed PKCS#10 request.
func newCSR(t *testing.T, name string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: certificatesv1.CertificateSigningRequestSpec{
		Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
		SignerName: "kubernetes.io/kube-apiserver-client-kubelet",
		Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
	}}
}

// selfSigned returns a PEM certificate for status.certificate.
func selfSigned(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "n1"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func condTypes(csr *certificatesv1.CertificateSigningRequest) []string {
	var out []string
	for _, c := range csr.Status.Conditions {
		out = append(out, string(c.Type))
	}
	return out
}

// TestCSRSubresources: Approved/Denied only through /approval, the certificate only through
// /status, nothing of status through the main resource.
func TestCSRSubresources(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	res := r.Resource(schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"})
	csrs, status, approval := res.Store, res.Subresources["status"].(registry.Updater), res.Subresources["approval"].(registry.Updater)
	csr := create(t, csrs, "", newCSR(t, "node-csr")).(*certificatesv1.CertificateSigningRequest)
	approved := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "KubectlApprove"}

	t.Run("main resource drops status", func(t *testing.T) {
		c := csr.DeepCopy()
		c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approved}
		out, _, err := csrs.Update(ctx, "", "node-csr", put(c), &metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := condTypes(out.(*certificatesv1.CertificateSigningRequest)); len(got) != 0 {
			t.Fatalf("conditions set through the main resource: %v", got)
		}
	})
	t.Run("status may not approve", func(t *testing.T) {
		cur, _ := csrs.Get(ctx, "", "node-csr", &metav1.GetOptions{})
		c := cur.(*certificatesv1.CertificateSigningRequest).DeepCopy()
		c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approved}
		_, _, err := status.Update(ctx, "", "node-csr", put(c), &metav1.UpdateOptions{})
		wantCauses(t, err, "status.conditions")
	})
	t.Run("approval may not set the certificate", func(t *testing.T) {
		cur, _ := csrs.Get(ctx, "", "node-csr", &metav1.GetOptions{})
		c := cur.(*certificatesv1.CertificateSigningRequest).DeepCopy()
		c.Status.Certificate = selfSigned(t)
		out, _, err := approval.Update(ctx, "", "node-csr", put(c), &metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.(*certificatesv1.CertificateSigningRequest).Status.Certificate) != 0 {
			t.Fatal("certificate set through /approval")
		}
	})
	t.Run("approve, then issue", func(t *testing.T) {
		cur, _ := csrs.Get(ctx, "", "node-csr", &metav1.GetOptions{})
		c := cur.(*certificatesv1.CertificateSigningRequest).DeepCopy()
		c.Spec.Usages = nil // ignored: only conditions come from /approval
		c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approved}
		out, _, err := approval.Update(ctx, "", "node-csr", put(c), &metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*certificatesv1.CertificateSigningRequest)
		if ct := condTypes(got); len(ct) != 1 || ct[0] != "Approved" || got.Status.Conditions[0].LastUpdateTime.IsZero() || len(got.Spec.Usages) != 2 {
			t.Fatalf("after approval: conditions %v, usages %v", ct, got.Spec.Usages)
		}
		issued := got.DeepCopy()
		issued.Status.Certificate = selfSigned(t)
		issued.Status.Conditions = nil // the Approved condition may not be removed
		_, _, err = status.Update(ctx, "", "node-csr", put(issued), &metav1.UpdateOptions{})
		wantCauses(t, err, "status.conditions")
		issued.Status.Conditions = got.Status.Conditions
		out, _, err = status.Update(ctx, "", "node-csr", put(issued), &metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.(*certificatesv1.CertificateSigningRequest).Status.Certificate) == 0 {
			t.Fatal("certificate not stored through /status")
		}
		bad := out.(*certificatesv1.CertificateSigningRequest).DeepCopy()
		bad.Status.Certificate = []byte("not pem")
		_, _, err = status.Update(ctx, "", "node-csr", put(bad), &metav1.UpdateOptions{})
		wantCauses(t, err, "status.certificate")
	})
	t.Run("approved and denied", func(t *testing.T) {
		cur, _ := csrs.Get(ctx, "", "node-csr", &metav1.GetOptions{})
		c := cur.(*certificatesv1.CertificateSigningRequest).DeepCopy()
		c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue})
		_, _, err := approval.Update(ctx, "", "node-csr", put(c), &metav1.UpdateOptions{})
		wantCauses(t, err, "status.conditions[1].type")
	})
}

// TestStatusIgnoresSpec: a kind's /status writes status only.
func TestIngressStatusIgnoresSpec(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	res := r.Resource(schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"})
	ing := create(t, res.Store, "default", sampleNonWorkload("ingresses", metav1.ObjectMeta{Name: "web"})).(*networkingv1.Ingress)
	ing.Spec.Rules[0].Host = "changed.example.com"
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "10.77.0.10"}}
	out, _, err := res.Subresources["status"].(registry.Updater).Update(ctx, "default", "web", put(ing), &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*networkingv1.Ingress)
	if got.Spec.Rules[0].Host != "a.example.com" || len(got.Status.LoadBalancer.Ingress) != 1 {
		t.Fatalf("status update: host %q, status %+v", got.Spec.Rules[0].Host, got.Status)
	}
}

// TestNamespaceRules: the standard namespaces may not be deleted; /finalize sets
// spec.finalizers and metadata, never status (as upstream's finalize strategy).
func TestNamespaceRules(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	nss := store(r, "", "namespaces")
	for _, name := range []string{"default", "kube-system", "kube-public"} {
		_, _, err := nss.Delete(ctx, "", name, &metav1.DeleteOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "this namespace may not be deleted") {
			t.Fatalf("delete %s: %v, want 403 this namespace may not be deleted", name, err)
		}
	}
	if _, err := nss.Get(ctx, "", "kube-system", &metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := create(t, nss, "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fin"}}).(*corev1.Namespace)
	ns.Spec.Finalizers = []corev1.FinalizerName{"example.com/keep"}
	ns.Status.Phase = corev1.NamespaceTerminating
	ns.Labels["added"] = "x"
	fin := r.Resource(schema.GroupResource{Resource: "namespaces"}).Subresources["finalize"].(registry.Updater)
	out, _, err := fin.Update(ctx, "", "fin", put(ns), &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Namespace)
	if len(got.Spec.Finalizers) != 1 || got.Spec.Finalizers[0] != "example.com/keep" || got.Status.Phase != corev1.NamespaceActive || got.Labels["added"] != "x" || got.Labels[corev1.LabelMetadataName] != "fin" {
		t.Fatalf("after finalize: %+v %+v labels %v", got.Spec, got.Status, got.Labels)
	}
	ns.ResourceVersion = ""
	ns.Spec.Finalizers = []corev1.FinalizerName{"no-domain"}
	_, _, err = fin.Update(ctx, "", "fin", put(ns), &metav1.UpdateOptions{})
	wantCauses(t, err, "spec.finalizers[0]")
}

// TestBootstrapPriorityClasses: Start creates upstream's two system classes, which may be
// neither deleted nor imitated.
func TestBootstrapPriorityClasses(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	pcs := store(r, "scheduling.k8s.io", "priorityclasses")
	for name, value := range map[string]int32{"system-cluster-critical": 2000000000, "system-node-critical": 2000001000} {
		obj, err := pcs.Get(ctx, "", name, &metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pc := obj.(*schedulingv1.PriorityClass); pc.Value != value || *pc.PreemptionPolicy != corev1.PreemptLowerPriority {
			t.Fatalf("%s: value %d policy %v", name, pc.Value, *pc.PreemptionPolicy)
		}
		if _, _, err := pcs.Delete(ctx, "", name, &metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("delete %s: %v, want 403", name, err)
		}
	}
}

// TestPodSubresources: top-level bindings, ephemeral containers and in-place resize.
func TestPodSubresources(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	pods := r.Resource(schema.GroupResource{Resource: "pods"})
	cpu := func(req, lim string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(req)}, Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(lim)}}
	}
	pod := create(t, pods.Store, "default", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Image: "nginx:1.27", Resources: cpu("100m", "200m")}}}}).(*corev1.Pod)

	t.Run("bindings", func(t *testing.T) {
		var bindings registry.Creater
		for _, v := range r.Views {
			if v.Names.Plural == "bindings" {
				bindings = v.Storage.(registry.Creater)
			}
		}
		_, err := bindings.Create(ctx, "default", "", &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, &metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := pods.Store.Get(ctx, "default", "p", &metav1.GetOptions{})
		if n := got.(*corev1.Pod).Spec.NodeName; n != "n1" {
			t.Fatalf("nodeName %q after binding", n)
		}
		_, err = bindings.Create(ctx, "default", "", &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n2"}}, &metav1.CreateOptions{})
		if !apierrors.IsConflict(err) {
			t.Fatalf("second binding: %v, want 409", err)
		}
	})
	t.Run("ephemeralcontainers", func(t *testing.T) {
		ec := pods.Subresources["ephemeralcontainers"].(registry.Updater)
		p := pod.DeepCopy()
		p.ResourceVersion = ""
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox:1.36"}}}
		p.Spec.Containers[0].Image = "nginx:1.28" // not taken from this subresource
		out, _, err := ec.Update(ctx, "default", "p", put(p), &metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*corev1.Pod)
		if len(got.Spec.EphemeralContainers) != 1 || got.Spec.EphemeralContainers[0].TerminationMessagePolicy != corev1.TerminationMessageReadFile || got.Spec.Containers[0].Image != "nginx:1.27" {
			t.Fatalf("after ephemeralcontainers: %+v", got.Spec)
		}
		p.Spec.EphemeralContainers = nil
		_, _, err = ec.Update(ctx, "default", "p", put(p), &metav1.UpdateOptions{})
		wantCauses(t, err, "spec.ephemeralContainers")
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{got.Spec.EphemeralContainers[0], {EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "c", Image: "busybox:1.36"}}}
		_, _, err = ec.Update(ctx, "default", "p", put(p), &metav1.UpdateOptions{})
		wantCauses(t, err, "spec.ephemeralContainers[1].name")
	})
	t.Run("resize", func(t *testing.T) {
		rs := pods.Subresources["resize"].(registry.Updater)
		cur, _ := pods.Store.Get(ctx, "default", "p", &metav1.GetOptions{})
		p := cur.(*corev1.Pod).DeepCopy()
		p.ResourceVersion = ""
		p.Spec.Containers[0].Resources = cpu("300m", "400m")
		p.Spec.Containers[0].Image = "nginx:1.28" // not taken from this subresource
		out, _, err := rs.Update(ctx, "default", "p", put(p), &metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := out.(*corev1.Pod).Spec.Containers[0]
		if c.Resources.Limits.Cpu().String() != "400m" || c.Image != "nginx:1.27" {
			t.Fatalf("after resize: %+v image %s", c.Resources, c.Image)
		}
		p.Spec.Containers[0].Resources = cpu("300m", "300m")
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("64Mi")
		p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("64Mi")
		_, _, err = rs.Update(ctx, "default", "p", put(p), &metav1.UpdateOptions{})
		wantCauses(t, err, "spec") // Burstable to Guaranteed
		p.Spec.Containers[0].Resources = cpu("300m", "400m")
		p.Spec.Containers[0].Resources.Limits["example.com/gpu"] = resource.MustParse("1")
		_, _, err = rs.Update(ctx, "default", "p", put(p), &metav1.UpdateOptions{})
		wantCauses(t, err, "spec")
	})
	t.Run("proxy subresources", func(t *testing.T) {
		logs := pods.Subresources["log"].(registry.Connecter)
		req := httptest.NewRequest("GET", "/api/v1/namespaces/default/pods/p/log", nil)
		if _, err := logs.Connect(ctx, "default", "p", "", req); !apierrors.IsServiceUnavailable(err) {
			t.Fatalf("pods/log without a connector: %v, want 503", err)
		}
		if _, err := logs.Connect(ctx, "default", "missing", "", req); !apierrors.IsNotFound(err) {
			t.Fatalf("pods/log of a missing pod: %v, want 404", err)
		}
		var got []string
		r.SetConnect(func(_ context.Context, resource, sub, ns, name, path string, _ *http.Request) (http.Handler, error) {
			got = append(got, strings.Join([]string{resource, sub, ns, name, path}, "|"))
			return http.NotFoundHandler(), nil
		})
		px := r.Resource(schema.GroupResource{Resource: "services"}).Subresources["proxy"].(registry.Connecter)
		if h, err := px.Connect(ctx, "default", "https:s:web", "a/b/", req); err != nil || h == nil {
			t.Fatalf("services/proxy: %v", err)
		}
		if want := []string{"services|proxy|default|https:s:web|a/b/"}; !slices.Equal(got, want) {
			t.Fatalf("connect got %q, want %q", got, want)
		}
	})
}

// TestEviction without a PodDisruptionBudget kind served: the pod is deleted.
func TestEviction(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	pods := r.Resource(schema.GroupResource{Resource: "pods"})
	create(t, pods.Store, "default", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}})
	ev := pods.Subresources["eviction"].(registry.Creater)
	if _, err := ev.Create(ctx, "default", "p", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, &metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Fatalf("eviction with another name: %v, want 400", err)
	}
	out, err := ev.Create(ctx, "default", "p", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := out.(*metav1.Status); st.Status != metav1.StatusSuccess || st.Code != 201 {
		t.Fatalf("eviction answer %+v", st)
	}
	if _, err := pods.Store.Get(ctx, "default", "p", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("evicted pod still there: %v", err)
	}
	if _, err := ev.Create(ctx, "default", "p", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, &metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("eviction of a missing pod: %v, want 404", err)
	}
}

// TestEventsTwoShapes: events.k8s.io/v1 events are the core events: written in either
// shape, read and watched in both.
func TestEventsTwoShapes(t *testing.T) {
	r := newRegistry(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	coreEvents := store(r, "", "events")
	var v1 *core.EventsV1Store
	for _, v := range r.Views {
		if v.Names.Group == "events.k8s.io" {
			v1 = v.Storage.(*core.EventsV1Store)
		}
	}
	w, err := v1.Watch(ctx, "default", &metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	now := metav1.NowMicro()
	_, err = v1.Create(ctx, "default", "", &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1"}, EventTime: now, ReportingController: "example.com/ctl",
		ReportingInstance: "ctl-1", Action: "Scheduling", Reason: "Scheduled", Note: "assigned", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"}}, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := coreEvents.Get(ctx, "default", "e1", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev := obj.(*corev1.Event); ev.Message != "assigned" || ev.InvolvedObject.Name != "p" || ev.ReportingController != "example.com/ctl" {
		t.Fatalf("coreEvents shape: %+v", ev)
	}
	select {
	case e := <-w.ResultChan():
		got, ok := e.Object.(*eventsv1.Event)
		if e.Type != watch.Added || !ok || got.Note != "assigned" || got.APIVersion != "events.k8s.io/v1" {
			t.Fatalf("watch event %s %#v", e.Type, e.Object)
		}
	case <-ctx.Done():
		t.Fatal("no watch event")
	}
	create(t, coreEvents, "default", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e2"}, Message: "from coreEvents", Reason: "Pulled", Type: corev1.EventTypeNormal})
	list, err := v1.List(ctx, "default", &metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if items := list.(*eventsv1.EventList).Items; len(items) != 2 || items[1].Note != "from coreEvents" {
		t.Fatalf("events.k8s.io list: %+v", items)
	}
	_, err = v1.Create(ctx, "default", "", &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Type: "Odd"}, &metav1.CreateOptions{})
	wantCauses(t, err, "eventTime", "reportingController", "action", "reason", "type")
	if _, err := v1.Get(ctx, "default", "missing", &metav1.GetOptions{}); !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "events.events.k8s.io") {
		t.Fatalf("missing event: %v", err)
	}
}

// TestSizeLimits: ConfigMap and Secret data over 1 MiB is 422; an object over etcd's request
// limit is 413, never a retryable 503.
func TestSizeLimits(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	big := strings.Repeat("x", 2<<20)
	_, err := store(r, "", "configmaps").Create(ctx, "default", "", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Data: map[string]string{"k": big}}, &metav1.CreateOptions{})
	wantCauses(t, err, "[]") // upstream's path for the whole object
	if !strings.Contains(err.Error(), "Too long: must have at most 1048576 bytes") {
		t.Fatalf("message %q", err.Error())
	}
	_, err = store(r, "", "secrets").Create(ctx, "default", "", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Data: map[string][]byte{"k": []byte(big)}}, &metav1.CreateOptions{})
	wantCauses(t, err, "data")
	// Exactly 1 MiB is allowed.
	create(t, store(r, "", "configmaps"), "default", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limit"}, Data: map[string]string{"k": strings.Repeat("x", 1<<20)}})
	for _, n := range []int{1600 << 10, 2100 << 10} {
		_, err = store(r, "", "events").Create(ctx, "default", "", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Message: strings.Repeat("x", n)}, &metav1.CreateOptions{})
		if !apierrors.IsRequestEntityTooLargeError(err) {
			t.Fatalf("%d byte event: %v, want 413", n, err)
		}
	}
}

// TestComponentStatuses: etcd-0 is healthy, and the scheduler and controller-manager are listed.
func TestComponentStatuses(t *testing.T) {
	r := newRegistry(t)
	var cs *core.ComponentStatusStore
	for _, v := range r.Views {
		if v.Names.Plural == "componentstatuses" {
			cs = v.Storage.(*core.ComponentStatusStore)
		}
	}
	list, err := cs.List(context.Background(), "", &metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]corev1.ComponentStatus{}
	for _, it := range list.(*corev1.ComponentStatusList).Items {
		names[it.Name] = it
	}
	etcd, ok := names["etcd-0"]
	if !ok || etcd.Conditions[0].Status != corev1.ConditionTrue || etcd.Conditions[0].Message != `{"health":"true","reason":""}` {
		t.Fatalf("etcd-0: %+v", etcd)
	}
	for _, n := range []string{"scheduler", "controller-manager"} {
		if c, ok := names[n]; !ok || len(c.Conditions) != 1 || c.Conditions[0].Type != corev1.ComponentHealthy {
			t.Fatalf("%s: %+v", n, c)
		}
	}
	if _, err := cs.Get(context.Background(), "", "nope", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get nope: %v", err)
	}
}
