package tableconvert

import (
	"reflect"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// TestNonWorkloadKinds: the columns and cells of kube-apiserver 1.33's printers.
func TestNonWorkloadKinds(t *testing.T) {
	fs := corev1.PersistentVolumeFilesystem
	tests := []struct {
		name    string
		obj     runtime.Object
		columns []string
		cells   []any
	}{
		{"pv", &corev1.PersistentVolume{ObjectMeta: objMeta("vol", time.Hour), Spec: corev1.PersistentVolumeSpec{
			Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain, ClaimRef: &corev1.ObjectReference{Namespace: "shop", Name: "data"}, StorageClassName: "fast", VolumeMode: &fs},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}},
			[]string{"Name", "Capacity", "Access Modes", "Reclaim Policy", "Status", "Claim", "StorageClass", "VolumeAttributesClass", "Reason", "Age", "VolumeMode"},
			[]any{"vol", "5Gi", "RWO,RWX", "Retain", "Bound", "shop/data", "fast", "<unset>", "", "60m", "Filesystem"}},
		{"pvc", &corev1.PersistentVolumeClaim{ObjectMeta: objMeta("data", time.Minute), Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "vol", StorageClassName: ptr.To("fast")},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}}},
			[]string{"Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass", "VolumeAttributesClass", "Age", "VolumeMode"},
			[]any{"data", "Bound", "vol", "5Gi", "RWO", "fast", "<unset>", "60s", "<unset>"}},
		{"resourcequota", &corev1.ResourceQuota{ObjectMeta: objMeta("q", time.Hour), Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{"pods": resource.MustParse("10"), "limits.cpu": resource.MustParse("4"), "requests.cpu": resource.MustParse("2")},
			Used: corev1.ResourceList{"pods": resource.MustParse("3"), "limits.cpu": resource.MustParse("1")}}},
			[]string{"Name", "Request", "Limit", "Age"}, []any{"q", "pods: 3/10, requests.cpu: 0/2", "limits.cpu: 1/4", "60m"}},
		{"limitrange", &corev1.LimitRange{ObjectMeta: objMeta("l", time.Hour)}, []string{"Name", "Created At"}, []any{"l", "2026-11-22T11:00:00Z"}},
		{"componentstatus", &corev1.ComponentStatus{ObjectMeta: objMeta("etcd-0", 0), Conditions: []corev1.ComponentCondition{{Type: corev1.ComponentHealthy, Status: corev1.ConditionTrue, Message: "ok"}}},
			[]string{"Name", "Status", "Message", "Error"}, []any{"etcd-0", "Healthy", "ok", ""}},
		{"ingress", &networkingv1.Ingress{ObjectMeta: objMeta("web", time.Hour), Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("nginx"),
			TLS: []networkingv1.IngressTLS{{}}, Rules: []networkingv1.IngressRule{{Host: "a"}, {Host: "b"}, {Host: "c"}, {Host: "d"}}},
			Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "10.77.0.2"}, {Hostname: "lb"}}}}},
			[]string{"Name", "Class", "Hosts", "Address", "Ports", "Age"}, []any{"web", "nginx", "a,b,c + 1 more...", "10.77.0.2,lb", "80, 443", "60m"}},
		{"ingressclass", &networkingv1.IngressClass{ObjectMeta: objMeta("nginx", time.Hour), Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx",
			Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To("example.com"), Kind: "P", Name: "p"}}},
			[]string{"Name", "Controller", "Parameters", "Age"}, []any{"nginx", "k8s.io/ingress-nginx", "P.example.com/p", "60m"}},
		{"networkpolicy", &networkingv1.NetworkPolicy{ObjectMeta: objMeta("deny", time.Hour)}, []string{"Name", "Pod-Selector", "Age"}, []any{"deny", "<none>", "60m"}},
		{"ipaddress", &networkingv1.IPAddress{ObjectMeta: objMeta("10.96.0.1", time.Hour), Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "kubernetes"}}},
			[]string{"Name", "ParentRef"}, []any{"10.96.0.1", "services/default/kubernetes"}},
		{"servicecidr", &networkingv1.ServiceCIDR{ObjectMeta: objMeta("kubernetes", time.Hour), Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/12", "fd00::/108"}}},
			[]string{"Name", "CIDRs", "Age"}, []any{"kubernetes", "10.96.0.0/12,fd00::/108", "60m"}},
		{"endpointslice", &discoveryv1.EndpointSlice{ObjectMeta: objMeta("web-x", time.Hour), AddressType: discoveryv1.AddressTypeIPv4,
			Ports: []discoveryv1.EndpointPort{{Port: ptr.To(int32(80))}, {Name: ptr.To("metrics")}}, Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.0.0.1", "10.0.0.2"}}, {Addresses: []string{"10.0.0.3"}}, {Addresses: []string{"10.0.0.4"}}}},
			[]string{"Name", "AddressType", "Ports", "Endpoints", "Age"}, []any{"web-x", "IPv4", "80,metrics", "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...", "60m"}},
		{"storageclass", &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast", CreationTimestamp: ago(time.Hour), Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
			Provisioner: "example.com/disk"}, []string{"Name", "Provisioner", "ReclaimPolicy", "VolumeBindingMode", "AllowVolumeExpansion", "Age"},
			[]any{"fast (default)", "example.com/disk", "Delete", "Immediate", false, "60m"}},
		{"csidriver", &storagev1.CSIDriver{ObjectMeta: objMeta("disk", time.Hour), Spec: storagev1.CSIDriverSpec{VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{"Persistent", "Ephemeral"}}},
			[]string{"Name", "AttachRequired", "PodInfoOnMount", "StorageCapacity", "TokenRequests", "RequiresRepublish", "Modes", "Age"},
			[]any{"disk", true, false, false, "<unset>", false, "Persistent,Ephemeral", "60m"}},
		{"csinode", &storagev1.CSINode{ObjectMeta: objMeta("n1", time.Hour), Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "d"}}}},
			[]string{"Name", "Drivers", "Age"}, []any{"n1", int64(1), "60m"}},
		{"csistoragecapacity", &storagev1.CSIStorageCapacity{ObjectMeta: objMeta("c", time.Hour), StorageClassName: "fast"},
			[]string{"Name", "Created At"}, []any{"c", "2026-11-22T11:00:00Z"}}, // kube-apiserver's default table
		{"volumeattachment", &storagev1.VolumeAttachment{ObjectMeta: objMeta("va", time.Hour), Spec: storagev1.VolumeAttachmentSpec{Attacher: "disk", NodeName: "n1",
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("vol")}}, Status: storagev1.VolumeAttachmentStatus{Attached: true}},
			[]string{"Name", "Attacher", "PV", "Node", "Attached", "Age"}, []any{"va", "disk", "vol", "n1", true, "60m"}},
		{"csr", &certificatesv1.CertificateSigningRequest{ObjectMeta: objMeta("jane", time.Hour), Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: "kubernetes.io/kube-apiserver-client", Username: "admin", ExpirationSeconds: ptr.To(int32(3600))},
			Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved}}, Certificate: []byte("x")}},
			[]string{"Name", "Age", "SignerName", "Requestor", "RequestedDuration", "Condition"},
			[]any{"jane", "60m", "kubernetes.io/kube-apiserver-client", "admin", "60m", "Approved,Issued"}},
		{"flowschema", &flowcontrolv1.FlowSchema{ObjectMeta: objMeta("fs", time.Hour), Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "global-default"}, MatchingPrecedence: 1000}},
			[]string{"Name", "PriorityLevel", "MatchingPrecedence", "DistinguisherMethod", "Age", "MissingPL"}, []any{"fs", "global-default", int64(1000), "<none>", "60m", "?"}},
		{"prioritylevel", &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: objMeta("pl", time.Hour), Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To(int32(30)),
				LimitResponse: flowcontrolv1.LimitResponse{Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: 8, QueueLengthLimit: 50}}}}},
			[]string{"Name", "Type", "NominalConcurrencyShares", "Queues", "HandSize", "QueueLengthLimit", "Age"}, []any{"pl", "Limited", int64(30), int64(64), int64(8), int64(50), "60m"}},
		{"webhook", &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: objMeta("m", time.Hour), Webhooks: []admissionregistrationv1.MutatingWebhook{{}, {}}},
			[]string{"Name", "Webhooks", "Age"}, []any{"m", int64(2), "60m"}},
		{"policybinding", &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: objMeta("b", time.Hour), Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "p", ParamRef: &admissionregistrationv1.ParamRef{Name: "cfg"}}}, []string{"Name", "PolicyName", "ParamRef", "Age"}, []any{"b", "p", "*/cfg", "60m"}},
		{"priorityclass", &schedulingv1.PriorityClass{ObjectMeta: objMeta("high", time.Hour), Value: 1000, PreemptionPolicy: ptr.To(corev1.PreemptNever)},
			[]string{"Name", "Value", "Global-Default", "Age", "PreemptionPolicy"}, []any{"high", int64(1000), false, "60m", "Never"}},
		{"runtimeclass", &nodev1.RuntimeClass{ObjectMeta: objMeta("gvisor", time.Hour), Handler: "runsc"}, []string{"Name", "Handler", "Age"}, []any{"gvisor", "runsc", "60m"}},
		{"events.k8s.io", &eventsv1.Event{ObjectMeta: objMeta("e", time.Hour), Reason: "Pulled", Note: "pulled", Type: "Normal",
			Regarding: corev1.ObjectReference{Kind: "Pod", Name: "p"}, DeprecatedLastTimestamp: ago(time.Minute), DeprecatedFirstTimestamp: ago(time.Hour), DeprecatedCount: 3},
			[]string{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := toTable(tt.obj, metav1.TableOptions{}, now)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(columnNames(table), tt.columns) {
				t.Errorf("columns = %q\nwant      %q", columnNames(table), tt.columns)
			}
			if len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(table.ColumnDefinitions) {
				t.Fatalf("rows %+v for %d columns", table.Rows, len(table.ColumnDefinitions))
			}
			if tt.cells != nil && !reflect.DeepEqual(table.Rows[0].Cells, tt.cells) {
				t.Errorf("cells = %#v\nwant    %#v", table.Rows[0].Cells, tt.cells)
			}
			for _, c := range table.ColumnDefinitions {
				if c.Type == "" || c.Description == "" {
					t.Errorf("column %q without type or description", c.Name)
				}
			}
		})
	}
}
