package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	clientv3 "go.etcd.io/etcd/client/v3"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"
)

const cronTabCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.labelSelector
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Image, type: string, jsonPath: .spec.image, priority: 1}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.image != 'forbidden'"
              message: image must not be forbidden
            properties:
              cronSpec: {type: string, default: "*/5 * * * *"}
              image: {type: string}
              replicas: {type: integer, minimum: 0, maximum: 10, default: 1}
          status:
            type: object
            properties:
              replicas: {type: integer}
              labelSelector: {type: string}
`

const cronTabObject = `apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-cron
  namespace: default
spec:
  image: my-image:1
`

var cronTabs = schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}

// TestCustomResourceDefinitionKubectl walks kubectl through a CRD's life: apply it, serve its
// objects with printer columns, defaults, patch, label, scale, status, schema and CEL
// validation, and deleting it removes its objects and its routes.
func TestCustomResourceDefinitionKubectl(t *testing.T) {
	s := servertest.New(t, nil)
	k := newKubectlEnv(t, s.KubeconfigPath())
	dyn := dynamic.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()

	contains(t, k.ok("apply", "-f", k.file("crd.yaml", cronTabCRD)), "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created")
	k.ok("wait", "--for=condition=Established", "--timeout=10s", "crd/crontabs.stable.example.com")
	crd := k.ok("get", "crd", "crontabs.stable.example.com", "-o", "yaml")
	contains(t, crd, "type: NamesAccepted", "type: Established", "storedVersions:", "- v1", "acceptedNames:")
	contains(t, k.ok("api-resources", "--api-group=stable.example.com"), "crontabs", "ct", "stable.example.com/v1", "CronTab")

	// Served within a second of being established: kubectl's discovery cache may lag, the
	// server does not.
	contains(t, k.ok("apply", "-f", k.file("ct.yaml", cronTabObject)), "crontab.stable.example.com/my-cron created")

	t.Run("get with printer columns and defaults", func(t *testing.T) {
		out := k.ok("get", "ct")
		contains(t, out, "NAME", "SPEC", "REPLICAS", "my-cron", "*/5 * * * *")
		if strings.Contains(out, "IMAGE") {
			t.Fatalf("a priority 1 column without -o wide:\n%s", out)
		}
		contains(t, k.ok("get", "ct", "-o", "wide"), "IMAGE", "my-image:1")
		var obj map[string]any
		if err := json.Unmarshal([]byte(k.ok("get", "crontab", "my-cron", "-o", "json")), &obj); err != nil {
			t.Fatal(err)
		}
		spec := obj["spec"].(map[string]any)
		if spec["replicas"] != float64(1) || spec["cronSpec"] != "*/5 * * * *" {
			t.Fatalf("defaults not applied: %v", spec)
		}
		if md := obj["metadata"].(map[string]any); md["generation"] != float64(1) {
			t.Fatalf("generation = %v, want 1", md["generation"])
		}
		contains(t, k.ok("get", "all"), "crontab.stable.example.com/my-cron")
	})

	t.Run("explain", func(t *testing.T) {
		// The OpenAPI documents follow the routes (they take longer to build): poll.
		deadline := time.Now().Add(20 * time.Second)
		for {
			out, _, err := k.run("explain", "crontabs.spec")
			if err == nil || time.Now().After(deadline) {
				contains(t, out, "KIND:", "CronTab", "cronSpec", "replicas", "<integer>")
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("merge patch, label, scale", func(t *testing.T) {
		k.ok("patch", "ct", "my-cron", "--type=merge", "-p", `{"spec":{"image":"my-image:2"}}`)
		k.ok("label", "ct", "my-cron", "tier=batch")
		contains(t, k.ok("get", "ct", "-l", "tier=batch", "-o", "wide"), "my-cron", "my-image:2")
		if out := k.ok("get", "ct", "-l", "tier=web"); strings.Contains(out, "my-cron") {
			t.Fatalf("label selector tier=web matched: %s", out)
		}
		contains(t, k.ok("get", "ct", "--field-selector", "metadata.name=my-cron"), "my-cron")
		contains(t, k.ok("scale", "ct", "my-cron", "--replicas=3"), "scaled")
		got, err := dyn.Resource(cronTabs).Namespace("default").Get(ctx, "my-cron", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); r != 3 {
			t.Fatalf("spec.replicas after scale = %d", r)
		}
		if got.GetGeneration() != 3 { // image, then replicas; the label is metadata
			t.Fatalf("generation = %d, want 3", got.GetGeneration())
		}
		k.fails("strategic merge patch", "patch", "ct", "my-cron", "--type=strategic", "-p", `{"spec":{"image":"x"}}`)
	})

	t.Run("status without touching spec", func(t *testing.T) {
		cur, err := dyn.Resource(cronTabs).Namespace("default").Get(ctx, "my-cron", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gen := cur.GetGeneration()
		_ = unstructured.SetNestedField(cur.Object, int64(2), "status", "replicas")
		_ = unstructured.SetNestedField(cur.Object, "app=cron", "status", "labelSelector")
		_ = unstructured.SetNestedField(cur.Object, "ignored:1", "spec", "image")
		out, err := dyn.Resource(cronTabs).Namespace("default").UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if img, _, _ := unstructured.NestedString(out.Object, "spec", "image"); img != "my-image:2" {
			t.Fatalf("a status update changed spec.image to %q", img)
		}
		if r, _, _ := unstructured.NestedInt64(out.Object, "status", "replicas"); r != 2 || out.GetGeneration() != gen {
			t.Fatalf("status.replicas %d generation %d (was %d)", r, out.GetGeneration(), gen)
		}
		// The main resource ignores status.
		_, err = dyn.Resource(cronTabs).Namespace("default").Patch(ctx, "my-cron", types.MergePatchType, []byte(`{"status":{"replicas":9}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		contains(t, k.ok("get", "--raw", "/apis/stable.example.com/v1/namespaces/default/crontabs/my-cron/scale"), `"replicas":3`, `"selector":"app=cron"`)
	})

	t.Run("schema and CEL violations are 422", func(t *testing.T) {
		k.fails(`spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10`,
			"patch", "ct", "my-cron", "--type=merge", "-p", `{"spec":{"replicas":11}}`)
		// apiextensions-apiserver v0.37's CEL validator leaves the value out of the message.
		k.fails(`The CronTab "my-cron" is invalid: spec: Invalid value: image must not be forbidden`,
			"patch", "ct", "my-cron", "--type=merge", "-p", `{"spec":{"image":"forbidden"}}`)
		_, err := dyn.Resource(cronTabs).Namespace("default").Patch(ctx, "my-cron", types.MergePatchType, []byte(`{"spec":{"replicas":"x","image":"forbidden"}}`), metav1.PatchOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("want 422, got %v", err)
		}
		causes := err.(apierrors.APIStatus).Status().Details.Causes
		fields := map[string]bool{}
		for _, c := range causes {
			fields[c.Field] = true
		}
		if !fields["spec.replicas"] {
			t.Fatalf("causes %+v lack spec.replicas", causes)
		}
		// Unknown fields: pruned, refused with fieldValidation=Strict.
		bogus := k.file("bogus.yaml", strings.Replace(cronTabObject, "  image: my-image:1", "  image: my-image:2\n  bogus: 1", 1))
		k.fails(`unknown field "spec.bogus"`, "apply", "--validate=strict", "-f", bogus)
		contains(t, k.ok("apply", "--validate=false", "-f", bogus), "configured")
		if out := k.ok("get", "ct", "my-cron", "-o", "jsonpath={.spec}"); strings.Contains(out, "bogus") || !strings.Contains(out, "my-image:2") {
			t.Fatalf("unknown field kept: %s", out)
		}
		// Duplicate keys: refused with fieldValidation=Strict, warned about with Warn (the
		// last one wins), as the strict JSON serializer does; an object without kind is 400.
		path := "/apis/stable.example.com/v1/namespaces/default/crontabs"
		dup := k.file("dup.json", `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"dup"},`+
			`"spec":{"image":"a","image":"b","cronSpec":"1 * * * *","ports":[]}}`)
		k.fails(`strict decoding error: duplicate field "spec.image"`, "create", "--raw", path+"?fieldValidation=Strict", "-f", dup)
		_, stderr, err := k.run("create", "--raw", path+"?fieldValidation=Warn", "-f", dup)
		if err != nil || !strings.Contains(stderr, `Warning: duplicate field "spec.image"`) {
			t.Fatalf("create with a duplicate key and fieldValidation=Warn: %v\n%s", err, stderr)
		}
		if out := k.ok("get", "ct", "dup", "-o", "jsonpath={.spec.image}"); out != "b" {
			t.Fatalf("duplicate key: the stored object has image %q, want the last one, b", out)
		}
		k.fails(`Object 'Kind' is missing`, "create", "--raw", path, "-f",
			k.file("nokind.json", `{"apiVersion":"stable.example.com/v1","metadata":{"name":"nokind"},"spec":{"image":"a"}}`))
	})

	t.Run("delete the definition", func(t *testing.T) {
		contains(t, k.ok("delete", "crd", "crontabs.stable.example.com"), "deleted")
		// kubectl waits for the deletion: the objects went first.
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := dyn.Resource(cronTabs).Namespace("default").List(ctx, metav1.ListOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("custom resources still served after the CRD was deleted: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		out, _, _ := k.run("get", "--raw", "/apis/stable.example.com/v1/namespaces/default/crontabs")
		if out != "" {
			t.Fatalf("route still answers: %s", out)
		}
		// Nothing left in etcd under the resource's prefix.
		resp, err := s.EtcdClient().Get(ctx, "/registry/stable.example.com/crontabs/", clientv3.WithPrefix())
		if err != nil || len(resp.Kvs) != 0 {
			t.Fatalf("custom objects left in etcd: %v %v", resp, err)
		}
	})
}

// TestCustomResourceDynamicInformer: a client-go dynamic informer sees every event of a
// custom resource, in order.
func TestCustomResourceDynamicInformer(t *testing.T) {
	s := servertest.New(t, nil)
	cfg := servertest.RestConfig(t, s)
	dyn := dynamic.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	createCRD(t, dyn, cronTabCRD)
	waitServed(t, dyn, cronTabs)

	events := make(chan string, 100)
	f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	inf := f.ForResource(cronTabs).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { events <- "add " + o.(*unstructured.Unstructured).GetName() },
		UpdateFunc: func(_, o any) {
			img, _, _ := unstructured.NestedString(o.(*unstructured.Unstructured).Object, "spec", "image")
			events <- "update " + o.(*unstructured.Unstructured).GetName() + " " + img
		},
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			events <- "delete " + o.(*unstructured.Unstructured).GetName()
		},
	})
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	c := dyn.Resource(cronTabs).Namespace("default")
	var want []string
	for i, name := range []string{"a", "b", "c"} {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "stable.example.com/v1", "kind": "CronTab",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"image": "img:0"}}}
		if _, err := c.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, "add "+name)
		if _, err := c.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"image":"img:1"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, "update "+name+" img:1")
		if i == 1 {
			if err := c.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			want = append(want, "delete "+name)
		}
	}
	for i, w := range want {
		select {
		case got := <-events:
			if got != w {
				t.Fatalf("event %d = %q, want %q (all: %v)", i, got, w, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d (%q) did not come", i, w)
		}
	}
}

func createCRD(t *testing.T, dyn dynamic.Interface, manifest string) {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &obj); err != nil {
		t.Fatal(err)
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(crdGVR).Create(context.Background(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitServed polls until gvr answers a list.
func waitServed(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := dyn.Resource(gvr).Namespace("default").List(context.Background(), metav1.ListOptions{})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v not served: %v", gvr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCustomResourceThreeMasters: on three masters (each apiserver with its own member of one
// etcd cluster), a CRD created through master 1 is served and discovered by masters 2 and 3
// (they learn it from their watch), and deleting it through master 2 stops all three.
func TestCustomResourceThreeMasters(t *testing.T) {
	servers := servertest.NewStacked(t, 3)
	var dyns []dynamic.Interface
	for _, s := range servers {
		dyns = append(dyns, dynamic.NewForConfigOrDie(servertest.RestConfig(t, s)))
	}
	ctx := context.Background()

	createCRD(t, dyns[0], cronTabCRD)
	start := time.Now()
	for i, d := range dyns {
		waitServed(t, d, cronTabs)
		t.Logf("served by master %d %v after the create through master 1 returned", i+1, time.Since(start))
	}

	rc2 := servertest.RestConfig(t, servers[2])
	disc := discovery.NewDiscoveryClientForConfigOrDie(rc2)
	rl, err := disc.ServerResourcesForGroupVersion("stable.example.com/v1")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, r := range rl.APIResources {
		if r.Name == "crontabs" && r.Kind == "CronTab" && r.Namespaced && len(r.ShortNames) == 1 && r.ShortNames[0] == "ct" && len(r.Categories) == 1 {
			found = true
		}
	}
	if !found {
		t.Fatalf("discovery of master 3: %+v", rl.APIResources)
	}
	groups, err := disc.ServerGroups() // aggregated discovery in client-go
	if err != nil {
		t.Fatal(err)
	}
	found = false
	for _, g := range groups.Groups {
		found = found || g.Name == "stable.example.com"
	}
	if !found {
		t.Fatalf("group missing from /apis: %+v", groups.Groups)
	}
	dyn1, dyn2 := dyns[0], dyns[1]

	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "stable.example.com/v1", "kind": "CronTab",
		"metadata": map[string]any{"name": "x"}, "spec": map[string]any{"image": "a"}}}
	created, err := dyn2.Resource(cronTabs).Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := dyn1.Resource(cronTabs).Namespace("default").Get(ctx, "x", metav1.GetOptions{})
	if err != nil || got.GetResourceVersion() != created.GetResourceVersion() {
		t.Fatalf("read through the first: %v %v", got, err)
	}

	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if err := dyn2.Resource(crdGVR).Delete(ctx, "crontabs.stable.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, d := range dyns {
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := d.Resource(cronTabs).Namespace("default").Get(ctx, "x", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				if st, ok := err.(apierrors.APIStatus); ok && st.Status().Details == nil {
					break // the route's 404, not the object's
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("still served: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// ingressCRD claims networking.k8s.io/v1 ingresses, which a built-in serves, and a version
// of its own, v7 (approved, as a protected group requires).
const ingressCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ingresses.networking.k8s.io
  annotations: {api-approved.kubernetes.io: "https://github.com/kubernetes/enhancements/pull/1111"}
spec:
  group: networking.k8s.io
  scope: Namespaced
  names: {plural: ingresses, singular: ingress, kind: Ingress}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v7
    served: true
    storage: false
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestCustomResourceBuiltinNames: a definition's version that a built-in resource serves
// is not served (the built-in keeps its routes, storage and discovery, as upstream's handler
// chain asks the built-ins first); its other versions are.
func TestCustomResourceBuiltinNames(t *testing.T) {
	s := servertest.New(t, nil)
	cfg := servertest.RestConfig(t, s)
	dyn := dynamic.NewForConfigOrDie(cfg)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	createCRD(t, dyn, ingressCRD)
	v7 := schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v7", Resource: "ingresses"}
	waitServed(t, dyn, v7)

	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "i"}, Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{
		Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
	if _, err := cs.NetworkingV1().Ingresses("default").Create(ctx, ing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(v7).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.io/v7", "kind": "Ingress", "metadata": map[string]any{"name": "c"}, "spec": map[string]any{"any": "thing"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{
		"/registry/ingress/default/i":                     true, // the built-in's
		"/registry/networking.k8s.io/ingresses/default/i": false,
		"/registry/networking.k8s.io/ingresses/default/c": true, // the definition's own version
	} {
		resp, err := s.EtcdClient().Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(resp.Kvs) == 1; got != want {
			t.Errorf("%s stored: %v, want %v", key, got, want)
		}
	}
	// The built-in's list does not see the definition's object, and v1 is listed once.
	list, err := cs.NetworkingV1().Ingresses("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "i" {
		t.Fatalf("built-in list: %v %v", list, err)
	}
	_, lists, err := cs.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			if r.Name == "ingresses" {
				count[l.GroupVersion]++
			}
		}
	}
	if count["networking.k8s.io/v1"] != 1 || count["networking.k8s.io/v7"] != 1 {
		t.Fatalf("ingresses in discovery by group-version: %v, want networking.k8s.io/v1 and v7 once each", count)
	}
}

const doohickeyCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: doohickeys.networking.k8s.io
  annotations: {api-approved.kubernetes.io: "https://github.com/kubernetes/enhancements/pull/1111"}
spec:
  group: networking.k8s.io
  scope: Namespaced
  names: {plural: doohickeys, singular: doohickey, kind: Doohickey}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestCustomResourceInBuiltinGroupVersion: a definition that adds a resource to a built-in
// group-version is served there beside the built-ins, which keep serving (the routes of such
// a group-version are installed afresh on each change, the others' reused), and goes when it
// is deleted while the built-ins stay.
func TestCustomResourceInBuiltinGroupVersion(t *testing.T) {
	s := servertest.New(t, nil)
	cfg := servertest.RestConfig(t, s)
	dyn := dynamic.NewForConfigOrDie(cfg)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	doohickeys := schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "doohickeys"}
	builtins := func() {
		t.Helper()
		if _, err := cs.NetworkingV1().Ingresses("default").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("built-in ingresses: %v", err)
		}
		if _, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("configmaps: %v", err)
		}
	}
	createCRD(t, dyn, doohickeyCRD)
	waitServed(t, dyn, doohickeys)
	builtins()
	if _, err := dyn.Resource(doohickeys).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "Doohickey", "metadata": map[string]any{"name": "g"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if err := dyn.Resource(crds).Delete(ctx, "doohickeys.networking.k8s.io", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := dyn.Resource(doohickeys).Namespace("default").List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("doohickeys still served 30s after the definition's delete: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // poll
	}
	builtins()
}
