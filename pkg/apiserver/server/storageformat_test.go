package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// encodingOf names the encoding of a stored etcd value by its first bytes.
func encodingOf(v []byte) string {
	switch {
	case bytes.HasPrefix(v, []byte("k8s\x00")):
		return registry.StorageProtobuf
	case bytes.HasPrefix(v, []byte("{")):
		return registry.StorageJSON
	case bytes.HasPrefix(v, []byte("apiVersion:")) || bytes.HasPrefix(v, []byte("metadata:")):
		return registry.StorageYAML
	}
	return "unknown"
}

// startOn starts an apiserver on an external etcd, writing mediaType.
func startOn(t *testing.T, etcdURL, mediaType string) (*server.Server, kubernetes.Interface) {
	t.Helper()
	cfg, err := servertest.Config(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg.EtcdServers = []string{etcdURL}
	cfg.StorageMediaType = mediaType
	s, err := servertest.Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
}

// TestStorageMediaTypeSwitch: objects written in one storage media type are read (get,
// list, watch) and updated by an apiserver writing another, on the same etcd, and each
// write lands in the writer's encoding (protobuf by default, as kube-apiserver).
func TestStorageMediaTypeSwitch(t *testing.T) {
	for _, tc := range []struct{ name, first, second string }{
		{"json to protobuf", registry.StorageJSON, registry.StorageProtobuf},
		{"protobuf to json", registry.StorageProtobuf, registry.StorageJSON},
		{"default to yaml", "", registry.StorageYAML},
		{"yaml to default", registry.StorageYAML, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			etcd := etcdtest.Start(t)
			c, err := etcd.Client()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			ctx := context.Background()
			want := func(mt string) string {
				if mt == "" {
					return registry.StorageProtobuf
				}
				return mt
			}
			raw := func(key string) []byte {
				t.Helper()
				resp, err := c.Get(ctx, "/registry/"+key)
				if err != nil || len(resp.Kvs) != 1 {
					t.Fatalf("etcd get %s: %v %v", key, resp, err)
				}
				return resp.Kvs[0].Value
			}

			s, cs := startOn(t, etcd.ClientURL(), tc.first)
			cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Labels: map[string]string{"a": "b"}},
				Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"bin": {0, 1, 2}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pod, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dep, err := cs.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"},
				Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"configmaps/default/cm", "pods/default/p", "deployments/default/d", "namespaces/default"} {
				if got := encodingOf(raw(key)); got != want(tc.first) {
					t.Errorf("%s stored as %s, want %s", key, got, want(tc.first))
				}
			}
			if err := s.Shutdown(); err != nil {
				t.Fatal(err)
			}

			s, cs = startOn(t, etcd.ClientURL(), tc.second)
			t.Cleanup(func() { _ = s.Shutdown() })
			gotCM, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "cm", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			gotPod, err := cs.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			gotDep, err := cs.AppsV1().Deployments("default").Get(ctx, "d", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for name, pair := range map[string][2]any{"configmap": {cm, gotCM}, "pod": {pod, gotPod}, "deployment": {dep, gotDep}} {
				if !equality.Semantic.DeepEqual(pair[0], pair[1]) {
					a, _ := json.Marshal(pair[0])
					b, _ := json.Marshal(pair[1])
					t.Errorf("%s changed across the switch:\nwritten %s\nread    %s", name, a, b)
				}
			}
			list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != 1 || !equality.Semantic.DeepEqual(list.Items[0].Spec, pod.Spec) {
				t.Fatalf("list pods: %+v %v", list, err)
			}

			w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: gotCM.ResourceVersion})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			gotCM.Labels["a"] = "c"
			updated, err := cs.CoreV1().ConfigMaps("default").Update(ctx, gotCM, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := encodingOf(raw("configmaps/default/cm")); got != want(tc.second) {
				t.Errorf("updated configmap stored as %s, want %s", got, want(tc.second))
			}
			select {
			case ev := <-w.ResultChan():
				got, ok := ev.Object.(*corev1.ConfigMap)
				if ev.Type != watch.Modified || !ok || !equality.Semantic.DeepEqual(got, updated) {
					t.Fatalf("watch event %s %#v, want MODIFIED %#v", ev.Type, ev.Object, updated)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no watch event for the update")
			}
		})
	}
}

// TestStorageReadsOldJSON: a value in the JSON earlier hacp builds wrote (encoding/json of the
// typed object, no apiVersion or kind) is read and, once updated, rewritten as protobuf.
func TestStorageReadsOldJSON(t *testing.T) {
	etcd := etcdtest.Start(t)
	c, err := etcd.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	old, err := json.Marshal(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "default", UID: "u-1",
		CreationTimestamp: metav1.NewTime(time.Unix(1700000000, 0))}, Data: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "/registry/configmaps/default/old", string(old)); err != nil {
		t.Fatal(err)
	}
	s, cs := startOn(t, etcd.ClientURL(), "")
	t.Cleanup(func() { _ = s.Shutdown() })
	cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "old", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.UID != "u-1" || cm.Data["k"] != "v" || !cm.CreationTimestamp.Equal(&metav1.Time{Time: time.Unix(1700000000, 0)}) {
		t.Fatalf("old JSON read as %+v", cm)
	}
	cm.Data["k"] = "w"
	if _, err := cs.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(ctx, "/registry/configmaps/default/old")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatal(resp, err)
	}
	if got := encodingOf(resp.Kvs[0].Value); got != registry.StorageProtobuf {
		t.Fatalf("rewritten as %s, want protobuf", got)
	}
}
