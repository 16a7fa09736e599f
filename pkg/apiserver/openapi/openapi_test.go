package openapi

//lint:file-ignore SA1019 core/v1 Endpoints is deprecated upstream but still served (the issue asks for it)

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/util/proto"
	"k8s.io/kube-openapi/pkg/validation/spec"

	pb "google.golang.org/protobuf/proto"
)

func protoUnmarshal(data []byte, m pb.Message) error { return pb.Unmarshal(data, m) }

var allVerbs = []string{"get", "list", "create", "update", "patch", "delete", "deletecollection", "watch"}

// testResources is the resource set hacp serves, plus one custom kind.
func testResources() []Resource {
	core := func(kind, plural string, ns bool, obj, list runtime.Object, subs ...string) Resource {
		return Resource{Version: "v1", Kind: kind, ListKind: kind + "List", Plural: plural, Namespaced: ns,
			Verbs: allVerbs, Subresources: subs, Object: obj, List: list}
	}
	return []Resource{
		core("Namespace", "namespaces", false, &corev1.Namespace{}, &corev1.NamespaceList{}, "status"),
		core("Pod", "pods", true, &corev1.Pod{}, &corev1.PodList{}, "status", "binding"),
		core("Node", "nodes", false, &corev1.Node{}, &corev1.NodeList{}, "status"),
		core("Service", "services", true, &corev1.Service{}, &corev1.ServiceList{}, "status"),
		core("Endpoints", "endpoints", true, &corev1.Endpoints{}, &corev1.EndpointsList{}),
		core("ConfigMap", "configmaps", true, &corev1.ConfigMap{}, &corev1.ConfigMapList{}),
		core("Secret", "secrets", true, &corev1.Secret{}, &corev1.SecretList{}),
		core("ServiceAccount", "serviceaccounts", true, &corev1.ServiceAccount{}, &corev1.ServiceAccountList{}),
		core("Event", "events", true, &corev1.Event{}, &corev1.EventList{}),
		{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease", ListKind: "LeaseList", Plural: "leases", Namespaced: true,
			Verbs: allVerbs, Object: &coordinationv1.Lease{}, List: &coordinationv1.LeaseList{}},
		{Group: "apps", Version: "v1", Kind: "Deployment", ListKind: "DeploymentList", Plural: "deployments", Namespaced: true,
			Verbs: allVerbs, Subresources: []string{"status", "scale"}, Object: &appsv1.Deployment{}, List: &appsv1.DeploymentList{}},
		{Group: "stable.example.com", Version: "v1", Kind: "Widget", ListKind: "WidgetList", Plural: "widgets", Namespaced: true,
			Verbs: allVerbs, Subresources: []string{"status"}, Object: &unstructured.Unstructured{}, List: &unstructured.UnstructuredList{}},
	}
}

func mustNew(t testing.TB) *Spec {
	t.Helper()
	s, err := New(testResources())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func parseV3(t testing.TB, s *Spec, path string) *spec3.OpenAPI {
	t.Helper()
	data, ok := s.V3(path)
	if !ok {
		t.Fatalf("no v3 document %q (have %v)", path, s.V3Paths())
	}
	doc := &spec3.OpenAPI{}
	if err := json.Unmarshal(data, doc); err != nil {
		t.Fatalf("v3 %s does not parse: %v", path, err)
	}
	return doc
}

func TestV3Documents(t *testing.T) {
	s := mustNew(t)
	want := []string{"api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1", "apis/stable.example.com/v1"}
	if got := s.V3Paths(); !slices.Equal(got, want) {
		t.Fatalf("v3 paths = %v, want %v", got, want)
	}

	var root struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(s.V3Root(), &root); err != nil {
		t.Fatal(err)
	}
	for _, p := range want {
		u := root.Paths[p].ServerRelativeURL
		if !strings.HasPrefix(u, "/openapi/v3/"+p+"?hash=") || len(u) < len("/openapi/v3/"+p+"?hash=")+128 {
			t.Errorf("root entry for %s = %q", p, u)
		}
	}

	for _, p := range want {
		t.Run(p, func(t *testing.T) {
			doc := parseV3(t, s, p)
			if doc.Version != "3.0.0" || doc.Paths == nil || doc.Components == nil {
				t.Fatalf("document lacks openapi version, paths or components")
			}
			// Every $ref must resolve inside the same document: kubectl
			// fetches one group-version at a time.
			data, _ := s.V3(p)
			for _, ref := range refs(t, data) {
				name, ok := strings.CutPrefix(ref, "#/components/schemas/")
				if !ok {
					t.Errorf("ref %q is not a components/schemas ref", ref)
					continue
				}
				if _, ok := doc.Components.Schemas[name]; !ok {
					t.Errorf("dangling ref %q", ref)
				}
			}
		})
	}
}

// refs returns every "$ref" value in a JSON document.
func refs(t *testing.T, data []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if k == "$ref" {
					out = append(out, e.(string))
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

func TestV2Document(t *testing.T) {
	s := mustNew(t)
	sw := &spec.Swagger{}
	if err := json.Unmarshal(s.V2(), sw); err != nil {
		t.Fatalf("v2 does not parse: %v", err)
	}
	if sw.Swagger != "2.0" {
		t.Errorf("swagger = %q", sw.Swagger)
	}
	for _, ref := range refs(t, s.V2()) {
		name, ok := strings.CutPrefix(ref, "#/definitions/")
		if _, found := sw.Definitions[name]; !ok || !found {
			t.Errorf("dangling ref %q", ref)
		}
	}

	models := v2Models(t, s)
	for _, name := range []string{"io.k8s.api.core.v1.Pod", "io.k8s.api.apps.v1.Deployment", "io.k8s.api.autoscaling.v1.Scale", "com.example.stable.v1.Widget"} {
		if models.LookupModel(name) == nil {
			t.Errorf("v2 proto models lack %s", name)
		}
	}
	// Walk pod.spec.containers.image through the proto models, as kubectl's
	// client-side validation does.
	pod := models.LookupModel("io.k8s.api.core.v1.Pod").(*proto.Kind)
	podSpec := pod.Fields["spec"].(proto.Reference).SubSchema().(*proto.Kind)
	containers := podSpec.Fields["containers"].(*proto.Array)
	container := containers.SubType.(proto.Reference).SubSchema().(*proto.Kind)
	if image, ok := container.Fields["image"].(*proto.Primitive); !ok || image.Type != "string" {
		t.Errorf("container.image = %#v", container.Fields["image"])
	}
	if !strings.Contains(container.Fields["image"].GetDescription(), "Container image name") {
		t.Errorf("container.image description = %q", container.Fields["image"].GetDescription())
	}
}

func v2Models(t testing.TB, s *Spec) proto.Models {
	t.Helper()
	data, err := s.V2Proto()
	if err != nil {
		t.Fatal(err)
	}
	doc := &openapi_v2.Document{}
	if err := protoUnmarshal(data, doc); err != nil {
		t.Fatalf("v2 protobuf does not decode: %v", err)
	}
	models, err := proto.NewOpenAPIData(doc)
	if err != nil {
		t.Fatalf("proto.NewOpenAPIData: %v", err)
	}
	return models
}

// TestStrategicMergeMetadata looks up pod.spec.containers the three ways
// kubectl apply can: OpenAPI v3 (1.27+), OpenAPI v2, and through the v3
// schema reached from the GET path as kubectl's patcher does.
func TestStrategicMergeMetadata(t *testing.T) {
	s := mustNew(t)
	doc := parseV3(t, s, "api/v1")

	// kubectl: gvSpec.Paths.Paths[buildPath(mapping)].Get.Responses[200].Content["application/json"].Schema.Ref
	pi := doc.Paths.Paths["/api/v1/namespaces/{namespace}/pods/{name}"]
	if pi == nil || pi.Get == nil {
		t.Fatal("no GET /api/v1/namespaces/{namespace}/pods/{name}")
	}
	resp := pi.Get.Responses.StatusCodeResponses[200]
	if resp == nil || resp.Content["application/json"] == nil {
		t.Fatal("GET pod has no 200 application/json response")
	}
	ref := resp.Content["application/json"].Schema.Ref.String()
	if ref != "#/components/schemas/io.k8s.api.core.v1.Pod" {
		t.Fatalf("GET pod 200 schema ref = %q", ref)
	}
	v3 := strategicpatch.PatchMetaFromOpenAPIV3{
		SchemaList: doc.Components.Schemas,
		Schema:     doc.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")],
	}
	v2 := strategicpatch.NewPatchMetaFromOpenAPI(v2Models(t, s).LookupModel("io.k8s.api.core.v1.Pod"))

	for name, lookup := range map[string]strategicpatch.LookupPatchMeta{"v3": v3, "v2": v2} {
		t.Run(name, func(t *testing.T) {
			specMeta, _, err := lookup.LookupPatchMetadataForStruct("spec")
			if err != nil {
				t.Fatal(err)
			}
			_, pm, err := specMeta.LookupPatchMetadataForSlice("containers")
			if err != nil {
				t.Fatal(err)
			}
			if pm.GetPatchMergeKey() != "name" || !slices.Contains(pm.GetPatchStrategies(), "merge") {
				t.Errorf("containers: merge key %q strategies %v, want name/merge", pm.GetPatchMergeKey(), pm.GetPatchStrategies())
			}

			// A real three-way merge: changing one container's image must
			// produce a patch keyed by name, and applying it keeps the other.
			original := []byte(`{"spec":{"containers":[{"name":"a","image":"a:1"},{"name":"b","image":"b:1"}]}}`)
			modified := []byte(`{"spec":{"containers":[{"name":"a","image":"a:2"},{"name":"b","image":"b:1"}]}}`)
			current := []byte(`{"spec":{"containers":[{"name":"a","image":"a:1","imagePullPolicy":"Always"},{"name":"b","image":"b:1"}]}}`)
			patch, err := strategicpatch.CreateThreeWayMergePatch(original, modified, current, lookup, false)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(patch), `"$setElementOrder/containers"`) || !strings.Contains(string(patch), `"name":"a"`) {
				t.Errorf("patch is not a keyed merge: %s", patch)
			}
			merged, err := strategicpatch.StrategicMergePatchUsingLookupPatchMeta(current, patch, lookup)
			if err != nil {
				t.Fatal(err)
			}
			want := `{"spec":{"containers":[{"image":"a:2","imagePullPolicy":"Always","name":"a"},{"image":"b:1","name":"b"}]}}`
			if string(merged) != want {
				t.Errorf("merged = %s\nwant     %s", merged, want)
			}
		})
	}
}

// TestFieldValidationParam replays kubectl's QueryParamVerifierV3: the first
// PATCH operation tagged with the kind's GVK must list fieldValidation as a
// query parameter, or kubectl falls back to client-side validation.
func TestFieldValidationParam(t *testing.T) {
	s := mustNew(t)
	for _, r := range testResources() {
		gvk := schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
		t.Run(gvk.String(), func(t *testing.T) {
			doc := parseV3(t, s, groupVersionPath(gvk.GroupVersion()))
			found := 0
			for path, pi := range doc.Paths.Paths {
				for method, op := range map[string]*spec3.Operation{"post": pi.Post, "put": pi.Put, "patch": pi.Patch} {
					if op == nil || !hasGVK(op.Extensions, gvk) {
						continue
					}
					found++
					var names []string
					for _, p := range op.Parameters {
						if p.In == "query" {
							names = append(names, p.Name)
						}
					}
					for _, want := range []string{"fieldValidation", "fieldManager", "dryRun"} {
						if !slices.Contains(names, want) {
							t.Errorf("%s %s lacks query parameter %s (has %v)", method, path, want, names)
						}
					}
				}
			}
			if found < 3 {
				t.Errorf("found %d write operations for %s, want at least create, update, patch", found, gvk)
			}
		})
	}
}

func hasGVK(ext spec.Extensions, gvk schema.GroupVersionKind) bool {
	m, ok := ext["x-kubernetes-group-version-kind"].(map[string]any)
	return ok && m["group"] == gvk.Group && m["version"] == gvk.Version && m["kind"] == gvk.Kind
}

func TestKnownDefinitions(t *testing.T) {
	s := mustNew(t)
	core := parseV3(t, s, "api/v1")
	apps := parseV3(t, s, "apis/apps/v1")
	sw := &spec.Swagger{}
	if err := json.Unmarshal(s.V2(), sw); err != nil {
		t.Fatal(err)
	}
	v3def := func(doc *spec3.OpenAPI, name string) *spec.Schema {
		t.Helper()
		d := doc.Components.Schemas[name]
		if d == nil {
			t.Fatalf("no definition %s", name)
		}
		return d
	}

	t.Run("Pod", func(t *testing.T) {
		pod := v3def(core, "io.k8s.api.core.v1.Pod")
		if !strings.HasPrefix(pod.Description, "Pod is a collection of containers") {
			t.Errorf("description = %q", pod.Description)
		}
		for _, f := range []string{"apiVersion", "kind", "metadata", "spec", "status"} {
			if _, ok := pod.Properties[f]; !ok {
				t.Errorf("no property %s", f)
			}
		}
		gvks, _ := pod.Extensions["x-kubernetes-group-version-kind"].([]any)
		if len(gvks) != 1 || gvks[0].(map[string]any)["kind"] != "Pod" || gvks[0].(map[string]any)["version"] != "v1" || gvks[0].(map[string]any)["group"] != "" {
			t.Errorf("x-kubernetes-group-version-kind = %v", pod.Extensions["x-kubernetes-group-version-kind"])
		}
		md := pod.Properties["metadata"]
		if len(md.AllOf) != 1 || md.AllOf[0].Ref.String() != "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" || md.Description == "" {
			t.Errorf("v3 metadata = %+v", md)
		}
		v2md := sw.Definitions["io.k8s.api.core.v1.Pod"].Properties["metadata"]
		if r := v2md.Ref.String(); r != "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" {
			t.Errorf("v2 metadata ref = %q", r)
		}
	})
	t.Run("PodSpec.containers", func(t *testing.T) {
		c := v3def(core, "io.k8s.api.core.v1.PodSpec").Properties["containers"]
		if !c.Type.Contains("array") || c.Extensions["x-kubernetes-patch-merge-key"] != "name" || c.Extensions["x-kubernetes-patch-strategy"] != "merge" {
			t.Errorf("containers = %+v", c)
		}
		if c.Items.Schema.Ref.String() != "#/components/schemas/io.k8s.api.core.v1.Container" {
			t.Errorf("containers items = %+v", c.Items.Schema)
		}
	})
	t.Run("special types", func(t *testing.T) {
		tests := []struct {
			name, typ, format string
		}{
			{"io.k8s.apimachinery.pkg.apis.meta.v1.Time", "string", "date-time"},
			{"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime", "string", "date-time"},
			{"io.k8s.apimachinery.pkg.api.resource.Quantity", "string", ""},
			{"io.k8s.apimachinery.pkg.util.intstr.IntOrString", "string", "int-or-string"},
			{"io.k8s.apimachinery.pkg.runtime.RawExtension", "object", ""},
			{"io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1", "object", ""},
		}
		for _, tt := range tests {
			d, ok := sw.Definitions[tt.name]
			if !ok {
				t.Errorf("no v2 definition %s", tt.name)
				continue
			}
			if !d.Type.Contains(tt.typ) || d.Format != tt.format || d.Description == "" {
				t.Errorf("%s = type %v format %q description %q", tt.name, d.Type, d.Format, d.Description)
			}
		}
		ios := v3def(apps, "io.k8s.apimachinery.pkg.util.intstr.IntOrString")
		if len(ios.OneOf) != 2 || ios.Extensions["x-kubernetes-int-or-string"] != true {
			t.Errorf("v3 IntOrString = %+v", ios)
		}
	})
	t.Run("maps and bytes", func(t *testing.T) {
		labels := v3def(core, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta").Properties["labels"]
		if !labels.Type.Contains("object") || labels.AdditionalProperties == nil || !labels.AdditionalProperties.Schema.Type.Contains("string") {
			t.Errorf("ObjectMeta.labels = %+v", labels)
		}
		data := v3def(core, "io.k8s.api.core.v1.Secret").Properties["data"]
		if ap := data.AdditionalProperties.Schema; !ap.Type.Contains("string") || ap.Format != "byte" {
			t.Errorf("Secret.data values = %+v", ap)
		}
		replicas := v3def(apps, "io.k8s.api.apps.v1.DeploymentSpec").Properties["replicas"]
		if !replicas.Type.Contains("integer") || replicas.Format != "int32" {
			t.Errorf("replicas = %+v", replicas)
		}
	})
	t.Run("inline TypeMeta", func(t *testing.T) {
		dep := v3def(apps, "io.k8s.api.apps.v1.Deployment")
		if _, ok := dep.Properties["TypeMeta"]; ok {
			t.Error("TypeMeta not inlined")
		}
		if dep.Properties["kind"].Description == "" {
			t.Error("kind lacks description")
		}
	})
	t.Run("scale", func(t *testing.T) {
		scale := v3def(apps, "io.k8s.api.autoscaling.v1.Scale")
		gvks, _ := scale.Extensions["x-kubernetes-group-version-kind"].([]any)
		if len(gvks) != 1 || gvks[0].(map[string]any)["group"] != "autoscaling" {
			t.Errorf("Scale GVK = %v", gvks)
		}
		op := apps.Paths.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"].Patch
		if op == nil || op.OperationId != "patchAppsV1NamespacedDeploymentScale" || !hasGVK(op.Extensions, autoscalingScale) {
			t.Errorf("scale patch op = %+v", op)
		}
	})
	t.Run("custom kind", func(t *testing.T) {
		doc := parseV3(t, s, "apis/stable.example.com/v1")
		w := v3def(doc, "com.example.stable.v1.Widget")
		if w.Extensions["x-kubernetes-preserve-unknown-fields"] != true {
			t.Errorf("Widget does not preserve unknown fields: %+v", w.Extensions)
		}
		op := doc.Paths.Paths["/apis/stable.example.com/v1/namespaces/{namespace}/widgets/{name}"].Patch
		if _, ok := op.RequestBody.Content["application/strategic-merge-patch+json"]; ok {
			t.Error("custom kind offers strategic merge patch")
		}
		if _, ok := op.RequestBody.Content["application/merge-patch+json"]; !ok {
			t.Error("custom kind lacks merge patch")
		}
		if op.OperationId != "patchStableExampleComV1NamespacedWidget" {
			t.Errorf("operationId = %q", op.OperationId)
		}
	})
}

var autoscalingScale = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}

func TestOperations(t *testing.T) {
	s := mustNew(t)
	sw := &spec.Swagger{}
	if err := json.Unmarshal(s.V2(), sw); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, method, id, action string
	}{
		{"/api/v1/namespaces/{namespace}/pods", "get", "listCoreV1NamespacedPod", "list"},
		{"/api/v1/namespaces/{namespace}/pods", "post", "createCoreV1NamespacedPod", "post"},
		{"/api/v1/namespaces/{namespace}/pods", "delete", "deleteCoreV1CollectionNamespacedPod", "deletecollection"},
		{"/api/v1/pods", "get", "listCoreV1PodForAllNamespaces", "list"},
		{"/api/v1/namespaces/{namespace}/pods/{name}", "get", "readCoreV1NamespacedPod", "get"},
		{"/api/v1/namespaces/{namespace}/pods/{name}", "put", "replaceCoreV1NamespacedPod", "put"},
		{"/api/v1/namespaces/{namespace}/pods/{name}", "patch", "patchCoreV1NamespacedPod", "patch"},
		{"/api/v1/namespaces/{namespace}/pods/{name}", "delete", "deleteCoreV1NamespacedPod", "delete"},
		{"/api/v1/namespaces/{namespace}/pods/{name}/status", "patch", "patchCoreV1NamespacedPodStatus", "patch"},
		{"/api/v1/namespaces/{namespace}/pods/{name}/binding", "post", "createCoreV1NamespacedPodBinding", "post"},
		{"/api/v1/watch/namespaces/{namespace}/pods", "get", "watchCoreV1NamespacedPodList", "watchlist"},
		{"/api/v1/watch/namespaces/{namespace}/pods/{name}", "get", "watchCoreV1NamespacedPod", "watch"},
		{"/api/v1/watch/pods", "get", "watchCoreV1PodListForAllNamespaces", "watchlist"},
		{"/api/v1/nodes/{name}", "get", "readCoreV1Node", "get"},
		{"/api/v1/nodes", "delete", "deleteCoreV1CollectionNode", "deletecollection"},
		{"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", "get", "listCoordinationV1NamespacedLease", "list"},
		{"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "get", "readAppsV1NamespacedDeploymentScale", "get"},
		{"/api/v1/", "get", "getCoreV1APIResources", ""},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			pi, ok := sw.Paths.Paths[tt.path]
			if !ok {
				t.Fatalf("no path %s", tt.path)
			}
			ops := map[string]*spec.Operation{"get": pi.Get, "put": pi.Put, "post": pi.Post, "patch": pi.Patch, "delete": pi.Delete}
			op := ops[tt.method]
			if op == nil {
				t.Fatalf("no %s on %s", tt.method, tt.path)
			}
			if op.ID != tt.id {
				t.Errorf("operationId = %q, want %q", op.ID, tt.id)
			}
			if got, _ := op.Extensions["x-kubernetes-action"].(string); got != tt.action {
				t.Errorf("x-kubernetes-action = %q, want %q", got, tt.action)
			}
			if tt.method == "patch" {
				for _, ct := range []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"} {
					if !slices.Contains(op.Consumes, ct) {
						t.Errorf("patch does not consume %s", ct)
					}
				}
			}
		})
	}
	if _, ok := sw.Paths.Paths["/api/v1/nodes/{name}/binding"]; ok {
		t.Error("nodes got a binding subresource")
	}
}

func TestNewRejectsBadResources(t *testing.T) {
	good := testResources()[1]
	tests := []struct {
		name   string
		mutate func(*Resource)
	}{
		{"no kind", func(r *Resource) { r.Kind = "" }},
		{"no plural", func(r *Resource) { r.Plural = "" }},
		{"no object", func(r *Resource) { r.Object = nil }},
		{"list verb without list type", func(r *Resource) { r.List = nil }},
		{"unknown verb", func(r *Resource) { r.Verbs = []string{"get", "frobnicate"} }},
		{"unknown subresource", func(r *Resource) { r.Subresources = []string{"exec"} }},
		{"schema on a typed kind", func(r *Resource) { r.Schema = map[string]any{"type": "object"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := good
			tt.mutate(&r)
			if _, err := New([]Resource{r}); err == nil {
				t.Error("New accepted the resource")
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	a, b := mustNew(t), mustNew(t)
	if string(a.V2()) != string(b.V2()) || string(a.V3Root()) != string(b.V3Root()) {
		t.Error("two builds of the same resources differ")
	}
}

func TestCustomKindSchema(t *testing.T) {
	crdSchema := map[string]any{
		"type":        "object",
		"description": "Widget is a test kind.",
		"properties": map[string]any{
			"spec": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"size": map[string]any{"type": "integer", "description": "How big.", "minimum": 1.0},
					"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "nullable": true},
				},
			},
		},
	}
	r := testResources()[len(testResources())-1]
	r.Schema = crdSchema
	s, err := New([]Resource{r})
	if err != nil {
		t.Fatal(err)
	}
	doc := parseV3(t, s, "apis/stable.example.com/v1")
	w := doc.Components.Schemas["com.example.stable.v1.Widget"]
	if w == nil {
		t.Fatal("no Widget schema")
	}
	if w.Description != "Widget is a test kind." || w.Extensions["x-kubernetes-preserve-unknown-fields"] != nil {
		t.Errorf("Widget = %q %v", w.Description, w.Extensions)
	}
	size := w.Properties["spec"].Properties["size"]
	if !size.Type.Contains("integer") || size.Description != "How big." || size.Minimum == nil || *size.Minimum != 1 {
		t.Errorf("spec.size = %+v", size)
	}
	if md := w.Properties["metadata"]; len(md.AllOf) != 1 {
		t.Errorf("metadata = %+v", md)
	}
	if _, ok := crdSchema["properties"].(map[string]any)["metadata"]; ok {
		t.Error("caller's schema was modified")
	}
	// v2 keeps the open form and must still convert to protobuf.
	v2Models(t, s)
	sw := &spec.Swagger{}
	if err := json.Unmarshal(s.V2(), sw); err != nil {
		t.Fatal(err)
	}
	if sw.Definitions["com.example.stable.v1.Widget"].Extensions["x-kubernetes-preserve-unknown-fields"] != true {
		t.Error("v2 Widget is not open")
	}
}
