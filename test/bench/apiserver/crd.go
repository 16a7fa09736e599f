package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/hacp/hacp/internal/upstream"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

var crdKube = flag.Bool("crd-kube", true, "also run the crd rows' custom-against-ConfigMap rows on kube-apiserver 1.33 over the same etcd (built into _output/upstream on first use)")

// benchObjects is the custom resource of the crd rows: a ConfigMap's shape (a map of
// strings) under a structural schema, so that validation and pruning are paid as any CRD's.
var benchObjects = schema.GroupVersionResource{Group: "bench.example.com", Version: "v1", Resource: "benchobjects"}

// crdRows measures create, get and lists of 100 of a custom resource (dynamic client, JSON:
// protobuf is not offered for custom resources, as upstream) against the same on ConfigMaps
// on one apiserver process of its own (the program binary, as the rbac rows start theirs),
// in alternating rounds: through the dynamic client too (the same client and encoding: what
// the server's custom-resource path costs), and through the typed clientset with protobuf
// (the main rows; the client's JSON decoding of the custom lists, in this process too,
// counts against their rates), and, through the dynamic client, with the lists read raw (to
// their end, not decoded: the client's decoding of a custom list's longer items left out).
// Besides the rates, the server process's CPU time is read around every round and summed per
// side: the rates swing with this shared machine's other load, a process's own CPU time per
// request far less. The ratio is custom/ConfigMap. With -crd-kube the same-client rows run
// on kube-apiserver 1.33 too, over the same etcd, as upstream's reference.
func crdRows(ctx context.Context, dir string, fsync bool, binary string, n int) (vsJSON, vsProtobuf, onKube []cpuRow) {
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
	for i := range 100 {
		_, err := dyn.Resource(benchObjects).Namespace("crd-list").Create(ctx, benchObject(fmt.Sprintf("item-%03d", i)), metav1.CreateOptions{})
		must(err)
		_, err = cs.CoreV1().ConfigMaps("crd-list").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("item-%03d", i)}, Data: map[string]string{"key": "value"}}, metav1.CreateOptions{})
		must(err)
	}
	sides := newCRDSides(ctx, rc)
	vsJSON = crdSideRows(s.pid, "j", n, sides.custom, sides.cmJSON)
	vsProtobuf = crdSideRows(s.pid, "p", n, sides.custom, sides.cmProto)
	if *crdKube {
		// The same rows on kube-apiserver 1.33 over the same etcd: what upstream's custom
		// resources cost against its ConfigMaps (its custom lists carry their items' kinds too).
		bin, err := upstream.Build(ctx, upstream.Root(), "kube-apiserver")
		must(err)
		kube := startKubeAPIServer(dir, bin, s.etcdURL, etcdTLSArgs(s.pki)...)
		defer kube.stop()
		krc, err := clientcmd.BuildConfigFromFlags("", kube.kubeconfig)
		must(err)
		krc.QPS, krc.Burst = 1e6, 1e6
		kdyn := dynamic.NewForConfigOrDie(krc)
		for deadline := time.Now().Add(2 * time.Minute); ; {
			l, err := kdyn.Resource(benchObjects).Namespace("crd-list").List(ctx, metav1.ListOptions{})
			if err == nil && len(l.Items) == 100 {
				break
			} else if time.Now().After(deadline) {
				must(fmt.Errorf("kube-apiserver does not serve the custom resource after 2m: %v", err))
			}
			time.Sleep(50 * time.Millisecond) // poll
		}
		ks := newCRDSides(ctx, krc)
		onKube = crdSideRows(kube.cmd.Process.Pid, "k", n, ks.custom, ks.cmJSON)
	}
	return vsJSON, vsProtobuf, onKube
}

// benchObject is a custom object of the crd rows, as a ConfigMap of the rows.
func benchObject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "bench.example.com/v1", "kind": "BenchObject",
		"metadata": map[string]any{"name": name}, "data": map[string]any{"key": "value"}}}
}

// crdSide is one client's operations on one resource: creates and gets in namespace crd,
// lists of the 100 objects in crd-list, decoded or read raw.
type crdSide struct {
	create func(name string) error
	get    func(name string) error
	list   func(rv string) error
	raw    func(rv string) error // the list read to its end as JSON, not decoded; nil: no raw rows
}

// crdSides are the three clients of the rows: the custom resource (dynamic client, JSON),
// ConfigMaps through the same client, and ConfigMaps through the typed clientset (protobuf).
type crdSides struct{ custom, cmJSON, cmProto crdSide }

func newCRDSides(ctx context.Context, rc *rest.Config) crdSides {
	cs := kubernetes.NewForConfigOrDie(rc)
	dyn := dynamic.NewForConfigOrDie(rc)
	rawClient := cs.CoreV1().RESTClient()
	dynSide := func(gvr schema.GroupVersionResource, prefix string, obj func(string) *unstructured.Unstructured) crdSide {
		ri, li := dyn.Resource(gvr).Namespace("crd"), dyn.Resource(gvr).Namespace("crd-list")
		return crdSide{
			create: func(name string) error { _, err := ri.Create(ctx, obj(name), metav1.CreateOptions{}); return err },
			get:    func(name string) error { _, err := ri.Get(ctx, name, metav1.GetOptions{}); return err },
			list: func(rv string) error {
				l, err := li.List(ctx, metav1.ListOptions{ResourceVersion: rv})
				if err == nil && len(l.Items) != 100 {
					err = fmt.Errorf("%s list returned %d items", gvr.Resource, len(l.Items))
				}
				return err
			},
			raw: func(rv string) error {
				req := rawClient.Get().AbsPath(prefix, "namespaces", "crd-list", gvr.Resource).SetHeader("Accept", "application/json")
				if rv != "" {
					req = req.Param("resourceVersion", rv)
				}
				b, err := req.Do(ctx).Raw()
				if err == nil && len(b) < 100*50 {
					err = fmt.Errorf("%s list returned %d bytes", gvr.Resource, len(b))
				}
				return err
			},
		}
	}
	configMapGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	configMap := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name}, "data": map[string]any{"key": "value"}}}
	}
	cms, cmList := cs.CoreV1().ConfigMaps("crd"), cs.CoreV1().ConfigMaps("crd-list")
	return crdSides{
		custom: dynSide(benchObjects, "/apis/bench.example.com/v1", benchObject),
		cmJSON: dynSide(configMapGVR, "/api/v1", configMap),
		cmProto: crdSide{
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
		},
	}
}

// crdSideRows measures custom against other on the server process pid, at concurrency 1
// and 32; tag keeps the created objects' names apart from other rows'. When other reads its
// lists raw too, so do rows of their own.
func crdSideRows(pid int, tag string, n int, custom, other crdSide) []cpuRow {
	var rows []cpuRow
	for _, conc := range []int{1, 32} {
		ops := n
		if conc > 1 {
			ops = n * 4
		}
		name := func(i int) string { return fmt.Sprintf("%s%d-%05d", tag, conc, i) }
		rows = append(rows,
			measureServerCPU(pid, pid, "create", conc, ops, func(i int) error { return custom.create(name(i)) }, func(i int) error { return other.create(name(i)) }),
			measureServerCPU(pid, pid, "get", conc, ops, func(i int) error { return custom.get(name(i % ops)) }, func(i int) error { return other.get(name(i % ops)) }))
		for _, rv := range []string{"0", ""} {
			rows = append(rows, measureServerCPU(pid, pid, "list100 rv="+rvName(rv), conc, ops/4, func(int) error { return custom.list(rv) }, func(int) error { return other.list(rv) }))
		}
		if other.raw != nil {
			for _, rv := range []string{"0", ""} {
				rows = append(rows, measureServerCPU(pid, pid, "list100 raw rv="+rvName(rv), conc, ops/4, func(int) error { return custom.raw(rv) }, func(int) error { return other.raw(rv) }))
			}
		}
	}
	return rows
}

func printCRDRows(vsJSON, vsProtobuf, onKube []cpuRow) {
	printServerCPURows("Custom resources vs ConfigMaps, both through the dynamic client (JSON), same apiserver process, alternating rounds; ratio = custom/ConfigMap\n"+
		"(raw: the JSON list read to its end, not decoded; a custom list's items carry their apiVersion and kind, a ConfigMap list's do not, as upstream's):",
		"custom", "configmap", vsJSON)
	printServerCPURows("Custom resources (dynamic client, JSON) vs ConfigMaps (typed clientset, protobuf, as the main rows); ratio = custom/ConfigMap:",
		"custom", "configmap", vsProtobuf)
	if len(onKube) > 0 {
		printServerCPURows("The same rows on kube-apiserver 1.33 (its own process on the same etcd member, dynamic client, JSON); ratio = custom/ConfigMap:",
			"custom", "configmap", onKube)
	}
}
