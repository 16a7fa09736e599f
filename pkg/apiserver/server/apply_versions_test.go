package server_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

const gadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.ssa.example.com
spec:
  group: ssa.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              image: {type: string}
              size: {type: integer}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              image: {type: string}
              size: {type: integer}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
`

// TestCustomResourceApplyAcrossVersions: managers that applied through different versions of
// a custom resource keep their fields, conflict with each other and remove only their own,
// as upstream's field managers convert managedFields between versions: by apiVersion alone
// (conversion None) or through the definition's conversion webhook.
func TestCustomResourceApplyAcrossVersions(t *testing.T) {
	s := servertest.New(t, nil)
	dyn := dynamic.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	apply := func(gvr schema.GroupVersionResource, manager, body string, force bool) (*unstructured.Unstructured, error) {
		return dyn.Resource(gvr).Namespace("default").Patch(ctx, "g", types.ApplyPatchType, []byte(body),
			metav1.PatchOptions{FieldManager: manager, Force: ptr.To(force)})
	}
	entry := func(t *testing.T, u *unstructured.Unstructured, manager, apiVersion, fields string) {
		t.Helper()
		for _, e := range u.GetManagedFields() {
			if e.Manager == manager {
				if e.APIVersion != apiVersion || e.FieldsV1.GetRawString() != fields {
					t.Fatalf("%s's entry: %s %s, want %s %s", manager, e.APIVersion, e.FieldsV1.GetRawString(), apiVersion, fields)
				}
				return
			}
		}
		t.Fatalf("no entry of %s in %v", manager, managers(u.GetManagedFields()))
	}

	t.Run("conversion None", func(t *testing.T) {
		createCRD(t, dyn, gadgetCRD)
		v1 := schema.GroupVersionResource{Group: "ssa.example.com", Version: "v1", Resource: "gadgets"}
		v2 := v1
		v2.Version = "v2"
		waitServed(t, dyn, v1)
		waitServed(t, dyn, v2)
		if _, err := apply(v1, "one", `{"apiVersion":"ssa.example.com/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"image":"a:1","tags":["x"]}}`, false); err != nil {
			t.Fatal(err)
		}
		u, err := apply(v2, "two", `{"apiVersion":"ssa.example.com/v2","kind":"Gadget","metadata":{"name":"g"},"spec":{"size":3,"tags":["y"]}}`, false)
		if err != nil {
			t.Fatal(err)
		}
		entry(t, u, "one", "ssa.example.com/v1", `{"f:spec":{"f:image":{},"f:tags":{"v:\"x\"":{}}}}`)
		entry(t, u, "two", "ssa.example.com/v2", `{"f:spec":{"f:size":{},"f:tags":{"v:\"y\"":{}}}}`)
		_, err = apply(v2, "two", `{"apiVersion":"ssa.example.com/v2","kind":"Gadget","metadata":{"name":"g"},"spec":{"image":"b:2"}}`, false)
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "one": .spec.image`) {
			t.Fatalf("apply at v2 of a field owned at v1: %v, want a conflict with one", err)
		}
		// one's re-apply at v1 without its tag removes that tag and keeps two's.
		u, err = apply(v1, "one", `{"apiVersion":"ssa.example.com/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"image":"a:1"}}`, false)
		if err != nil {
			t.Fatal(err)
		}
		if tags, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "tags"); !slices.Equal(tags, []string{"y"}) {
			t.Fatalf("tags %v, want [y]", tags)
		}
		entry(t, u, "two", "ssa.example.com/v2", `{"f:spec":{"f:size":{},"f:tags":{"v:\"y\"":{}}}}`)
	})

	t.Run("conversion webhook", func(t *testing.T) {
		conv := &converter{paths: map[string]int{}}
		srv, caPEM := newTLSServer(t, http.HandlerFunc(conv.serve))
		createCRD(t, dyn, fmt.Sprintf(widgetConversionCRD, srv.URL+"/convert", base64.StdEncoding.EncodeToString(caPEM)))
		v1 := schema.GroupVersionResource{Group: "conv.example.com", Version: "v1", Resource: "widgets"}
		v2 := v1
		v2.Version = "v2"
		waitServed(t, dyn, v1)
		waitServed(t, dyn, v2)
		// v1's spec.host and spec.port are v2's spec.address: owning one is owning the other.
		if _, err := apply(v1, "one", `{"apiVersion":"conv.example.com/v1","kind":"Widget","metadata":{"name":"g"},"spec":{"host":"a.example","port":80}}`, false); err != nil {
			t.Fatal(err)
		}
		_, err := apply(v2, "two", `{"apiVersion":"conv.example.com/v2","kind":"Widget","metadata":{"name":"g"},"spec":{"address":"b.example:81"}}`, false)
		// The conflict names the fields in the version their owner applied.
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflicts with "one":`) || !strings.Contains(err.Error(), ".spec.host") || !strings.Contains(err.Error(), ".spec.port") {
			t.Fatalf("apply at v2 of what one owns at v1: %v, want conflicts with one on .spec.host and .spec.port", err)
		}
		u, err := apply(v2, "two", `{"apiVersion":"conv.example.com/v2","kind":"Widget","metadata":{"name":"g"},"spec":{"address":"b.example:81"}}`, true)
		if err != nil {
			t.Fatal(err)
		}
		if addr, _, _ := unstructured.NestedString(u.Object, "spec", "address"); addr != "b.example:81" {
			t.Fatalf("address %q after a forced apply", addr)
		}
		entry(t, u, "two", "conv.example.com/v2", `{"f:spec":{"f:address":{}}}`)
		for _, e := range u.GetManagedFields() {
			if e.Manager == "one" && strings.Contains(e.FieldsV1.GetRawString(), "f:host") {
				t.Fatalf("one still owns spec.host after two forced spec.address: %s", e.FieldsV1.GetRawString())
			}
		}
		if conv.calls("/convert") == 0 {
			t.Fatal("the conversion webhook was never called")
		}
	})
}
