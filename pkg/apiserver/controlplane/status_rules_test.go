package controlplane_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// statusRule is upstream's rule of a built-in kind with a status subresource, beyond
// "a main-resource write keeps the status, a status write keeps the spec".
type statusRule struct {
	// metaKept are the metadata a status write keeps of the stored object ("all": every
	// field but managedFields).
	metaKept []string
	// specAnnotations and statusAnnotations are annotations that carry spec or status
	// fields (upstream's internal fields that the served version lacks): a status write
	// keeps the first, a main-resource write the second.
	specAnnotations, statusAnnotations []string
	// mainKeepsSpec: a main-resource write cannot change the spec either.
	mainKeepsSpec bool
}

var resetForStatus = []string{"labels", "annotations", "finalizers", "ownerReferences"}

// statusRules lists every built-in kind with a status subresource, by group/version/plural.
var statusRules = map[string]statusRule{
	"/v1/namespaces":                          {},
	"/v1/pods":                                {metaKept: []string{"ownerReferences"}},
	"/v1/nodes":                               {},
	"/v1/services":                            {},
	"/v1/replicationcontrollers":              {},
	"/v1/resourcequotas":                      {},
	"/v1/persistentvolumeclaims":              {},
	"/v1/persistentvolumes":                   {},
	"apps/v1/deployments":                     {metaKept: []string{"labels"}},
	"apps/v1/replicasets":                     {},
	"apps/v1/statefulsets":                    {},
	"apps/v1/daemonsets":                      {specAnnotations: []string{"deprecated.daemonset.template.generation"}},
	"batch/v1/jobs":                           {},
	"batch/v1/cronjobs":                       {},
	"autoscaling/v2/horizontalpodautoscalers": {},
	"autoscaling/v1/horizontalpodautoscalers": {
		specAnnotations:   []string{"autoscaling.alpha.kubernetes.io/metrics", "autoscaling.alpha.kubernetes.io/behavior"},
		statusAnnotations: []string{"autoscaling.alpha.kubernetes.io/current-metrics", "autoscaling.alpha.kubernetes.io/conditions"},
	},
	"policy/v1/poddisruptionbudgets":                              {},
	"apiextensions.k8s.io/v1/customresourcedefinitions":           {},
	"apiregistration.k8s.io/v1/apiservices":                       {metaKept: resetForStatus},
	"networking.k8s.io/v1/ingresses":                              {},
	"networking.k8s.io/v1/servicecidrs":                           {metaKept: resetForStatus},
	"storage.k8s.io/v1/volumeattachments":                         {metaKept: resetForStatus},
	"storage.k8s.io/v1/csinodes":                                  {metaKept: resetForStatus},
	"certificates.k8s.io/v1/certificatesigningrequests":           {mainKeepsSpec: true},
	"flowcontrol.apiserver.k8s.io/v1/flowschemas":                 {metaKept: []string{"all"}},
	"flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations": {metaKept: []string{"all"}},
	"admissionregistration.k8s.io/v1/validatingadmissionpolicies": {metaKept: resetForStatus},
	"certificates.k8s.io/v1/podcertificaterequests":               {metaKept: resetForStatus},
	"resource.k8s.io/v1/resourceclaims":                           {metaKept: resetForStatus},
	"resource.k8s.io/v1/devicetaintrules":                         {metaKept: resetForStatus},
	"storagemigration.k8s.io/v1/storageversionmigrations":         {metaKept: resetForStatus},
}

// generationKinds are the built-in kinds whose metadata.generation upstream counts (1 on
// create, one more on each update that changes the spec, or what stands for it).
var generationKinds = []string{
	"/v1/pods", "/v1/replicationcontrollers", "/v1/podtemplates",
	"apps/v1/deployments", "apps/v1/replicasets", "apps/v1/statefulsets", "apps/v1/daemonsets",
	"batch/v1/jobs", "batch/v1/cronjobs", "policy/v1/poddisruptionbudgets",
	"apiextensions.k8s.io/v1/customresourcedefinitions",
	"networking.k8s.io/v1/ingresses", "networking.k8s.io/v1/ingressclasses", "networking.k8s.io/v1/networkpolicies",
	"discovery.k8s.io/v1/endpointslices",
	"flowcontrol.apiserver.k8s.io/v1/flowschemas", "flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
	"admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", "admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
	"admissionregistration.k8s.io/v1/validatingadmissionpolicies", "admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
	"admissionregistration.k8s.io/v1/mutatingadmissionpolicies", "admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings",
	"resource.k8s.io/v1/deviceclasses", "resource.k8s.io/v1/resourceslices", "resource.k8s.io/v1/devicetaintrules",
	"autoscaling/v2/horizontalpodautoscalers", "autoscaling/v1/horizontalpodautoscalers",
}

// generationMetadata names the metadata whose change upstream counts as a spec change for
// the generation: a Deployment's annotations (copied to its replica sets), an
// EndpointSlice's labels (the service it belongs to).
var generationMetadata = map[string]string{
	"apps/v1/deployments":                "annotations",
	"discovery.k8s.io/v1/endpointslices": "labels",
	// v2's metrics and behavior travel in a v1 HPA's annotations: part of the spec counted.
	"autoscaling/v1/horizontalpodautoscalers": "annotations",
}

func kindKey(k *registry.Kind) string { return k.Group + "/" + k.Version + "/" + k.Plural }

// TestStatusRules: every built-in kind with a status subresource states its update rules,
// and they are upstream's: a main-resource write cannot change the status, a status write
// cannot change the spec nor the metadata upstream keeps. The kinds come from the
// registry, so a new kind with a status subresource and no rule fails here.
func TestStatusRules(t *testing.T) {
	for _, k := range controlplane.Kinds() {
		rule, listed := statusRules[kindKey(k)]
		if !k.Status {
			if listed || k.Strategy.PrepareForStatusUpdate != nil {
				t.Errorf("%s has no status subresource but a status rule", kindKey(k))
			}
			continue
		}
		t.Run(kindKey(k), func(t *testing.T) {
			if !listed {
				t.Fatal("a kind with a status subresource: add upstream's rules to statusRules")
			}
			if k.Strategy.PrepareForUpdate == nil || k.Strategy.PrepareForStatusUpdate == nil {
				t.Fatal("a kind with a status subresource needs Strategy.PrepareForUpdate and PrepareForStatusUpdate")
			}
			old, req := filled(t, k, 1, rule), filled(t, k, 2, rule)

			// A main-resource write.
			obj := req.DeepCopyObject()
			k.Strategy.PrepareForUpdate(obj, old)
			if got, want := part(obj, "Status"), part(old, "Status"); !apiequality.Semantic.DeepEqual(got, want) {
				t.Errorf("a main-resource update changed the status")
			}
			checkAnnotations(t, "a main-resource update", obj, old, rule.statusAnnotations)
			if rule.mainKeepsSpec && !apiequality.Semantic.DeepEqual(part(obj, "Spec"), part(old, "Spec")) {
				t.Errorf("a main-resource update changed the spec")
			}

			// A status write.
			obj = req.DeepCopyObject()
			k.Strategy.PrepareForStatusUpdate(obj, old.DeepCopyObject())
			if got, want := part(obj, "Status"), part(req, "Status"); !apiequality.Semantic.DeepEqual(got, want) {
				t.Errorf("a status update did not write the status:\n got %+v\nwant %+v", got, want)
			}
			for _, f := range topFields(obj) {
				if f != "TypeMeta" && f != "ObjectMeta" && f != "Status" && !apiequality.Semantic.DeepEqual(part(obj, f), part(old, f)) {
					t.Errorf("a status update changed %s", f)
				}
			}
			checkAnnotations(t, "a status update", obj, old, rule.specAnnotations)
			checkStatusMetadata(t, obj, old, req, rule)
		})
	}
}

// TestGenerationRules: the built-in kinds whose generation upstream counts are those with
// a SpecChanged rule; it sees a change of everything, and not one of status or of the
// metadata the server owns.
func TestGenerationRules(t *testing.T) {
	for _, k := range controlplane.Kinds() {
		want := slices.Contains(generationKinds, kindKey(k))
		if (k.Strategy.SpecChanged != nil) != want {
			t.Errorf("%s: has a SpecChanged rule %v, upstream counts its generation %v", kindKey(k), k.Strategy.SpecChanged != nil, want)
			continue
		}
		if !want {
			continue
		}
		t.Run(kindKey(k), func(t *testing.T) {
			old, other := filled(t, k, 1, statusRules[kindKey(k)]), filled(t, k, 2, statusRules[kindKey(k)])
			if !k.Strategy.SpecChanged(other, old) {
				t.Error("a change of every field is no spec change")
			}
			if k.Status {
				obj := old.DeepCopyObject()
				reflect.ValueOf(obj).Elem().FieldByName("Status").Set(reflect.ValueOf(part(other, "Status")))
				if k.Strategy.SpecChanged(obj, old) {
					t.Error("a status change counts as a spec change")
				}
			}
			obj := old.DeepCopyObject()
			a, _ := meta.Accessor(obj)
			a.SetResourceVersion("99")
			a.SetUID(types.UID("other"))
			a.SetGeneration(99)
			a.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "other"}})
			if k.Strategy.SpecChanged(obj, old) {
				t.Error("a change of server-owned metadata counts as a spec change")
			}
			for _, field := range []string{"labels", "annotations"} {
				obj := old.DeepCopyObject()
				a, _ := meta.Accessor(obj)
				o, _ := meta.Accessor(other)
				if field == "labels" {
					a.SetLabels(o.GetLabels())
				} else {
					a.SetAnnotations(o.GetAnnotations())
				}
				if got, want := k.Strategy.SpecChanged(obj, old), generationMetadata[kindKey(k)] == field; got != want {
					t.Errorf("a change of %s counts as a spec change: %v, upstream %v", field, got, want)
				}
			}
		})
	}
}

// filled returns an object of kind k with every field set from seed (annotations that
// carry spec or status fields too): two seeds give objects that differ in every field a
// rule could keep.
func filled(t *testing.T, k *registry.Kind, seed int, rule statusRule) runtime.Object {
	t.Helper()
	obj := k.New()
	fill(reflect.ValueOf(obj).Elem(), seed, 0)
	a, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	ann := a.GetAnnotations()
	for _, key := range slices.Concat(rule.specAnnotations, rule.statusAnnotations) {
		ann[key] = strconv.Itoa(10 + seed) // numbers: a DaemonSet's template generation is one
	}
	return obj
}

// fill sets the exported fields of v, down to a few levels, to values made of seed.
func fill(v reflect.Value, seed, depth int) {
	if depth > 9 {
		return
	}
	if v.Type() == reflect.TypeFor[metav1.Time]() {
		v.Set(reflect.ValueOf(metav1.NewTime(time.Unix(int64(seed)*3600, 0))))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), seed, depth+1)
			}
		}
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), seed, depth+1)
		v.Set(p)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes(fmt.Appendf(nil, `"s%d"`, seed)) // raw JSON
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), seed, depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		key, elem := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(key, seed, depth+1)
		fill(elem, seed, depth+1)
		m.SetMapIndex(key, elem)
		v.Set(m)
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", seed))
	case reflect.Bool:
		v.SetBool(seed%2 == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(seed))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(seed))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(seed))
	}
}

// part is obj's top-level field name.
func part(obj runtime.Object, name string) any {
	return reflect.ValueOf(obj).Elem().FieldByName(name).Interface()
}

// topFields names obj's top-level fields.
func topFields(obj runtime.Object) []string {
	typ := reflect.TypeOf(obj).Elem()
	out := make([]string, typ.NumField())
	for i := range out {
		out[i] = typ.Field(i).Name
	}
	return out
}

// checkAnnotations: obj's annotations of keys are old's.
func checkAnnotations(t *testing.T, write string, obj, old runtime.Object, keys []string) {
	t.Helper()
	a, _ := meta.Accessor(obj)
	o, _ := meta.Accessor(old)
	for _, key := range keys {
		if a.GetAnnotations()[key] != o.GetAnnotations()[key] {
			t.Errorf("%s changed annotation %s (%q, stored %q)", write, key, a.GetAnnotations()[key], o.GetAnnotations()[key])
		}
	}
}

// checkStatusMetadata: a status write keeps the metadata rule.metaKept names and writes
// the rest.
func checkStatusMetadata(t *testing.T, obj, old, req runtime.Object, rule statusRule) {
	t.Helper()
	a, _ := meta.Accessor(obj)
	o, _ := meta.Accessor(old)
	r, _ := meta.Accessor(req)
	if slices.Contains(rule.metaKept, "all") {
		if !apiequality.Semantic.DeepEqual(a.GetManagedFields(), r.GetManagedFields()) {
			t.Error("a status update lost the write's managedFields")
		}
		got, want := part(obj, "ObjectMeta").(metav1.ObjectMeta), part(old, "ObjectMeta").(metav1.ObjectMeta)
		got.ManagedFields, want.ManagedFields = nil, nil
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Error("a status update changed metadata")
		}
		return
	}
	withoutKeys := func(m map[string]string) map[string]string {
		m = maps.Clone(m)
		for _, key := range slices.Concat(rule.specAnnotations, rule.statusAnnotations) {
			delete(m, key)
		}
		return m
	}
	fields := map[string]func(metav1.Object) any{
		"labels":          func(m metav1.Object) any { return m.GetLabels() },
		"annotations":     func(m metav1.Object) any { return withoutKeys(m.GetAnnotations()) },
		"finalizers":      func(m metav1.Object) any { return m.GetFinalizers() },
		"ownerReferences": func(m metav1.Object) any { return m.GetOwnerReferences() },
	}
	for name, get := range fields {
		want, from := get(r), "the write's"
		if slices.Contains(rule.metaKept, name) {
			want, from = get(o), "the stored"
		}
		if !apiequality.Semantic.DeepEqual(get(a), want) {
			t.Errorf("a status update: %s are not %s", name, from)
		}
	}
}
