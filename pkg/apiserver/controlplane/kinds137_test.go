package controlplane_test

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestKinds137Invalid: the kinds GA or on by default since 1.33 refuse what upstream's
// validation refuses, with its field paths.
func TestKinds137Invalid(t *testing.T) {
	r := newRegistry(t)
	om := metav1.ObjectMeta{Name: "a"}
	tests := []struct {
		name, group, res, ns string
		obj                  runtime.Object
		fields               []string
	}{
		{"deviceclass selector without cel", "resource.k8s.io", "deviceclasses", "", &resourcev1.DeviceClass{ObjectMeta: om,
			Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{}}}}, []string{"spec.selectors[0].cel"}},
		{"claim request without class", "resource.k8s.io", "resourceclaims", "default", &resourcev1.ResourceClaim{ObjectMeta: om,
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
				{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{}}, {Name: "Bad_Name"}}}}},
			[]string{"spec.devices.requests[0].exactly.deviceClassName", "spec.devices.requests[1].name", "spec.devices.requests[1]"}},
		{"claim all with count", "resource.k8s.io", "resourceclaims", "default", &resourcev1.ResourceClaim{ObjectMeta: om,
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu",
				Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "c", AllocationMode: resourcev1.DeviceAllocationModeAll, Count: 2}}}}}},
			[]string{"spec.devices.requests[0].exactly.count"}},
		{"template request without name", "resource.k8s.io", "resourceclaimtemplates", "default", &resourcev1.ResourceClaimTemplate{ObjectMeta: om,
			Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
				{Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "c"}}}}}}}, []string{"spec.spec.devices.requests[0].name"}},
		{"slice without driver, pool or node", "resource.k8s.io", "resourceslices", "", &resourcev1.ResourceSlice{ObjectMeta: om},
			[]string{"spec.driver", "spec.pool.name", "spec.pool.resourceSliceCount", "spec"}},
		{"slice with two node choices", "resource.k8s.io", "resourceslices", "", &resourcev1.ResourceSlice{ObjectMeta: om, Spec: resourcev1.ResourceSliceSpec{
			Driver: "gpu.example.com", Pool: resourcev1.ResourcePool{Name: "p", ResourceSliceCount: 1}, NodeName: ptr("n1"), AllNodes: ptr(true)}}, []string{"spec"}},
		{"taint rule without key or effect", "resource.k8s.io", "devicetaintrules", "", &resourcev1.DeviceTaintRule{ObjectMeta: om},
			[]string{"spec.taint.key", "spec.taint.effect"}},
		{"vac without driver or parameters", "storage.k8s.io", "volumeattributesclasses", "", &storagev1.VolumeAttributesClass{ObjectMeta: om},
			[]string{"driverName", "parameters"}},
		{"trust bundle not a CA and misnamed", "certificates.k8s.io", "clustertrustbundles", "", &certificatesv1.ClusterTrustBundle{ObjectMeta: om,
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/signer", TrustBundle: "no pem"}}, []string{"metadata.name", "spec.trustBundle"}},
		{"pod certificate request empty", "certificates.k8s.io", "podcertificaterequests", "default", &certificatesv1.PodCertificateRequest{ObjectMeta: om},
			[]string{"spec.signerName", "spec.podName", "spec.podUID", "spec.maxExpirationSeconds"}},
		{"migration without resource", "storagemigration.k8s.io", "storageversionmigrations", "", &storagemigrationv1.StorageVersionMigration{ObjectMeta: om},
			[]string{"spec.resource.resource"}},
		{"mutating policy without mutations", "admissionregistration.k8s.io", "mutatingadmissionpolicies", "", &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: om},
			[]string{"spec.matchConstraints", "spec.mutations", "spec.reinvocationPolicy"}},
		{"mutating binding without policy", "admissionregistration.k8s.io", "mutatingadmissionpolicybindings", "", &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: om},
			[]string{"spec.policyName"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := store(r, tc.group, tc.res).Create(context.Background(), tc.ns, "", tc.obj, &metav1.CreateOptions{})
			wantCauses(t, err, tc.fields...)
		})
	}
}

// TestKinds137DefaultsAndImmutability: upstream's defaults (a request's allocation mode and
// count, a taint's time, a policy's failure policy) and the fields fixed after creation.
func TestKinds137DefaultsAndImmutability(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	claims := store(r, "resource.k8s.io", "resourceclaims")
	claim := create(t, claims, "default", &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: sampleClaimSpec()}).(*resourcev1.ResourceClaim)
	if e := claim.Spec.Devices.Requests[0].Exactly; e.AllocationMode != resourcev1.DeviceAllocationModeExactCount || e.Count != 1 {
		t.Errorf("request defaults: mode %q count %d, want ExactCount 1", e.AllocationMode, e.Count)
	}
	claim.Spec.Devices.Requests[0].Exactly.DeviceClassName = "other.example.com"
	_, _, err := claims.Update(ctx, "default", "c", put(claim), &metav1.UpdateOptions{})
	wantCauses(t, err, "spec")

	rule := create(t, store(r, "resource.k8s.io", "devicetaintrules"), "", &resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "t"},
		Spec: resourcev1.DeviceTaintRuleSpec{Taint: resourcev1.DeviceTaint{Key: "example.com/broken", Effect: resourcev1.DeviceTaintEffectNoSchedule}}}).(*resourcev1.DeviceTaintRule)
	if rule.Spec.Taint.TimeAdded == nil || rule.Generation != 1 {
		t.Errorf("taint rule: timeAdded %v generation %d, want a time and 1", rule.Spec.Taint.TimeAdded, rule.Generation)
	}

	vacs := store(r, "storage.k8s.io", "volumeattributesclasses")
	vac := create(t, vacs, "", &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "gold"}, DriverName: "disk.example.com",
		Parameters: map[string]string{"iops": "1000"}}).(*storagev1.VolumeAttributesClass)
	vac.Parameters["iops"] = "2000"
	_, _, err = vacs.Update(ctx, "", "gold", put(vac), &metav1.UpdateOptions{})
	wantCauses(t, err, "parameters")

	slices := store(r, "resource.k8s.io", "resourceslices")
	slice := create(t, slices, "", &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: resourcev1.ResourceSliceSpec{
		Driver: "gpu.example.com", Pool: resourcev1.ResourcePool{Name: "n1", ResourceSliceCount: 1}, NodeName: ptr("n1")}}).(*resourcev1.ResourceSlice)
	slice.Spec.Driver = "other.example.com"
	_, _, err = slices.Update(ctx, "", "s", put(slice), &metav1.UpdateOptions{})
	wantCauses(t, err, "spec.driver")

	policy := create(t, store(r, "admissionregistration.k8s.io", "mutatingadmissionpolicies"), "", &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}},
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: "Object{}"}}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy}}).(*admissionregistrationv1.MutatingAdmissionPolicy)
	if fp := policy.Spec.FailurePolicy; fp == nil || *fp != admissionregistrationv1.Fail || *policy.Spec.MatchConstraints.MatchPolicy != admissionregistrationv1.Equivalent {
		t.Errorf("mutating policy defaults: failurePolicy %v matchPolicy %v, want Fail and Equivalent", fp, policy.Spec.MatchConstraints.MatchPolicy)
	}
}
