package upstream_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"testing"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// TestStatusRulesAsKubeAPIServer: the per-kind update rules where hacp's differed from
// kube-apiserver's before they were written per kind (what a main-resource write and a
// /status write keep, when metadata.generation moves) are kube-apiserver 1.37's: the same
// steps against both see the same.
func TestStatusRulesAsKubeAPIServer(t *testing.T) {
	bin := upstream.Binary(t, "kube-apiserver")
	etcd := etcdtest.Start(t)
	kas := startKubeAPIServer(t, bin, etcd.ClientURL())
	hacp := servertest.New(t, nil)
	csrPEM := csrRequest(t)
	want := statusRuleSteps(t, kas.config, csrPEM)
	got := statusRuleSteps(t, servertest.RestConfig(t, hacp), csrPEM)
	sameSteps(t, got, want)
}

// statusRuleSteps runs the steps against one server and describes what each saw.
func statusRuleSteps(t *testing.T, rc *rest.Config, csrPEM []byte) []string {
	t.Helper()
	cs, dc := kubernetes.NewForConfigOrDie(rc), dynamic.NewForConfigOrDie(rc)
	var seen []string
	see := func(step string, err error, describe func() string) {
		if err != nil {
			seen = append(seen, step+": "+describeErr(err))
			return
		}
		seen = append(seen, step+": "+describe())
	}
	generationSteps(cs, see)
	podGenerationSteps(cs, see)
	statusWriteSteps(cs, see)
	csrAndAPIServiceSteps(cs, dc, csrPEM, see)
	customResourceSteps(t, dc, see)
	return seen
}

// seeFunc records what a step saw: its error, or what describe says of its outcome.
type seeFunc func(step string, err error, describe func() string)

// generationSteps: when metadata.generation moves for kinds without a spec field, and for
// a Deployment's annotations.
func generationSteps(cs kubernetes.Interface, see seeFunc) {
	ctx := context.Background()
	slices := cs.DiscoveryV1().EndpointSlices("default")
	eps, err := slices.Create(ctx, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "rules", Labels: map[string]string{discoveryv1.LabelServiceName: "a"}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.77.0.1"}}}}, metav1.CreateOptions{})
	see("endpointslice create", err, func() string { return fmt.Sprintf("generation %d", eps.GetGeneration()) })
	for _, step := range []struct {
		name   string
		change func(*discoveryv1.EndpointSlice)
	}{
		{"endpoints", func(e *discoveryv1.EndpointSlice) { e.Endpoints[0].Addresses[0] = "10.77.0.2" }},
		{"labels", func(e *discoveryv1.EndpointSlice) { e.Labels[discoveryv1.LabelServiceName] = "b" }},
		{"annotations", func(e *discoveryv1.EndpointSlice) { e.Annotations = map[string]string{"x": "y"} }},
	} {
		if err == nil {
			step.change(eps)
			eps, err = slices.Update(ctx, eps, metav1.UpdateOptions{})
		}
		see("endpointslice "+step.name, err, func() string { return fmt.Sprintf("generation %d", eps.GetGeneration()) })
	}

	templates := cs.CoreV1().PodTemplates("default")
	pt, err := templates.Create(ctx, &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "rules"},
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}, metav1.CreateOptions{})
	if err == nil {
		pt.Template.Spec.Containers[0].Image = "busybox:2"
		pt, err = templates.Update(ctx, pt, metav1.UpdateOptions{})
	}
	see("podtemplate template", err, func() string { return fmt.Sprintf("generation %d", pt.GetGeneration()) })

	hooks := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	none, url := admissionregistrationv1.SideEffectClassNone, "https://127.0.0.1:1/validate"
	hook, err := hooks.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "rules"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "v.rules.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"rules.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"nothings"}}}},
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}}}, metav1.CreateOptions{})
	if err == nil {
		timeout := int32(7)
		hook.Webhooks[0].TimeoutSeconds = &timeout
		hook, err = hooks.Update(ctx, hook, metav1.UpdateOptions{})
	}
	see("validatingwebhookconfiguration webhooks", err, func() string { return fmt.Sprintf("generation %d", hook.GetGeneration()) })
	_ = hooks.Delete(ctx, "rules", metav1.DeleteOptions{})

	deployments := cs.AppsV1().Deployments("default")
	d, err := deployments.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "rules"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rules"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "rules"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}, metav1.CreateOptions{})
	if err == nil {
		d.Annotations = map[string]string{"x": "y"}
		d, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
	}
	see("deployment annotations", err, func() string { return fmt.Sprintf("generation %d", d.GetGeneration()) })
}

// podGenerationSteps: a pod's generation moves with its spec, through the main resource,
// /resize and /ephemeralcontainers, not with its status nor its binding to a node.
func podGenerationSteps(cs kubernetes.Interface, see seeFunc) {
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	cpu := func(v string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}}
	}
	pod, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rules-gen"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: cpu("100m")}}}}, metav1.CreateOptions{})
	see("pod create", err, func() string { return fmt.Sprintf("generation %d", pod.Generation) })
	steps := []struct {
		name  string
		write func(*corev1.Pod) (*corev1.Pod, error)
	}{
		{"main resource", func(p *corev1.Pod) (*corev1.Pod, error) {
			deadline := int64(600)
			p.Spec.ActiveDeadlineSeconds = &deadline
			return pods.Update(ctx, p, metav1.UpdateOptions{})
		}},
		{"status", func(p *corev1.Pod) (*corev1.Pod, error) {
			p.Status.Message = "m"
			return pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		}},
		{"resize", func(p *corev1.Pod) (*corev1.Pod, error) {
			p.Spec.Containers[0].Resources = cpu("200m")
			return pods.UpdateResize(ctx, p.Name, p, metav1.UpdateOptions{})
		}},
		{"binding", func(p *corev1.Pod) (*corev1.Pod, error) {
			err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}, metav1.CreateOptions{})
			if err != nil {
				return nil, err
			}
			return pods.Get(ctx, p.Name, metav1.GetOptions{})
		}},
		{"ephemeralcontainers", func(p *corev1.Pod) (*corev1.Pod, error) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent}}}
			return pods.UpdateEphemeralContainers(ctx, p.Name, p, metav1.UpdateOptions{})
		}},
	}
	for _, step := range steps {
		if err == nil {
			pod, err = step.write(pod)
		}
		see("pod "+step.name, err, func() string { return fmt.Sprintf("generation %d", pod.Generation) })
	}
}

// statusWriteSteps: what /status writes keep of pods, persistent volumes and daemon sets,
// and what a v1 HorizontalPodAutoscaler's main resource keeps of its status annotations.
func statusWriteSteps(cs kubernetes.Interface, see seeFunc) {
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	pod, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rules"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err == nil {
		pod.Status.QOSClass, pod.Status.Message = "", "written"
		pod, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	}
	see("pod status without qosClass", err, func() string { return fmt.Sprintf("qosClass %q message %q", pod.Status.QOSClass, pod.Status.Message) })

	pvs := cs.CoreV1().PersistentVolumes()
	pv, err := pvs.Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "rules"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/rules"}}}}, metav1.CreateOptions{})
	for _, phase := range []corev1.PersistentVolumePhase{corev1.VolumeAvailable, corev1.VolumeAvailable} {
		if err == nil {
			pv.Status.Phase, pv.Status.LastPhaseTransitionTime = phase, nil
			pv, err = pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{})
		}
		see("persistentvolume status without lastPhaseTransitionTime", err, func() string {
			return fmt.Sprintf("phase %s lastPhaseTransitionTime set %v", pv.Status.Phase, pv.Status.LastPhaseTransitionTime != nil)
		})
	}

	dss := cs.AppsV1().DaemonSets("default")
	ds, err := dss.Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "rules"}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rules-ds"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "rules-ds"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}, metav1.CreateOptions{})
	if err == nil {
		ds.Annotations["deprecated.daemonset.template.generation"], ds.Status.ObservedGeneration = "7", 1
		ds, err = dss.UpdateStatus(ctx, ds, metav1.UpdateOptions{})
	}
	see("daemonset status with another template generation", err, func() string {
		return fmt.Sprintf("template generation %q", ds.Annotations["deprecated.daemonset.template.generation"])
	})

	hpas := cs.AutoscalingV1().HorizontalPodAutoscalers("default")
	hpa, err := hpas.Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "rules"}, Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "rules"}, MaxReplicas: 3}}, metav1.CreateOptions{})
	if err == nil {
		hpa.Annotations = map[string]string{"autoscaling.alpha.kubernetes.io/conditions": `[{"type":"AbleToScale","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]`}
		_, err = hpas.Update(ctx, hpa, metav1.UpdateOptions{})
	}
	conditions := 0
	if err == nil {
		var v2 *autoscalingv2.HorizontalPodAutoscaler
		if v2, err = cs.AutoscalingV2().HorizontalPodAutoscalers("default").Get(ctx, "rules", metav1.GetOptions{}); err == nil {
			conditions = len(v2.Status.Conditions)
		}
	}
	see("v1 horizontalpodautoscaler update with a conditions annotation", err, func() string { return fmt.Sprintf("status.conditions %d", conditions) })
}

// csrAndAPIServiceSteps: a CSR's main resource ignores a spec change; an APIService's
// /status keeps its labels.
func csrAndAPIServiceSteps(cs kubernetes.Interface, dc dynamic.Interface, csrPEM []byte, see seeFunc) {
	ctx := context.Background()
	csrs := cs.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "rules"}, Spec: certificatesv1.CertificateSigningRequestSpec{
		Request: csrPEM, SignerName: "example.com/rules", Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}}}, metav1.CreateOptions{})
	if err == nil {
		csr.Spec.Usages = append(csr.Spec.Usages, certificatesv1.UsageServerAuth)
		csr, err = csrs.Update(ctx, csr, metav1.UpdateOptions{})
	}
	see("csr update of the spec", err, func() string { return fmt.Sprintf("usages %v", csr.Spec.Usages) })

	apiServices := dc.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
	svc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1.rules.example.com", "labels": map[string]any{"step": "create"}},
		"spec":     map[string]any{"group": "rules.example.com", "version": "v1", "groupPriorityMinimum": int64(100), "versionPriority": int64(10)}}}
	_, err = apiServices.Create(ctx, svc, metav1.CreateOptions{})
	var out *unstructured.Unstructured
	if err == nil {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := apiServices.Get(ctx, "v1.rules.example.com", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.SetLabels(map[string]string{"step": "status"})
			cur.SetAnnotations(map[string]string{"step": "status"})
			out, err = apiServices.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		})
	}
	see("apiservice status with other labels and annotations", err, func() string {
		return fmt.Sprintf("labels %v annotations %v", out.GetLabels(), out.GetAnnotations())
	})
	_ = apiServices.Delete(ctx, "v1.rules.example.com", metav1.DeleteOptions{})
}

// customResourceSteps: without the status subresource, a custom object's status change
// moves its generation.
func customResourceSteps(t *testing.T, dc dynamic.Interface, see seeFunc) {
	ctx := context.Background()
	crds := dc.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	crd := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets.rules.example.com"},
		"spec": map[string]any{"group": "rules.example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		see("crd create", err, nil)
		return
	}
	waitEstablished(t, crds, "gadgets.rules.example.com")
	gadgets := dc.Resource(schema.GroupVersionResource{Group: "rules.example.com", Version: "v1", Resource: "gadgets"}).Namespace("default")
	obj, err := createWhenServed(ctx, gadgets, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rules.example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "rules"}, "spec": map[string]any{"size": int64(1)}}})
	if err == nil {
		obj.Object["status"] = map[string]any{"ready": true}
		obj, err = gadgets.Update(ctx, obj, metav1.UpdateOptions{})
	}
	see("custom object without the status subresource, status change", err, func() string { return fmt.Sprintf("generation %d", obj.GetGeneration()) })
}

// createWhenServed creates obj, retrying while the new resource's route is not served yet.
func createWhenServed(ctx context.Context, rc dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var out *unstructured.Unstructured
	err := retry.OnError(retry.DefaultBackoff, func(err error) bool { return err != nil }, func() error {
		var err error
		out, err = rc.Create(ctx, obj, metav1.CreateOptions{})
		return err
	})
	return out, err
}

// csrRequest returns a PEM certificate request with a fresh key.
func csrRequest(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "rules"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}
