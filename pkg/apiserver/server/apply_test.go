package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const ssaDeploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ssa
  namespace: ssa
  labels: {team: a}
spec:
  replicas: 2
  selector:
    matchLabels: {app: ssa}
  template:
    metadata:
      labels: {app: ssa}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports:
        - containerPort: 80
SIDECAR`

const ssaSidecar = `      - name: sidecar
        image: busybox:1.36
`

// managers returns the manager/operation/subresource of each managedFields entry.
func managers(entries []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range entries {
		s := e.Manager + "/" + string(e.Operation)
		if e.Subresource != "" {
			s += "/" + e.Subresource
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// fieldsOf returns the fieldsV1 of manager's entry (operation op), "" if none.
func fieldsOf(entries []metav1.ManagedFieldsEntry, manager string, op metav1.ManagedFieldsOperationType) string {
	for _, e := range entries {
		if e.Manager == manager && e.Operation == op && e.FieldsV1 != nil {
			return e.FieldsV1.GetRawString()
		}
	}
	return ""
}

func TestKubectlServerSideApply(t *testing.T) {
	s := servertest.New(t, nil)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	k := newKubectlEnv(t, s.KubeconfigPath())
	ctx := context.Background()
	k.ok("create", "namespace", "ssa")
	full := k.file("full.yaml", strings.Replace(ssaDeploymentYAML, "SIDECAR", ssaSidecar, 1))
	slim := k.file("slim.yaml", strings.Replace(ssaDeploymentYAML, "SIDECAR", "", 1))
	get := func() *appsv1.Deployment {
		t.Helper()
		d, err := cs.AppsV1().Deployments("ssa").Get(ctx, "ssa", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	t.Run("create", func(t *testing.T) {
		contains(t, k.ok("apply", "--server-side", "-f", full), "deployment.apps/ssa serverside-applied")
		d := get()
		if got := managers(d.ManagedFields); !slices.Equal(got, []string{"kubectl/Apply"}) {
			t.Fatalf("managers = %v", got)
		}
		f := fieldsOf(d.ManagedFields, "kubectl", metav1.ManagedFieldsOperationApply)
		for _, want := range []string{`"f:replicas":{}`, `"k:{\"name\":\"nginx\"}"`, `"k:{\"name\":\"sidecar\"}"`, `"k:{\"containerPort\":80,\"protocol\":\"TCP\"}"`, `"f:selector":{}`, `"f:labels":{"f:team":{}}`} {
			if !strings.Contains(f, want) {
				t.Errorf("fieldsV1 lacks %s: %s", want, f)
			}
		}
		if strings.Contains(f, "f:status") {
			t.Errorf("an apply of the main resource owns status: %s", f)
		}
		if len(d.Spec.Template.Spec.Containers) != 2 {
			t.Fatalf("containers = %v", d.Spec.Template.Spec.Containers)
		}
	})

	t.Run("managed fields hidden by default", func(t *testing.T) {
		if out := k.ok("-n", "ssa", "get", "deployment", "ssa", "-o", "yaml"); strings.Contains(out, "managedFields") {
			t.Fatalf("kubectl get shows managedFields without --show-managed-fields:\n%s", out)
		}
		out := k.ok("-n", "ssa", "get", "deployment", "ssa", "-o", "yaml", "--show-managed-fields")
		contains(t, out, "managedFields:", "manager: kubectl", "operation: Apply", "fieldsType: FieldsV1")
	})

	t.Run("diff", func(t *testing.T) {
		out, _, err := k.run("diff", "--server-side", "-f", slim)
		if err == nil {
			t.Fatalf("kubectl diff --server-side found no difference")
		}
		contains(t, out, "-      - image: busybox:1.36", "-        name: sidecar")
		if out, _, err := k.run("diff", "--server-side", "-f", full); err != nil {
			t.Fatalf("kubectl diff --server-side of the applied file: %v\n%s", err, out)
		}
	})

	t.Run("re-apply without a field removes it", func(t *testing.T) {
		k.ok("apply", "--server-side", "-f", slim)
		d := get()
		if len(d.Spec.Template.Spec.Containers) != 1 || d.Spec.Template.Spec.Containers[0].Name != "nginx" {
			t.Fatalf("containers after re-apply = %v", d.Spec.Template.Spec.Containers)
		}
	})

	t.Run("two managers", func(t *testing.T) {
		other := k.file("other.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ssa\n  namespace: ssa\n  annotations: {owner: other}\n")
		k.ok("apply", "--server-side", "--field-manager=other", "-f", other)
		d := get()
		if got := managers(d.ManagedFields); !slices.Equal(got, []string{"kubectl/Apply", "other/Apply"}) {
			t.Fatalf("managers = %v", got)
		}
		if f := fieldsOf(d.ManagedFields, "other", metav1.ManagedFieldsOperationApply); f != `{"f:metadata":{"f:annotations":{"f:owner":{}}}}` {
			t.Fatalf("other's fields = %s", f)
		}
		if d.Annotations["owner"] != "other" || *d.Spec.Replicas != 2 {
			t.Fatalf("annotations %v replicas %d", d.Annotations, *d.Spec.Replicas)
		}
	})

	scale := k.file("scale.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ssa\n  namespace: ssa\nspec:\n  replicas: 5\n")
	t.Run("conflict", func(t *testing.T) {
		k.fails(`conflict with "kubectl": .spec.replicas`, "apply", "--server-side", "--field-manager=scaler", "-f", scale)
		_, err := cs.AppsV1().Deployments("ssa").Patch(ctx, "ssa", types.ApplyPatchType, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"ssa"},"spec":{"replicas":5}}`), metav1.PatchOptions{FieldManager: "scaler"})
		var st apierrors.APIStatus
		if !apierrors.IsConflict(err) || !errorsAs(err, &st) {
			t.Fatalf("conflicting apply: %v", err)
		}
		status := st.Status()
		if status.Message != `Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas` || status.Details == nil || len(status.Details.Causes) != 1 {
			t.Fatalf("conflict status = %+v", status)
		}
		if c := status.Details.Causes[0]; c.Type != metav1.CauseTypeFieldManagerConflict || c.Field != ".spec.replicas" || c.Message != `conflict with "kubectl"` {
			t.Fatalf("conflict cause = %+v", c)
		}
		if *get().Spec.Replicas != 2 {
			t.Fatalf("a refused apply changed replicas")
		}
	})

	t.Run("force conflicts", func(t *testing.T) {
		k.ok("apply", "--server-side", "--field-manager=scaler", "--force-conflicts", "-f", scale)
		d := get()
		if *d.Spec.Replicas != 5 {
			t.Fatalf("replicas = %d", *d.Spec.Replicas)
		}
		if f := fieldsOf(d.ManagedFields, "scaler", metav1.ManagedFieldsOperationApply); f != `{"f:spec":{"f:replicas":{}}}` {
			t.Fatalf("scaler's fields = %s", f)
		}
		if f := fieldsOf(d.ManagedFields, "kubectl", metav1.ManagedFieldsOperationApply); strings.Contains(f, "f:replicas") {
			t.Fatalf("kubectl still owns replicas: %s", f)
		}
	})

	t.Run("migrate from client-side apply", func(t *testing.T) {
		cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: csa\n  namespace: ssa\ndata:\n  a: \"1\"\nB"
		k.ok("apply", "-f", k.file("csa.yaml", strings.Replace(cm, "B", "  b: \"2\"\n", 1)))
		c, err := cs.CoreV1().ConfigMaps("ssa").Get(ctx, "csa", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := managers(c.ManagedFields); !slices.Equal(got, []string{"kubectl-client-side-apply/Update"}) {
			t.Fatalf("managers after client-side apply = %v", got)
		}
		k.ok("apply", "--server-side", "-f", k.file("ssa.yaml", strings.Replace(cm, "B", "", 1)))
		c, err = cs.CoreV1().ConfigMaps("ssa").Get(ctx, "csa", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c.Data["b"]; ok || c.Data["a"] != "1" {
			t.Fatalf("data after the server-side apply without b = %v (the migration should have handed b to kubectl)", c.Data)
		}
		// kubectl hands the client-side manager's fields to "kubectl" and keeps the
		// last-applied annotation under "kubectl-last-applied".
		if got := managers(c.ManagedFields); !slices.Equal(got, []string{"kubectl-last-applied/Apply", "kubectl/Apply"}) {
			t.Fatalf("managers after migration = %v", got)
		}
		if f := fieldsOf(c.ManagedFields, "kubectl", metav1.ManagedFieldsOperationApply); !strings.Contains(f, `"f:a":{}`) || strings.Contains(f, `"f:b"`) {
			t.Fatalf("kubectl's fields after migration = %s", f)
		}
	})

	t.Run("update tracked", func(t *testing.T) {
		k.ok("-n", "ssa", "label", "deployment", "ssa", "tier=web")
		d := get()
		if f := fieldsOf(d.ManagedFields, "kubectl-label", metav1.ManagedFieldsOperationUpdate); f != `{"f:metadata":{"f:labels":{"f:tier":{}}}}` {
			t.Fatalf("kubectl-label's fields = %q (managers %v)", f, managers(d.ManagedFields))
		}
	})
}

// errorsAs is errors.As for an APIStatus target.
func errorsAs(err error, target *apierrors.APIStatus) bool {
	st, ok := err.(apierrors.APIStatus)
	if ok {
		*target = st
	}
	return ok
}

func TestClientGoApply(t *testing.T) {
	s := servertest.New(t, nil)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ac"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := appsv1ac.Deployment("web", "ac").
		WithLabels(map[string]string{"app": "web"}).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(3).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"app": "web"})).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(map[string]string{"app": "web"}).
				WithSpec(corev1ac.PodSpec().WithContainers(
					corev1ac.Container().WithName("web").WithImage("nginx:1.27").
						WithPorts(corev1ac.ContainerPort().WithContainerPort(80).WithProtocol(corev1.ProtocolTCP)),
					corev1ac.Container().WithName("log").WithImage("busybox:1.36"),
				))))

	t.Run("dry run creates nothing", func(t *testing.T) {
		if _, err := cs.AppsV1().Deployments("ac").Apply(ctx, want, metav1.ApplyOptions{FieldManager: "ctrl", DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.AppsV1().Deployments("ac").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("after a dry-run apply: %v", err)
		}
	})

	t.Run("apply and extract", func(t *testing.T) {
		got, err := cs.AppsV1().Deployments("ac").Apply(ctx, want, metav1.ApplyOptions{FieldManager: "ctrl"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.Template.Spec.Containers[1].ImagePullPolicy != corev1.PullIfNotPresent {
			t.Fatalf("an applied object is not defaulted: %+v", got.Spec.Template.Spec.Containers[1])
		}
		extracted, err := appsv1ac.ExtractDeployment(got, "ctrl")
		if err != nil {
			t.Fatal(err)
		}
		wj, _ := json.Marshal(want)
		ej, _ := json.Marshal(extracted)
		if string(wj) != string(ej) {
			t.Fatalf("ExtractDeployment does not give back what was applied:\napplied   %s\nextracted %s", wj, ej)
		}
		// Applying the extracted configuration again changes nothing.
		again, err := cs.AppsV1().Deployments("ac").Apply(ctx, extracted, metav1.ApplyOptions{FieldManager: "ctrl"})
		if err != nil {
			t.Fatal(err)
		}
		if again.ResourceVersion != got.ResourceVersion {
			t.Fatalf("a no-op apply wrote the object: rv %s -> %s", got.ResourceVersion, again.ResourceVersion)
		}
	})

	t.Run("status apply owns status only", func(t *testing.T) {
		st := appsv1ac.Deployment("web", "ac").WithStatus(appsv1ac.DeploymentStatus().WithObservedGeneration(1).WithReplicas(3))
		got, err := cs.AppsV1().Deployments("ac").ApplyStatus(ctx, st, metav1.ApplyOptions{FieldManager: "ctrl-status", Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Replicas != 3 {
			t.Fatalf("status = %+v", got.Status)
		}
		var entry *metav1.ManagedFieldsEntry
		for i, e := range got.ManagedFields {
			if e.Manager == "ctrl-status" {
				entry = &got.ManagedFields[i]
			}
		}
		if entry == nil || entry.Subresource != "status" || entry.Operation != metav1.ManagedFieldsOperationApply {
			t.Fatalf("managedFields = %v", managers(got.ManagedFields))
		}
		if f := entry.FieldsV1.GetRawString(); f != `{"f:status":{"f:observedGeneration":{},"f:replicas":{}}}` {
			t.Fatalf("status manager's fields = %s", f)
		}
	})

	t.Run("create on apply through update", func(t *testing.T) {
		cm := corev1ac.ConfigMap("fresh", "ac").WithData(map[string]string{"k": "v"})
		got, err := cs.CoreV1().ConfigMaps("ac").Apply(ctx, cm, metav1.ApplyOptions{FieldManager: "ctrl"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Data["k"] != "v" || got.UID == "" {
			t.Fatalf("created = %+v", got)
		}
	})

	t.Run("reset managedFields", func(t *testing.T) {
		for _, reset := range []string{`[]`, `[{}]`} {
			c, err := cs.CoreV1().ConfigMaps("ac").Patch(ctx, "fresh", types.MergePatchType, []byte(`{"metadata":{"managedFields":`+reset+`}}`), metav1.PatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(c.ManagedFields) != 0 {
				t.Fatalf("managedFields after a %s write = %v", reset, managers(c.ManagedFields))
			}
		}
	})

	t.Run("user agent is the manager", func(t *testing.T) {
		c, err := cs.CoreV1().ConfigMaps("ac").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ua"}, Data: map[string]string{"x": "1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// client-go's default User-Agent is "<binary>/<version> (...)": the test binary's name.
		if len(c.ManagedFields) != 1 || c.ManagedFields[0].Operation != metav1.ManagedFieldsOperationUpdate || !strings.HasPrefix(c.ManagedFields[0].Manager, "server.test") {
			t.Fatalf("managedFields = %+v", c.ManagedFields)
		}
	})

	t.Run("update entries are capped", func(t *testing.T) {
		for i := range 12 {
			mgr := "writer-" + string(rune('a'+i))
			if _, err := cs.CoreV1().ConfigMaps("ac").Patch(ctx, "ua", types.MergePatchType, []byte(`{"data":{"`+mgr+`":"1"}}`), metav1.PatchOptions{FieldManager: mgr}); err != nil {
				t.Fatal(err)
			}
		}
		c, err := cs.CoreV1().ConfigMaps("ac").Get(ctx, "ua", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Upstream keeps at most 10 Update entries, folding the oldest into "ancient-changes".
		if len(c.ManagedFields) != 10 || !slices.Contains(managers(c.ManagedFields), "ancient-changes/Update") {
			t.Fatalf("managedFields after 13 updaters = %v", managers(c.ManagedFields))
		}
	})

	t.Run("scale subresource", func(t *testing.T) {
		_, err := cs.AppsV1().Deployments("ac").UpdateScale(ctx, "web", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ac"}, Spec: autoscalingv1.ScaleSpec{Replicas: 4}}, metav1.UpdateOptions{FieldManager: "hpa"})
		if err != nil {
			t.Fatal(err)
		}
		d, err := cs.AppsV1().Deployments("ac").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 4 {
			t.Fatalf("replicas = %d", *d.Spec.Replicas)
		}
		var found bool
		for _, e := range d.ManagedFields {
			if e.Manager == "hpa" {
				found = e.Subresource == "scale" && e.FieldsV1.GetRawString() == `{"f:spec":{"f:replicas":{}}}`
			}
		}
		if !found {
			t.Fatalf("the scale write is not recorded as hpa/Update/scale owning spec.replicas: %+v", d.ManagedFields)
		}
		if f := fieldsOf(d.ManagedFields, "ctrl", metav1.ManagedFieldsOperationApply); strings.Contains(f, "f:replicas") {
			t.Fatalf("ctrl still owns replicas after the scale write: %s", f)
		}
	})
}

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.ssa.example.com
spec:
  group: ssa.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              image: {type: string}
              replicas: {type: integer}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
          status:
            type: object
            properties:
              replicas: {type: integer}
              phase: {type: string}
`

const widgetObject = `apiVersion: ssa.example.com/v1
kind: Widget
metadata:
  name: w
  namespace: default
spec:
  image: app:1
  replicas: 1
  ports:
  - {name: http, port: 80}
PORTS`

// TestCustomResourceServerSideApply: kubectl apply --server-side of a custom resource merges
// by the definition's structural schema (a list-map keyed by name), removes what a re-apply
// leaves out, reports conflicts, and status and scale writes own their own fields.
func TestCustomResourceServerSideApply(t *testing.T) {
	s := servertest.New(t, nil)
	k := newKubectlEnv(t, s.KubeconfigPath())
	dyn := dynamic.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	createCRD(t, dyn, widgetCRD)
	widgets := schema.GroupVersionResource{Group: "ssa.example.com", Version: "v1", Resource: "widgets"}
	waitServed(t, dyn, widgets)
	get := func() *unstructured.Unstructured {
		t.Helper()
		u, err := dyn.Resource(widgets).Namespace("default").Get(ctx, "w", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	full := k.file("w.yaml", strings.Replace(widgetObject, "PORTS", "  - {name: admin, port: 9000}\n", 1))
	slim := k.file("w-slim.yaml", strings.Replace(widgetObject, "PORTS", "", 1))

	t.Run("create", func(t *testing.T) {
		contains(t, k.ok("apply", "--server-side", "-f", full), "widget.ssa.example.com/w serverside-applied")
		u := get()
		f := fieldsOf(u.GetManagedFields(), "kubectl", metav1.ManagedFieldsOperationApply)
		for _, want := range []string{`"k:{\"name\":\"http\"}"`, `"k:{\"name\":\"admin\"}"`, `"f:image":{}`} {
			if !strings.Contains(f, want) {
				t.Fatalf("fieldsV1 lacks %s: %s", want, f)
			}
		}
	})

	t.Run("re-apply without a list entry removes it", func(t *testing.T) {
		k.ok("apply", "--server-side", "-f", slim)
		ports, _, _ := unstructured.NestedSlice(get().Object, "spec", "ports")
		if len(ports) != 1 || ports[0].(map[string]any)["name"] != "http" {
			t.Fatalf("ports = %v", ports)
		}
	})

	t.Run("conflict and force", func(t *testing.T) {
		img := []byte(`{"apiVersion":"ssa.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"image":"app:2"}}`)
		_, err := dyn.Resource(widgets).Namespace("default").Patch(ctx, "w", types.ApplyPatchType, img, metav1.PatchOptions{FieldManager: "bumper"})
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "kubectl": .spec.image`) {
			t.Fatalf("conflicting apply: %v", err)
		}
		if _, err := dyn.Resource(widgets).Namespace("default").Patch(ctx, "w", types.ApplyPatchType, img, metav1.PatchOptions{FieldManager: "bumper", Force: ptr.To(true)}); err != nil {
			t.Fatal(err)
		}
		if v, _, _ := unstructured.NestedString(get().Object, "spec", "image"); v != "app:2" {
			t.Fatalf("image = %q", v)
		}
	})

	t.Run("status apply", func(t *testing.T) {
		st := []byte(`{"apiVersion":"ssa.example.com/v1","kind":"Widget","metadata":{"name":"w"},"status":{"phase":"Ready"}}`)
		u, err := dyn.Resource(widgets).Namespace("default").Patch(ctx, "w", types.ApplyPatchType, st, metav1.PatchOptions{FieldManager: "ctrl"}, "status")
		if err != nil {
			t.Fatal(err)
		}
		var ctrl *metav1.ManagedFieldsEntry
		for i, e := range u.GetManagedFields() {
			if e.Manager == "ctrl" {
				ctrl = &u.GetManagedFields()[i]
			}
		}
		if ctrl == nil || ctrl.Subresource != "status" || ctrl.Operation != metav1.ManagedFieldsOperationApply || ctrl.FieldsV1.GetRawString() != `{"f:status":{"f:phase":{}}}` {
			t.Fatalf("ctrl's entry = %+v (managers %v)", ctrl, managers(u.GetManagedFields()))
		}
		if f := fieldsOf(u.GetManagedFields(), "kubectl", metav1.ManagedFieldsOperationApply); strings.Contains(f, "f:status") {
			t.Fatalf("kubectl owns status: %s", f)
		}
		// Applying status to the main resource changes nothing there.
		u, err = dyn.Resource(widgets).Namespace("default").Patch(ctx, "w", types.ApplyPatchType, []byte(`{"apiVersion":"ssa.example.com/v1","kind":"Widget","metadata":{"name":"w"},"status":{"phase":"Gone"}}`), metav1.PatchOptions{FieldManager: "main"})
		if err != nil {
			t.Fatal(err)
		}
		if v, _, _ := unstructured.NestedString(u.Object, "status", "phase"); v != "Ready" {
			t.Fatalf("a main-resource apply changed status to %q", v)
		}
	})

	t.Run("scale", func(t *testing.T) {
		sc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
			"metadata": map[string]any{"name": "w", "namespace": "default"}, "spec": map[string]any{"replicas": int64(4)}}}
		if _, err := dyn.Resource(widgets).Namespace("default").Update(ctx, sc, metav1.UpdateOptions{FieldManager: "hpa"}, "scale"); err != nil {
			t.Fatal(err)
		}
		u := get()
		if n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); n != 4 {
			t.Fatalf("replicas = %d", n)
		}
		var ok bool
		for _, e := range u.GetManagedFields() {
			if e.Manager == "hpa" {
				ok = e.Subresource == "scale" && e.Operation == metav1.ManagedFieldsOperationUpdate && e.FieldsV1.GetRawString() == `{"f:spec":{"f:replicas":{}}}`
			}
		}
		if !ok {
			t.Fatalf("the scale write is not recorded as hpa/Update/scale owning spec.replicas: %v", managers(u.GetManagedFields()))
		}
	})

	t.Run("create on apply", func(t *testing.T) {
		contains(t, k.ok("apply", "--server-side", "-f", k.file("w2.yaml", strings.Replace(strings.Replace(widgetObject, "name: w\n", "name: w2\n", 1), "PORTS", "", 1))), "widget.ssa.example.com/w2 serverside-applied")
		if _, err := dyn.Resource(widgets).Namespace("default").Get(ctx, "w2", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestManagedFieldsAfterMutatingAdmission: a mutating webhook whose patch leaves
// managedFields undecodable (an outdated webhook) does not corrupt the stored object: the
// entries from before admission are kept, the rest of the patch applies, and the client is
// warned in upstream's words.
func TestManagedFieldsAfterMutatingAdmission(t *testing.T) {
	s := servertest.New(t, nil)
	hook, caPEM := newTLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rev admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&rev); err != nil || rev.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		patch := []map[string]any{
			{"op": "add", "path": "/metadata/labels", "value": map[string]string{"mangled": "yes"}},
			{"op": "add", "path": "/metadata/managedFields", "value": []map[string]any{{"manager": "hook", "operation": "Mangle", "apiVersion": "v1"}}},
		}
		pt := admissionv1.PatchTypeJSONPatch
		rev.Response = &admissionv1.AdmissionResponse{UID: rev.Request.UID, Allowed: true, PatchType: &pt}
		rev.Response.Patch, _ = json.Marshal(patch)
		rev.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&rev)
	}))
	cfg := servertest.RestConfig(t, s)
	warn := &warnings{}
	cfg.WarningHandler = warn
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mangle"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mwc := &admissionregv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mangle"},
		Webhooks: []admissionregv1.MutatingWebhook{{
			Name:                    "mangle.hacp.test",
			ClientConfig:            admissionregv1.WebhookClientConfig{URL: ptr.To(hook.URL + "/mangle"), CABundle: caPEM},
			Rules:                   configMapRule(admissionregv1.Create, admissionregv1.Update),
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "mangle"}},
			SideEffects:             ptr.To(admissionregv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}}}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The configuration reaches the server by watch: wait until the webhook acts.
	probe := 0
	eventuallyOK(t, "webhook active", func() error {
		probe++
		out, err := cs.CoreV1().ConfigMaps("mangle").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("probe-%d", probe)}},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if out.Labels["mangled"] != "yes" {
			return fmt.Errorf("not mutated yet")
		}
		return nil
	})

	const want = ".metadata.managedFields was in an invalid state after admission; this could be caused by an outdated mutating admission controller; please fix your requests: operation must be `Apply` or `Update`"
	check := func(t *testing.T, cm *corev1.ConfigMap, wantManagers []string) {
		t.Helper()
		if cm.Labels["mangled"] != "yes" {
			t.Fatalf("labels %v: the rest of the webhook's patch was not applied", cm.Labels)
		}
		if got := managers(cm.ManagedFields); !slices.Equal(got, wantManagers) {
			t.Fatalf("managedFields %v, want %v", got, wantManagers)
		}
		if !warn.has(want) {
			t.Fatalf("warnings %q, want %q", warn.msgs, want)
		}
	}
	cm, err := cs.CoreV1().ConfigMaps("mangle").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"a": "1"}},
		metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatal(err)
	}
	check(t, cm, []string{"creator/Update"})
	got, err := cs.CoreV1().ConfigMaps("mangle").Get(ctx, "cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, got, []string{"creator/Update"})

	warn.mu.Lock()
	warn.msgs = nil
	warn.mu.Unlock()
	got.Data["b"] = "2"
	cm, err = cs.CoreV1().ConfigMaps("mangle").Update(ctx, got, metav1.UpdateOptions{FieldManager: "updater"})
	if err != nil {
		t.Fatal(err)
	}
	check(t, cm, []string{"creator/Update", "updater/Update"})
}

// TestManagedFieldsDroppedWhenTooLarge: a write whose object fits in etcd only without its
// managedFields (a ConfigMap of 60,000 short keys: under the 1 MiB data limit, about 1.3 MB
// stored, 2.2 MB with the field set naming every key) is stored untracked, as upstream's
// handlers retry create, update and patch; an object too large even without them is still 413.
func TestManagedFieldsDroppedWhenTooLarge(t *testing.T) {
	s := servertest.New(t, nil)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "big"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	data := make(map[string]string, 60000)
	for i := range 60000 {
		data[fmt.Sprintf("k%05d", i)] = "0123456789"
	}
	cms := cs.CoreV1().ConfigMaps("big")
	untracked := func(t *testing.T, cm *corev1.ConfigMap, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if len(cm.Data) != len(data) || len(cm.ManagedFields) != 0 {
			t.Fatalf("stored %d keys with %d managedFields entries, want %d keys and none", len(cm.Data), len(cm.ManagedFields), len(data))
		}
	}
	t.Run("create", func(t *testing.T) {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "created"}, Data: data}, metav1.CreateOptions{FieldManager: "big"})
		untracked(t, cm, err)
	})
	t.Run("update", func(t *testing.T) {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "updated"}, Data: map[string]string{"a": "b"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(cm.ManagedFields) == 0 {
			t.Fatal("a small create was not tracked")
		}
		cm.Data = data
		cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "big"})
		untracked(t, cm, err)
	})
	t.Run("merge patch", func(t *testing.T) {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "patched"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		patch, _ := json.Marshal(map[string]any{"data": data})
		cm, err := cms.Patch(ctx, "patched", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "big"})
		untracked(t, cm, err)
	})
	t.Run("too large without managedFields too", func(t *testing.T) {
		huge := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "huge"}, BinaryData: map[string][]byte{}}
		// 0.9 MiB of data and 40,000 labels: over etcd's 1.5 MiB without managedFields.
		huge.BinaryData["blob"] = make([]byte, 900<<10)
		huge.Labels = map[string]string{}
		for i := range 40000 {
			huge.Labels[fmt.Sprintf("l%05d", i)] = "0123456789"
		}
		_, err := cms.Create(ctx, huge, metav1.CreateOptions{})
		if !apierrors.IsRequestEntityTooLargeError(err) {
			t.Fatalf("err %v, want 413", err)
		}
	})
}
