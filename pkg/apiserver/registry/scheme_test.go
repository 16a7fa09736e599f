package registry_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/utils/ptr"
)

// samplePod is a pod as a ReplicaSet creates and a kubelet reports it.
func samplePod() *corev1.Pod {
	ts := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d4b9c8f5d-x2x9k", Namespace: "default", UID: "3f1c2a4e-0d6b-4c53-9a8e-5f0b1e2d3c4a",
			GenerateName: "web-7d4b9c8f5d-", CreationTimestamp: ts, Labels: map[string]string{"app": "web", "pod-template-hash": "7d4b9c8f5d"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c8f5d", UID: "9b8a7c6d-1e2f-4a3b-8c9d-0e1f2a3b4c5d",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27", ImagePullPolicy: corev1.PullIfNotPresent,
				Ports:                    []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
				Env:                      []corev1.EnvVar{{Name: "MODE", Value: "production"}},
				Resources:                corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
				VolumeMounts:             []corev1.VolumeMount{{Name: "kube-api-access-abcde", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-abcde", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}}}}}}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, ServiceAccountName: "default", NodeName: "node-1",
			SchedulerName: "default-scheduler", TerminationGracePeriodSeconds: ptr.To[int64](30), EnableServiceLinks: ptr.To(true),
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, HostIP: "10.77.0.11", PodIP: "10.244.1.7", StartTime: &ts, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ts}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: ts}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "nginx", Ready: true, Image: "docker.io/library/nginx:1.27", ImageID: "docker.io/library/nginx@sha256:0123456789abcdef",
				ContainerID: "containerd://0123456789abcdef", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ts}}}}},
	}
}

func sampleConfigMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: "default", UID: "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9",
		CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), Labels: map[string]string{"app": "web"}},
		Data: map[string]string{"LOG_LEVEL": "info", "config.yaml": "server:\n  port: 8080\n  workers: 4\n"}}
}

// TestStorageCodec: every kind round-trips through each storage media type; protobuf values
// carry upstream's envelope with the kind's apiVersion and kind; a value of another kind, or
// garbage, is an error; JSON without apiVersion/kind (earlier hacp builds) is read.
func TestStorageCodec(t *testing.T) {
	for _, k := range controlplane.Kinds() {
		for _, mt := range registry.StorageMediaTypes {
			if _, proto := k.New().(interface{ Marshal() ([]byte, error) }); mt == registry.StorageProtobuf && k.StorageJSON && !proto {
				continue // APIServices: no protobuf form here; always stored as JSON, as upstream
			}
			t.Run(k.Plural+"/"+mt, func(t *testing.T) {
				c, err := registry.NewStorageCodec(mt, k.GVK(), k.New)
				if err != nil {
					t.Fatal(err)
				}
				obj := k.New()
				m, err := registry.MetaAccessor(obj)
				if err != nil {
					t.Fatal(err)
				}
				m.SetName("x")
				m.SetLabels(map[string]string{"a": "b"})
				m.SetUID("u")
				data, err := c.Encode(obj)
				if err != nil {
					t.Fatal(err)
				}
				if !obj.GetObjectKind().GroupVersionKind().Empty() {
					t.Errorf("Encode left the kind set on the object: %v", obj.GetObjectKind().GroupVersionKind())
				}
				switch mt {
				case registry.StorageProtobuf:
					if !bytes.HasPrefix(data, []byte("k8s\x00")) {
						t.Fatalf("protobuf value starts %q", data[:min(8, len(data))])
					}
					// An independent protobuf decoder finds the kind in the envelope.
					_, gvk, err := protobuf.NewSerializer(registry.Scheme, registry.Scheme).Decode(data, nil, nil)
					if err != nil || *gvk != k.GVK() {
						t.Fatalf("envelope says %v (%v), want %v", gvk, err, k.GVK())
					}
				case registry.StorageJSON:
					var tm metav1.TypeMeta
					if err := json.Unmarshal(data, &tm); err != nil || tm.APIVersion != k.GroupVersion().String() || tm.Kind != k.Kind {
						t.Fatalf("JSON value has %+v (%v), want %v", tm, err, k.GVK())
					}
				}
				into := k.New()
				m2, _ := registry.MetaAccessor(into)
				m2.SetAnnotations(map[string]string{"stale": "left over"}) // Decode must empty into
				if err := c.Decode(data, into); err != nil {
					t.Fatal(err)
				}
				if !equality.Semantic.DeepEqual(obj, into) {
					t.Fatalf("round trip changed the object:\n%#v\n%#v", obj, into)
				}
				old, err := json.Marshal(obj) // what earlier hacp builds stored
				if err != nil {
					t.Fatal(err)
				}
				into = k.New()
				if err := c.Decode(old, into); err != nil || !equality.Semantic.DeepEqual(obj, into) {
					t.Fatalf("old JSON: %v\n%#v", err, into)
				}
			})
		}
	}
	cm, err := registry.NewStorageCodec("", schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, func() runtime.Object { return &corev1.ConfigMap{} })
	if err != nil {
		t.Fatal(err)
	}
	pods, err := registry.NewStorageCodec("", schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, func() runtime.Object { return &corev1.Pod{} })
	if err != nil {
		t.Fatal(err)
	}
	data, err := pods.Encode(samplePod())
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{"a pod": data, "garbage": []byte("k8s\x00\xff\xff"), "empty": nil, "text": []byte("hello")} {
		if err := cm.Decode(bad, &corev1.ConfigMap{}); err == nil {
			t.Errorf("decoding %s as a ConfigMap succeeded", name)
		}
	}
	if _, err := registry.NewStorageCodec("application/xml", schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, func() runtime.Object { return &corev1.Pod{} }); err == nil {
		t.Error("application/xml accepted")
	}
}

// TestStorageCodecWithoutProtobuf: a type that cannot be protobuf (as custom resources) is
// written as JSON even when protobuf is asked for.
func TestStorageCodecWithoutProtobuf(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	c, err := registry.NewStorageCodec(registry.StorageProtobuf, gvk, func() runtime.Object { return &unstructured.Unstructured{} })
	if err != nil {
		t.Fatal(err)
	}
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(gvk)
	w.SetName("w")
	data, err := c.Encode(w)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("{")) {
		t.Fatalf("stored as %q, want JSON", data)
	}
}

// FuzzStorageDecode: no stored value makes the decoder panic.
func FuzzStorageDecode(f *testing.F) {
	c, err := registry.NewStorageCodec("", schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, func() runtime.Object { return &corev1.Pod{} })
	if err != nil {
		f.Fatal(err)
	}
	data, err := c.Encode(samplePod())
	if err != nil {
		f.Fatal(err)
	}
	js, _ := json.Marshal(samplePod())
	f.Add(data)
	f.Add(js)
	f.Add([]byte("k8s\x00"))
	f.Add([]byte("apiVersion: v1\nkind: Pod\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = c.Decode(b, &corev1.Pod{})
	})
}

// BenchmarkStorageCodec: bytes per stored object and the cost to encode and decode it, JSON
// against protobuf, for a running pod and a small configmap.
func BenchmarkStorageCodec(b *testing.B) {
	for _, o := range []struct {
		name string
		obj  runtime.Object
		gvk  schema.GroupVersionKind
		new  func() runtime.Object
	}{
		{"pod", samplePod(), schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, func() runtime.Object { return &corev1.Pod{} }},
		{"configmap", sampleConfigMap(), schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, func() runtime.Object { return &corev1.ConfigMap{} }},
	} {
		for _, mt := range []string{"old-json", registry.StorageJSON, registry.StorageProtobuf} {
			var c storage.Codec = storage.JSONCodec{} // what earlier hacp builds used
			if mt != "old-json" {
				var err error
				if c, err = registry.NewStorageCodec(mt, o.gvk, o.new); err != nil {
					b.Fatal(err)
				}
			}
			data, err := c.Encode(o.obj)
			if err != nil {
				b.Fatal(err)
			}
			short := map[string]string{"old-json": "old-json", registry.StorageJSON: "json", registry.StorageProtobuf: "protobuf"}[mt]
			b.Run(o.name+"/"+short+"/decode", func(b *testing.B) {
				b.ReportAllocs()
				into := o.new()
				for b.Loop() {
					if err := c.Decode(data, into); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(data)), "stored-bytes")
			})
			b.Run(o.name+"/"+short+"/encode", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.Encode(o.obj); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
