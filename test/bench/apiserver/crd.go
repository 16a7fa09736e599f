package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// benchObjects is the custom resource of the crd rows: a ConfigMap's shape (a map of
// strings) under a structural schema, so that validation and pruning are paid as any CRD's.
var benchObjects = schema.GroupVersionResource{Group: "bench.example.com", Version: "v1", Resource: "benchobjects"}

// crdRows measures create, get and lists of 100 of a custom resource (dynamic client, JSON:
// protobuf is not offered for custom resources, as upstream) against the same on ConfigMaps
// on one apiserver process of its own (the program binary, as the rbac rows start theirs),
// in alternating rounds: through the dynamic client too (the same client and encoding: what
// the server's custom-resource path costs), and through the typed clientset with protobuf
// (the main rows; the client's JSON decoding of the custom lists, in this process too,
// counts against their rates). Besides the rates, the server process's CPU time is read
// around every round and summed per side: the rates swing with this shared machine's other
// load, a process's own CPU time per request far less. The ratio is custom/ConfigMap.
func crdRows(ctx context.Context, dir string, fsync bool, binary string, n int) (vsJSON, vsProtobuf []cpuRow) {
	s := startServer(dir, "crd", fsync, apiserverBinary(binary, dir), fmt.Sprintf("--watch-cache=%v", watchCacheOn))
	defer s.stop()
	rc, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	must(err)
	rc.QPS, rc.Burst = 1e6, 1e6
	cs := kubernetes.NewForConfigOrDie(rc)
	dyn := dynamic.NewForConfigOrDie(rc)
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "benchobjects.bench.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "bench.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "benchobjects", Kind: "BenchObject"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"data": {Type: "object",
						AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}}}}}}}}}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	must(err)
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	_, err = dyn.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
	must(err)
	for _, ns := range []string{"crd", "crd-list"} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		must(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := dyn.Resource(benchObjects).Namespace("crd").List(ctx, metav1.ListOptions{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			must(fmt.Errorf("custom resource not served after 30s: %w", err))
		}
		time.Sleep(10 * time.Millisecond) // poll
	}
	object := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "bench.example.com/v1", "kind": "BenchObject",
			"metadata": map[string]any{"name": name}, "data": map[string]any{"key": "value"}}}
	}
	configMapGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	configMap := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name}, "data": map[string]any{"key": "value"}}}
	}
	for i := range 100 {
		_, err := dyn.Resource(benchObjects).Namespace("crd-list").Create(ctx, object(fmt.Sprintf("item-%03d", i)), metav1.CreateOptions{})
		must(err)
		_, err = cs.CoreV1().ConfigMaps("crd-list").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("item-%03d", i)}, Data: map[string]string{"key": "value"}}, metav1.CreateOptions{})
		must(err)
	}
	// sides are the three clients: the custom resource, ConfigMaps as JSON, ConfigMaps as protobuf.
	type side struct {
		create func(name string) error
		get    func(name string) error
		list   func(rv string) error
	}
	dynSide := func(gvr schema.GroupVersionResource, obj func(string) *unstructured.Unstructured) side {
		ri, li := dyn.Resource(gvr).Namespace("crd"), dyn.Resource(gvr).Namespace("crd-list")
		return side{
			create: func(name string) error { _, err := ri.Create(ctx, obj(name), metav1.CreateOptions{}); return err },
			get:    func(name string) error { _, err := ri.Get(ctx, name, metav1.GetOptions{}); return err },
			list: func(rv string) error {
				l, err := li.List(ctx, metav1.ListOptions{ResourceVersion: rv})
				if err == nil && len(l.Items) != 100 {
					err = fmt.Errorf("%s list returned %d items", gvr.Resource, len(l.Items))
				}
				return err
			},
		}
	}
	cms, cmList := cs.CoreV1().ConfigMaps("crd"), cs.CoreV1().ConfigMaps("crd-list")
	custom, cmJSON := dynSide(benchObjects, object), dynSide(configMapGVR, configMap)
	cmProto := side{
		create: func(name string) error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"key": "value"}}, metav1.CreateOptions{})
			return err
		},
		get: func(name string) error { _, err := cms.Get(ctx, name, metav1.GetOptions{}); return err },
		list: func(rv string) error {
			l, err := cmList.List(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err == nil && len(l.Items) != 100 {
				err = fmt.Errorf("configmap list returned %d items", len(l.Items))
			}
			return err
		},
	}
	for _, against := range []struct {
		side side
		tag  string
		rows *[]cpuRow
	}{{cmJSON, "j", &vsJSON}, {cmProto, "p", &vsProtobuf}} {
		other := against.side
		for _, conc := range []int{1, 32} {
			ops := n
			if conc > 1 {
				ops = n * 4
			}
			name := func(i int) string { return fmt.Sprintf("%s%d-%05d", against.tag, conc, i) }
			*against.rows = append(*against.rows,
				measureServerCPU(s.pid, s.pid, "create", conc, ops, func(i int) error { return custom.create(name(i)) }, func(i int) error { return other.create(name(i)) }),
				measureServerCPU(s.pid, s.pid, "get", conc, ops, func(i int) error { return custom.get(name(i % ops)) }, func(i int) error { return other.get(name(i % ops)) }))
			for _, rv := range []string{"0", ""} {
				row := "list100 rv=0"
				if rv == "" {
					row = "list100 rv=unset"
				}
				*against.rows = append(*against.rows, measureServerCPU(s.pid, s.pid, row, conc, ops/4, func(int) error { return custom.list(rv) }, func(int) error { return other.list(rv) }))
			}
		}
	}
	return vsJSON, vsProtobuf
}

func printCRDRows(vsJSON, vsProtobuf []cpuRow) {
	printServerCPURows("Custom resources vs ConfigMaps, both through the dynamic client (JSON), same apiserver process, alternating rounds; ratio = custom/ConfigMap:",
		"custom", "configmap", vsJSON)
	printServerCPURows("Custom resources (dynamic client, JSON) vs ConfigMaps (typed clientset, protobuf, as the main rows); ratio = custom/ConfigMap:",
		"custom", "configmap", vsProtobuf)
}
