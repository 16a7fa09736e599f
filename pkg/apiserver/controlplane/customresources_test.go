package controlplane_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/registry/customresources"
	"github.com/hacp/hacp/pkg/apiserver/request"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size":  {Type: "integer", Default: &apiextensionsv1.JSON{Raw: []byte("3")}},
							"color": {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"red"`)}, {Raw: []byte(`"blue"`)}}},
						}},
						"status": {Type: "object", XPreserveUnknownFields: ptr(true)},
					},
				}},
			}},
		},
	}
}

var widgets = schema.GroupResource{Group: "example.com", Resource: "widgets"}

func widget(name, color string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     map[string]any{"color": color, "unknown": true}}}
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCustomResourceLifecycle(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	crds := store(r, "apiextensions.k8s.io", "customresourcedefinitions")
	if _, err := crds.Create(ctx, "", "", widgetCRD(), &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "widgets served", func() bool { return r.Resource(widgets) != nil })
	got, err := crds.Get(ctx, "", "widgets.example.com", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crd := got.(*apiextensionsv1.CustomResourceDefinition)
	if crd.Status.AcceptedNames.Plural != "widgets" || crd.Status.AcceptedNames.ListKind != "WidgetList" || len(crd.Status.StoredVersions) != 1 {
		t.Fatalf("status %+v", crd.Status)
	}

	s := r.Resource(widgets).Store
	obj, err := s.Create(ctx, "default", "", widget("w1", "red"), &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u := obj.(*unstructured.Unstructured)
	if size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size"); size != 3 {
		t.Fatalf("default size = %d", size)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "unknown"); found {
		t.Fatal("unknown field not pruned")
	}
	if u.GetGeneration() != 1 {
		t.Fatalf("generation %d", u.GetGeneration())
	}

	// Spec changes bump the generation, status and metadata do not.
	update := func(st registry.Updater, fn func(u *unstructured.Unstructured)) *unstructured.Unstructured {
		t.Helper()
		out, _, err := st.Update(ctx, "default", "w1", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			c := cur.(*unstructured.Unstructured)
			fn(c)
			return c, nil
		}, &metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out.(*unstructured.Unstructured)
	}
	u = update(s, func(u *unstructured.Unstructured) { _ = unstructured.SetNestedField(u.Object, "blue", "spec", "color") })
	if u.GetGeneration() != 2 {
		t.Fatalf("generation after a spec change %d, want 2", u.GetGeneration())
	}
	u = update(s, func(u *unstructured.Unstructured) {
		u.SetLabels(map[string]string{"a": "b"})
		_ = unstructured.SetNestedField(u.Object, "x", "status", "phase")
	})
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status"); u.GetGeneration() != 2 || found {
		t.Fatalf("metadata and status change: generation %d, status kept %v", u.GetGeneration(), found)
	}
	status := r.Resource(widgets).Subresources["status"].(registry.Updater)
	u = update(status, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "ready", "status", "phase")
		_ = unstructured.SetNestedField(u.Object, "red", "spec", "color")
	})
	if p, _, _ := unstructured.NestedString(u.Object, "status", "phase"); p != "ready" || u.GetGeneration() != 2 {
		t.Fatalf("status update: phase %q generation %d", p, u.GetGeneration())
	}
	if c, _, _ := unstructured.NestedString(u.Object, "spec", "color"); c != "blue" {
		t.Fatalf("a status update changed spec.color to %q", c)
	}

	// Schema violations: 422 with the field path.
	_, err = s.Create(ctx, "default", "", widget("w2", "green"), &metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.color: Unsupported value: "green"`) {
		t.Fatalf("enum violation: %v", err)
	}

	// Deleting the definition deletes the objects first (a finalizer holds one, and with it
	// the definition, which refuses creates meanwhile), then stops serving.
	held := widget("held", "red")
	held.SetFinalizers([]string{"example.com/hold"})
	if _, err := s.Create(ctx, "default", "", held, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := crds.Delete(ctx, "", "widgets.example.com", &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "creates refused", func() bool {
		_, err := r.Resource(widgets).Store.Create(ctx, "default", "", widget("w3", "red"), &metav1.CreateOptions{})
		return apierrors.IsMethodNotSupported(err) && strings.Contains(err.Error(), "create not allowed while custom resource definition is terminating")
	})
	got, err = crds.Get(ctx, "", "widgets.example.com", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if crd := got.(*apiextensionsv1.CustomResourceDefinition); !slices.Contains(crd.Finalizers, customresources.CRDCleanupFinalizer) {
		t.Fatalf("finalizers %v", crd.Finalizers)
	}
	if _, _, err := s.Update(ctx, "default", "held", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		cur.(*unstructured.Unstructured).SetFinalizers(nil)
		return cur, nil
	}, &metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "definition gone", func() bool {
		_, err := crds.Get(ctx, "", "widgets.example.com", &metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	waitFor(t, "widgets not served", func() bool { return r.Resource(widgets) == nil })
	if _, err := s.Get(ctx, "default", "w1", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("custom object outlived its definition: %v", err)
	}
}

func TestCustomResourceDefinitionValidation(t *testing.T) {
	r := newRegistry(t)
	crds := store(r, "apiextensions.k8s.io", "customresourcedefinitions")
	tests := []struct {
		name   string
		mutate func(c *apiextensionsv1.CustomResourceDefinition)
		want   string
	}{
		{"name is not plural.group", func(c *apiextensionsv1.CustomResourceDefinition) { c.Name = "gadgets.example.com" },
			`metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group`},
		{"no storage version", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[0].Storage = false },
			"must have exactly one version marked as storage version"},
		{"two storage versions", func(c *apiextensionsv1.CustomResourceDefinition) {
			v2 := *c.Spec.Versions[0].DeepCopy()
			v2.Name = "v2"
			c.Spec.Versions = append(c.Spec.Versions, v2)
		}, "must have exactly one version marked as storage version"},
		{"no schema", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[0].Schema = nil },
			"spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"},
		{"not structural", func(c *apiextensionsv1.CustomResourceDefinition) {
			p := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
			p.Type = ""
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = p
		}, "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"},
		{"group without a dot", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Group, c.Name = "example", "widgets.example" },
			"should be a domain with at least one dot"},
		{"bad plural", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Names.Plural, c.Name = "Widgets", "Widgets.example.com"
		},
			"spec.names.plural: Invalid value: \"Widgets\""},
		{"bad scope", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Scope = "Global" },
			`spec.scope: Unsupported value: "Global"`},
		{"webhook conversion without a client", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}}}
		}, "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"},
		{"webhook conversion over http", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
					ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: ptr("http://127.0.0.1:1/convert")}}}
		}, `spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`},
		{"webhook conversion with url and service", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
					ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: ptr("https://127.0.0.1:1/convert"),
						Service: &apiextensionsv1.ServiceReference{Namespace: "default", Name: "conv"}}}}
		}, "spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required"},
		{"webhook conversion with a bad service path", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
					ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "default", Name: "conv", Path: ptr("convert")}}}}
		}, `spec.conversion.webhookClientConfig.service.path: Invalid value: "convert": must start with a '/'`},
		{"webhook conversion with unknown review versions", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v9"},
					ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: ptr("https://127.0.0.1:1/convert")}}}
		}, `spec.conversion.conversionReviewVersions: Invalid value: ["v9"]: must include at least one of v1, v1beta1`},
		{"webhook conversion with a bad caBundle", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
					ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: ptr("https://127.0.0.1:1/convert"), CABundle: []byte("not PEM")}}}
		}, "unable to load root certificates: unable to parse bytes as PEM block"},
		{"selectable field in metadata", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["metadata"] = apiextensionsv1.JSONSchemaProps{Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": {Type: "string"}}}
			c.Spec.Versions[0].SelectableFields = []apiextensionsv1.SelectableField{{JSONPath: ".metadata.name"}}
		}, `spec.versions[0].selectableFields[0].jsonPath: Invalid value: ".metadata.name": must not point to fields in metadata`},
		{"selectable field of an object", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].SelectableFields = []apiextensionsv1.SelectableField{{JSONPath: ".spec"}}
		}, `spec.versions[0].selectableFields[0].jsonPath: Invalid value: ".spec": must point to a field of type string, boolean or integer`},
		{"selectable field not in the schema", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].SelectableFields = []apiextensionsv1.SelectableField{{JSONPath: ".spec.weight"}}
		}, `spec.versions[0].selectableFields[0].jsonPath: Invalid value: ".spec.weight": is an invalid path`},
		{"selectable field twice", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].SelectableFields = []apiextensionsv1.SelectableField{{JSONPath: ".spec.color"}, {JSONPath: ".spec.color"}}
		}, `spec.versions[0].selectableFields[1].jsonPath: Duplicate value: ".spec.color"`},
		{"a protected group without approval", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Group, c.Name = "x.k8s.io", "widgets.x.k8s.io"
		},
			`metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111`},
		{"a protected group with an invalid approval", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Group, c.Name = "kubernetes.io", "widgets.kubernetes.io"
			c.Annotations = map[string]string{apiextensionsv1.KubeAPIApprovedAnnotation: "yes"}
		}, `metadata.annotations[api-approved.kubernetes.io]: Invalid value: "yes": protected groups must have approval annotation "api-approved.kubernetes.io" with either a URL or a reason starting with "unapproved"`},
		{"a CEL rule that does not compile", func(c *apiextensionsv1.CustomResourceDefinition) {
			p := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
			p.XValidations = apiextensionsv1.ValidationRules{{Rule: "self.size >"}}
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = p
		}, `x-kubernetes-validations[0].rule: Invalid value: {"rule":"self.size \u003e"}: compilation failed: ERROR: <input>:1:12: Syntax error`},
		{"a CEL rule on an unknown field", func(c *apiextensionsv1.CustomResourceDefinition) {
			p := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
			p.XValidations = apiextensionsv1.ValidationRules{{Rule: "self.size > 1"}, {Rule: "self.weight > 1"}}
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = p
		}, `properties[spec].x-kubernetes-validations[1].rule: Invalid value: {"rule":"self.weight \u003e 1"}: compilation failed: ERROR: <input>:1:5: undefined field 'weight'`},
		{"a CEL messageExpression that does not compile", func(c *apiextensionsv1.CustomResourceDefinition) {
			p := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
			p.XValidations = apiextensionsv1.ValidationRules{{Rule: "self.size > 1", MessageExpression: "'too small: ' +"}}
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = p
		}, "properties[spec].x-kubernetes-validations[0].messageExpression: Invalid value: {\"rule\":\"self.size \\u003e 1\",\"messageExpression\":\"'too small: ' +\"}: messageExpression compilation failed"},
		{"a CEL rule over its budget", func(c *apiextensionsv1.CustomResourceDefinition) {
			p := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
			p.Properties["tags"] = apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}}
			p.XValidations = apiextensionsv1.ValidationRules{{Rule: "self.tags.all(t, self.tags.all(u, t == u || !t.contains(u)))"}}
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = p
		}, "properties[spec].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"},
		{"a webhook client without the Webhook strategy", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: ptr("https://127.0.0.1:1/convert")}}}
		}, "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := widgetCRD()
			tt.mutate(c)
			_, err := crds.Create(context.Background(), "", "", c, &metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want 422 with %q", err, tt.want)
			}
		})
	}
}

// TestCustomResourceNamespaceCleanup: deleting a namespace deletes its custom objects too.
func TestCustomResourceNamespaceCleanup(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	if _, err := store(r, "apiextensions.k8s.io", "customresourcedefinitions").Create(ctx, "", "", widgetCRD(), &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "widgets served", func() bool { return r.Resource(widgets) != nil })
	nss := store(r, "", "namespaces")
	if _, err := nss.Create(ctx, "", "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := r.Resource(widgets).Store
	w := widget("w1", "red")
	w.SetNamespace("doomed")
	if _, err := s.Create(ctx, "doomed", "", w, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := nss.Delete(ctx, "", "doomed", &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "namespace gone", func() bool {
		_, err := nss.Get(ctx, "", "doomed", &metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if _, err := s.Get(ctx, "doomed", "w1", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("custom object outlived its namespace: %v", err)
	}
}

// TestCustomResourceVersions: every served version reads and writes the same objects
// (conversion None rewrites apiVersion), stored in the storage version; an unserved
// version is not served.
func TestCustomResourceVersions(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	crd := widgetCRD()
	v2 := *crd.Spec.Versions[0].DeepCopy()
	v2.Name, v2.Storage = "v2", false
	v3 := *v2.DeepCopy()
	v3.Name, v3.Served = "v3", false
	crd.Spec.Versions = append(crd.Spec.Versions, v2, v3)
	if _, err := store(r, "apiextensions.k8s.io", "customresourcedefinitions").Create(ctx, "", "", crd, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "widgets served", func() bool { return r.Resource(widgets) != nil })
	var byVersion = map[string]*registry.Store{}
	for _, res := range r.CustomResources() {
		byVersion[res.Store.Kind().Version] = res.Store
	}
	if len(byVersion) != 2 || byVersion["v1"] == nil || byVersion["v2"] == nil {
		t.Fatalf("served versions %v, want v1 and v2", byVersion)
	}
	w := widget("w1", "red")
	w.SetAPIVersion("example.com/v2")
	if _, err := byVersion["v2"].Create(ctx, "default", "", w, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := byVersion["v1"].Get(ctx, "default", "w1", &metav1.GetOptions{})
	if err != nil || got.GetObjectKind().GroupVersionKind().Version != "v1" {
		t.Fatalf("read as v1: %v %v", got, err)
	}
	list, err := byVersion["v2"].List(ctx, "default", &metav1.ListOptions{})
	if err != nil || len(list.(*unstructured.UnstructuredList).Items) != 1 || list.(*unstructured.UnstructuredList).Items[0].GetAPIVersion() != "example.com/v2" {
		t.Fatalf("list as v2: %v %v", list, err)
	}
	resp, err := r.EtcdClientForTest().Get(ctx, "/registry/example.com/widgets/default/w1")
	if err != nil || len(resp.Kvs) != 1 || !strings.Contains(string(resp.Kvs[0].Value), `"apiVersion":"example.com/v1"`) {
		t.Fatalf("stored value %v %v: want JSON in the storage version v1", resp, err)
	}

	// Updating the definition updates what is served: v3 now served, a short name added.
	crds := store(r, "apiextensions.k8s.io", "customresourcedefinitions")
	if _, _, err := crds.Update(ctx, "", "widgets.example.com", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		c := cur.(*apiextensionsv1.CustomResourceDefinition)
		c.Spec.Versions[2].Served = true
		c.Spec.Names.ShortNames = []string{"wd"}
		return c, nil
	}, &metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "v3 served with the short name", func() bool {
		for _, res := range r.CustomResources() {
			if res.Store.Kind().Version == "v3" && slices.Equal(res.Store.Names().ShortNames, []string{"wd"}) {
				return true
			}
		}
		return false
	})
}

// denyBlue is an admission chain that refuses widgets whose color is blue.
type denyBlue struct{ seen atomic.Int32 }

func (d *denyBlue) Admit(context.Context, *admission.Attributes) error { return nil }
func (d *denyBlue) Validate(_ context.Context, a *admission.Attributes) error {
	u, ok := a.Object.(*unstructured.Unstructured)
	if !ok || a.Resource.Resource != "widgets" {
		return nil
	}
	d.seen.Add(1)
	if c, _, _ := unstructured.NestedString(u.Object, "spec", "color"); c == "blue" {
		return apierrors.NewForbidden(a.Resource.GroupResource(), u.GetName(), errors.New("no blue widgets"))
	}
	return nil
}

// TestCustomResourceAdmission: custom resources go through the admission chain (webhooks
// included), whether their definition was served before the chain was installed or after.
func TestCustomResourceAdmission(t *testing.T) {
	r := newRegistry(t)
	ctx := request.WithInfo(request.WithUser(context.Background(), &request.User{Name: "alice"}),
		&request.Info{IsResourceRequest: true, Verb: "create", APIGroup: "example.com", APIVersion: "v1", Resource: "widgets", Namespace: "default"})
	crds := store(r, "apiextensions.k8s.io", "customresourcedefinitions")
	for i, before := range []bool{true, false} {
		r := r
		if !before {
			r = newRegistry(t)
			crds = store(r, "apiextensions.k8s.io", "customresourcedefinitions")
		}
		chain := &denyBlue{}
		if !before {
			r.SetAdmission(chain)
		}
		if _, err := crds.Create(context.Background(), "", "", widgetCRD(), &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "widgets served", func() bool { return r.Resource(widgets) != nil })
		if before {
			r.SetAdmission(chain)
		}
		s := r.Resource(widgets).Store
		if _, err := s.Create(ctx, "default", "", widget(fmt.Sprintf("ok-%d", i), "red"), &metav1.CreateOptions{}); err != nil {
			t.Fatalf("chain installed before=%v: red widget: %v", before, err)
		}
		_, err := s.Create(ctx, "default", "", widget(fmt.Sprintf("no-%d", i), "blue"), &metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || chain.seen.Load() != 2 {
			t.Fatalf("chain installed before=%v: blue widget: %v (chain saw %d)", before, err, chain.seen.Load())
		}
	}
}

// TestCustomResourceSelectableFields: a version's selectableFields work in field selectors
// of lists and watches (a value leaving the selector is a deletion to the watcher), next to
// metadata.name; other fields are refused as upstream.
func TestCustomResourceSelectableFields(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	crd := widgetCRD()
	crd.Spec.Versions[0].SelectableFields = []apiextensionsv1.SelectableField{{JSONPath: ".spec.color"}, {JSONPath: ".spec.size"}}
	if _, err := store(r, "apiextensions.k8s.io", "customresourcedefinitions").Create(ctx, "", "", crd, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "widgets served", func() bool { return r.Resource(widgets) != nil })
	ws := r.Resource(widgets).Store
	for _, w := range []*unstructured.Unstructured{widget("a", "red"), widget("b", "blue"), widget("c", "red")} {
		if w.GetName() == "c" {
			_ = unstructured.SetNestedField(w.Object, int64(5), "spec", "size")
		}
		if _, err := ws.Create(ctx, "default", "", w, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	names := func(sel string) []string {
		t.Helper()
		list, err := ws.List(ctx, "default", &metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		var out []string
		for _, it := range list.(*unstructured.UnstructuredList).Items {
			out = append(out, it.GetName())
		}
		return out
	}
	for sel, want := range map[string][]string{
		"spec.color=red":                  {"a", "c"},
		"spec.color!=red":                 {"b"},
		"spec.size=3":                     {"a", "b"}, // the default, applied on create
		"spec.size=5,spec.color=red":      {"c"},
		"spec.color=red,metadata.name!=a": {"c"},
	} {
		if got := names(sel); !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", sel, got, want)
		}
	}
	_, err := ws.List(ctx, "default", &metav1.ListOptions{FieldSelector: "spec.unknown=true"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "field label not supported: spec.unknown") {
		t.Fatalf("a field that is not selectable: %v", err)
	}

	list, err := ws.List(ctx, "default", &metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := ws.Watch(ctx, "default", &metav1.ListOptions{FieldSelector: "spec.color=red", ResourceVersion: list.(*unstructured.UnstructuredList).GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var written []string // what each update wrote, for the failure message
	recolor := func(name, color string) {
		t.Helper()
		out, _, err := ws.Update(ctx, "default", name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			u := cur.(*unstructured.Unstructured)
			return u, unstructured.SetNestedField(u.Object, color, "spec", "color")
		}, &metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, fmt.Sprintf("%s %s at %s", name, color, out.(*unstructured.Unstructured).GetResourceVersion()))
	}
	recolor("a", "blue") // leaves the selector
	recolor("b", "red")  // enters it
	for _, want := range []string{"DELETED a", "ADDED b"} {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed before %s (wrote %v)", want, written)
			}
			u, isU := ev.Object.(*unstructured.Unstructured)
			if !isU {
				t.Fatalf("watch: got %s %#v, want %s (wrote %v)", ev.Type, ev.Object, want, written)
			}
			if got := string(ev.Type) + " " + u.GetName(); got != want {
				// Say enough to tell a lost event from a late one: the list's and the
				// event's revisions, what the updates wrote, who served the watch.
				t.Fatalf("watch from %s (%T): got %s at %s, want %s (wrote %v)", list.(*unstructured.UnstructuredList).GetResourceVersion(),
					w, got, u.GetResourceVersion(), want, written)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("watch: no %s (wrote %v)", want, written)
		}
	}
}

// TestCustomResourceDefinitionAPIApproval: a definition in a protected group is created with
// the approval annotation (a URL or "unapproved..."), carries upstream's
// KubernetesAPIApprovalPolicyConformant condition, and an update leaving the annotation's
// state alone passes while one breaking it is refused.
func TestCustomResourceDefinitionAPIApproval(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	crds := store(r, "apiextensions.k8s.io", "customresourcedefinitions")
	for _, tt := range []struct{ group, annotation, status, reason string }{
		{"approved.k8s.io", "https://github.com/kubernetes/enhancements/pull/1111", "True", "ApprovedAnnotation"},
		{"sigs.kubernetes.io", "unapproved, experimental", "False", "UnapprovedAnnotation"},
	} {
		c := widgetCRD()
		c.Spec.Group, c.Name = tt.group, "widgets."+tt.group
		c.Annotations = map[string]string{apiextensionsv1.KubeAPIApprovedAnnotation: tt.annotation}
		if _, err := crds.Create(ctx, "", "", c, &metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", tt.group, err)
		}
		waitFor(t, tt.group+"'s approval condition", func() bool {
			obj, err := crds.Get(ctx, "", c.Name, &metav1.GetOptions{})
			if err != nil {
				return false
			}
			for _, cond := range obj.(*apiextensionsv1.CustomResourceDefinition).Status.Conditions {
				if cond.Type == apiextensionsv1.KubernetesAPIApprovalPolicyConformant {
					return string(cond.Status) == tt.status && cond.Reason == tt.reason
				}
			}
			return false
		})
		// A spec change keeping the annotation passes; dropping it is refused.
		if _, _, err := crds.Update(ctx, "", c.Name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			u := cur.(*apiextensionsv1.CustomResourceDefinition)
			u.Spec.Names.ShortNames = []string{"wdg"}
			return u, nil
		}, &metav1.UpdateOptions{}); err != nil {
			t.Fatalf("%s: update keeping the approval: %v", tt.group, err)
		}
		_, _, err := crds.Update(ctx, "", c.Name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			u := cur.(*apiextensionsv1.CustomResourceDefinition)
			u.Annotations = nil
			return u, nil
		}, &metav1.UpdateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "protected groups must have approval annotation") {
			t.Fatalf("%s: dropping the approval: %v", tt.group, err)
		}
	}
	// Other groups have no such condition.
	if _, err := crds.Create(ctx, "", "", widgetCRD(), &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "widgets served", func() bool { return r.Resource(widgets) != nil })
	obj, err := crds.Get(ctx, "", "widgets.example.com", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range obj.(*apiextensionsv1.CustomResourceDefinition).Status.Conditions {
		if cond.Type == apiextensionsv1.KubernetesAPIApprovalPolicyConformant {
			t.Fatalf("an unprotected group has %v", cond)
		}
	}
}

// TestCustomResourceValidationRatcheting: after a definition's schema tightens, an object
// that no longer satisfies it can still be updated as long as the invalid values do not
// change (upstream's CRDValidationRatcheting, schema and CEL rules alike); changing them, or
// creating such an object, is refused.
func TestCustomResourceValidationRatcheting(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	crds := store(r, "apiextensions.k8s.io", "customresourcedefinitions")
	if _, err := crds.Create(ctx, "", "", widgetCRD(), &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "widgets served", func() bool { return r.Resource(widgets) != nil })
	w := widget("w", "red")
	_ = unstructured.SetNestedField(w.Object, int64(5), "spec", "size")
	if _, err := r.Resource(widgets).Store.Create(ctx, "default", "", w, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Tighten: size at most 3 (schema) and below 4 (CEL).
	if _, _, err := crds.Update(ctx, "", "widgets.example.com", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		c := cur.(*apiextensionsv1.CustomResourceDefinition)
		spec := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		size := spec.Properties["size"]
		size.Maximum = ptr(float64(3))
		size.XValidations = apiextensionsv1.ValidationRules{{Rule: "self < 4", Message: "size must be below 4"}}
		spec.Properties["size"] = size
		c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		return c, nil
	}, &metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	tight := func() bool {
		_, err := r.Resource(widgets).Store.Create(ctx, "default", "", func() *unstructured.Unstructured {
			p := widget("probe", "red")
			_ = unstructured.SetNestedField(p.Object, int64(5), "spec", "size")
			return p
		}(), &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err)
	}
	waitFor(t, "the tighter schema served", tight)
	_, err := r.Resource(widgets).Store.Create(ctx, "default", "", func() *unstructured.Unstructured {
		p := widget("new", "red")
		_ = unstructured.SetNestedField(p.Object, int64(5), "spec", "size")
		return p
	}(), &metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.size: Invalid value: 5: spec.size in body should be less than or equal to 3") || !strings.Contains(err.Error(), "size must be below 4") {
		t.Fatalf("a new object with size 5: %v", err)
	}
	update := func(mutate func(u *unstructured.Unstructured)) error {
		_, _, err := r.Resource(widgets).Store.Update(ctx, "default", "w", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			u := cur.(*unstructured.Unstructured)
			mutate(u)
			return u, nil
		}, &metav1.UpdateOptions{})
		return err
	}
	if err := update(func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"touched": "yes"}) }); err != nil {
		t.Fatalf("a label change of an object whose size is unchanged: %v", err)
	}
	if err := update(func(u *unstructured.Unstructured) { _ = unstructured.SetNestedField(u.Object, "blue", "spec", "color") }); err != nil {
		t.Fatalf("a change of another spec field: %v", err)
	}
	err = update(func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(6), "spec", "size")
	})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "should be less than or equal to 3") || !strings.Contains(err.Error(), "size must be below 4") {
		t.Fatalf("changing the invalid size: %v", err)
	}
	if err := update(func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(2), "spec", "size")
	}); err != nil {
		t.Fatalf("fixing the size: %v", err)
	}
}

// TestCustomResourceDefinitionRuleCost: a rule whose estimated cost exceeds upstream's budget
// is refused (see TestCustomResourceDefinitionValidation), and the same rule passes once the
// list and strings it walks are bounded, as upstream's estimate says.
func TestCustomResourceDefinitionRuleCost(t *testing.T) {
	r := newRegistry(t)
	c := widgetCRD()
	p := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	p.Properties["tags"] = apiextensionsv1.JSONSchemaProps{Type: "array", MaxItems: ptr(int64(10)),
		Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: ptr(int64(20))}}}
	p.XValidations = apiextensionsv1.ValidationRules{{Rule: "self.tags.all(t, self.tags.all(u, t == u || !t.contains(u)))"}}
	c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = p
	if _, err := store(r, "apiextensions.k8s.io", "customresourcedefinitions").Create(context.Background(), "", "", c, &metav1.CreateOptions{}); err != nil {
		t.Fatalf("a bounded rule: %v", err)
	}
}
