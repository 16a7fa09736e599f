package tableconvert

//lint:file-ignore SA1019 core/v1 Endpoints is deprecated upstream but still served (the issue asks for it)

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func objMeta(name string, d time.Duration) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: ago(d), ResourceVersion: "42", UID: "uid-" + "x"}
}

func columnNames(t *metav1.Table) []string {
	var out []string
	for _, c := range t.ColumnDefinitions {
		out = append(out, c.Name)
	}
	return out
}

func TestKinds(t *testing.T) {
	tests := []struct {
		name    string
		obj     runtime.Object
		columns []string
		cells   []any
	}{
		{
			name:    "namespace",
			obj:     &corev1.Namespace{ObjectMeta: objMeta("kube-system", 3*time.Hour), Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			columns: []string{"Name", "Status", "Age"},
			cells:   []any{"kube-system", "Active", "3h"},
		},
		{
			name: "running pod",
			obj: &corev1.Pod{
				ObjectMeta: objMeta("web-1", 5*time.Minute+3*time.Second),
				Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}},
				Status: corev1.PodStatus{
					Phase:  corev1.PodRunning,
					PodIPs: []corev1.PodIP{{IP: "10.77.1.5"}},
					ContainerStatuses: []corev1.ContainerStatus{
						{Name: "a", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
						{Name: "b", Ready: true, RestartCount: 2, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
							LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: ago(90 * time.Second)}}},
					},
				},
			},
			columns: []string{"Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"},
			cells:   []any{"web-1", "2/2", "Running", "2 (90s ago)", "5m3s", "10.77.1.5", "node-a", "<none>", "<none>"},
		},
		{
			name: "pending pod waiting for image",
			obj: &corev1.Pod{
				ObjectMeta: objMeta("web-2", 10*time.Second),
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
					{Name: "a", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}},
				}},
			},
			cells: []any{"web-2", "0/1", "ImagePullBackOff", "0", "10s", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "pod with failing init container",
			obj: &corev1.Pod{
				ObjectMeta: objMeta("init", time.Minute),
				Spec:       corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i"}}, Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{
					{Name: "i", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}},
				}},
			},
			cells: []any{"init", "0/1", "Init:ExitCode:3", "0", "60s", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "terminating pod",
			obj: &corev1.Pod{
				ObjectMeta: func() metav1.ObjectMeta {
					m := objMeta("old", 49*time.Hour)
					m.DeletionTimestamp = ptr.To(ago(0))
					return m
				}(),
				Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning},
			},
			cells: []any{"old", "0/1", "Terminating", "0", "2d1h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "node",
			obj: &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: "master-1", CreationTimestamp: ago(50 * 24 * time.Hour), Labels: map[string]string{
					"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "master"}},
				Spec: corev1.NodeSpec{Unschedulable: true},
				Status: corev1.NodeStatus{
					Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
					Addresses:  []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "master-1"}, {Type: corev1.NodeInternalIP, Address: "10.77.0.2"}},
					NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.33.0", OSImage: "Debian 13"},
				},
			},
			columns: []string{"Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"},
			cells:   []any{"master-1", "Ready,SchedulingDisabled", "control-plane,master", "50d", "v1.33.0", "10.77.0.2", "<none>", "Debian 13", "<unknown>", "<unknown>"},
		},
		{
			name:  "node without conditions",
			obj:   &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}},
			cells: []any{"n", "Unknown", "<none>", "<unknown>", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"},
		},
		{
			name: "cluster ip service",
			obj: &corev1.Service{
				ObjectMeta: objMeta("kubernetes", 3*time.Hour+20*time.Minute),
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.1", ClusterIPs: []string{"10.96.0.1"},
					Ports: []corev1.ServicePort{{Port: 443, Protocol: corev1.ProtocolTCP}}},
			},
			columns: []string{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"},
			cells:   []any{"kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP", "3h20m", "<none>"},
		},
		{
			name: "node port service",
			obj: &corev1.Service{
				ObjectMeta: objMeta("web", 30*24*time.Hour),
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.3.4", Selector: map[string]string{"app": "web"},
					Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}, {Port: 53, Protocol: corev1.ProtocolUDP}}},
			},
			cells: []any{"web", "NodePort", "10.96.3.4", "<none>", "80:30080/TCP,53/UDP", "30d", "app=web"},
		},
		{
			name: "pending load balancer",
			obj: &corev1.Service{ObjectMeta: objMeta("lb", time.Second),
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.9"}},
			cells: []any{"lb", "LoadBalancer", "10.96.0.9", "<pending>", "<none>", "1s", "<none>"},
		},
		{
			name: "endpoints",
			obj: &corev1.Endpoints{ObjectMeta: objMeta("web", time.Hour), Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: "10.77.1.1"}, {IP: "10.77.1.2"}, {IP: "10.77.1.3"}, {IP: "10.77.1.4"}},
				Ports:     []corev1.EndpointPort{{Port: 8080}},
			}}},
			columns: []string{"Name", "Endpoints", "Age"},
			cells:   []any{"web", "10.77.1.1:8080,10.77.1.2:8080,10.77.1.3:8080 + 1 more...", "60m"},
		},
		{
			name:    "configmap",
			obj:     &corev1.ConfigMap{ObjectMeta: objMeta("cfg", 2*time.Minute), Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": nil}},
			columns: []string{"Name", "Data", "Age"},
			cells:   []any{"cfg", int64(3), "2m"},
		},
		{
			name:    "secret",
			obj:     &corev1.Secret{ObjectMeta: objMeta("tls", 400*24*time.Hour), Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}},
			columns: []string{"Name", "Type", "Data", "Age"},
			cells:   []any{"tls", "kubernetes.io/tls", int64(2), "400d"},
		},
		{
			name: "customresourcedefinition",
			obj: &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com", CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))},
				Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
					Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", ShortNames: []string{"wd", "wdg"}},
					Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v2", Served: true}, {Name: "v1", Served: true, Storage: true}, {Name: "v0"}}},
				Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}}},
			columns: []string{"Name", "Scope", "Versions", "Created At", "Group", "Kind", "ShortNames", "Established"},
			cells:   []any{"widgets.example.com", "Namespaced", "v1(storage),v2", "2026-01-02T03:04:05Z", "example.com", "Widget", "wd,wdg", true},
		},
		{
			name:    "serviceaccount",
			obj:     &corev1.ServiceAccount{ObjectMeta: objMeta("default", 3*24*time.Hour+4*time.Hour)},
			columns: []string{"Name", "Age"},
			cells:   []any{"default", "3d4h"},
		},
		{
			name: "event",
			obj: &corev1.Event{ObjectMeta: objMeta("web-1.1234", time.Minute),
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-1", FieldPath: "spec.containers{a}"},
				Reason:         "Pulled", Message: " Successfully pulled\n", Type: corev1.EventTypeNormal,
				Source:         corev1.EventSource{Component: "kubelet", Host: "node-a"},
				FirstTimestamp: ago(10 * time.Minute), LastTimestamp: ago(time.Minute), Count: 4},
			columns: []string{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"},
			cells:   []any{"60s", "Normal", "Pulled", "pod/web-1", "spec.containers{a}", "kubelet, node-a", "Successfully pulled", "10m", int64(4), "web-1.1234"},
		},
		{
			name: "lease",
			obj: &coordinationv1.Lease{ObjectMeta: objMeta("master-1", 8*24*time.Hour),
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("master-1_abc")}},
			columns: []string{"Name", "Holder", "Age"},
			cells:   []any{"master-1", "master-1_abc", "8d"},
		},
		{
			name: "deployment",
			obj: &appsv1.Deployment{ObjectMeta: objMeta("web", 7*time.Hour+59*time.Minute),
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To[int32](3),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
						{Name: "nginx", Image: "nginx:1.27"}, {Name: "sidecar", Image: "busybox"}}}},
				},
				Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2}},
			columns: []string{"Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"},
			cells:   []any{"web", "2/3", int64(3), int64(2), "7h59m", "nginx,sidecar", "nginx:1.27,busybox", "app=web"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := toTable(tt.obj, metav1.TableOptions{}, now)
			if err != nil {
				t.Fatal(err)
			}
			if table.Kind != "Table" || table.APIVersion != "meta.k8s.io/v1" {
				t.Errorf("table kind = %s %s", table.APIVersion, table.Kind)
			}
			if tt.columns != nil && !reflect.DeepEqual(columnNames(table), tt.columns) {
				t.Errorf("columns = %q\nwant      %q", columnNames(table), tt.columns)
			}
			if len(table.Rows) != 1 {
				t.Fatalf("%d rows, want 1", len(table.Rows))
			}
			if got := table.Rows[0].Cells; !reflect.DeepEqual(got, tt.cells) {
				t.Errorf("cells = %#v\nwant    %#v", got, tt.cells)
			}
			if len(table.Rows[0].Cells) != len(table.ColumnDefinitions) {
				t.Errorf("%d cells for %d columns", len(table.Rows[0].Cells), len(table.ColumnDefinitions))
			}
			for _, c := range table.ColumnDefinitions {
				if c.Type == "" || c.Description == "" {
					t.Errorf("column %q lacks type or description: %+v", c.Name, c)
				}
			}
			// The table must survive the JSON round trip it takes to kubectl.
			if _, err := json.Marshal(table); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestWideColumnsHaveHigherPriority(t *testing.T) {
	table, err := toTable(&corev1.Pod{}, metav1.TableOptions{}, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range table.ColumnDefinitions {
		wantWide := c.Name == "IP" || c.Name == "Node" || c.Name == "Nominated Node" || c.Name == "Readiness Gates"
		if (c.Priority == 1) != wantWide {
			t.Errorf("column %q priority %d", c.Name, c.Priority)
		}
		if c.Name == "Name" && c.Format != "name" {
			t.Errorf("Name column format = %q, want name", c.Format)
		}
	}
}

func TestList(t *testing.T) {
	list := &corev1.ConfigMapList{
		ListMeta: metav1.ListMeta{ResourceVersion: "77", Continue: "abc", RemainingItemCount: ptr.To[int64](5)},
		Items: []corev1.ConfigMap{
			{ObjectMeta: objMeta("a", time.Hour)},
			{ObjectMeta: objMeta("b", 2*time.Hour), Data: map[string]string{"k": "v"}},
		},
	}
	table, err := toTable(list, metav1.TableOptions{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if table.ResourceVersion != "77" || table.Continue != "abc" || *table.RemainingItemCount != 5 {
		t.Errorf("list meta not carried over: %+v", table.ListMeta)
	}
	want := [][]any{{"a", int64(0), "60m"}, {"b", int64(1), "120m"}}
	if len(table.Rows) != len(want) {
		t.Fatalf("%d rows", len(table.Rows))
	}
	for i, w := range want {
		if !reflect.DeepEqual(table.Rows[i].Cells, w) {
			t.Errorf("row %d = %#v, want %#v", i, table.Rows[i].Cells, w)
		}
	}

	t.Run("empty list keeps columns", func(t *testing.T) {
		table, err := toTable(&appsv1.DeploymentList{}, metav1.TableOptions{}, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(table.Rows) != 0 || len(table.ColumnDefinitions) != 8 {
			t.Errorf("rows %d columns %d", len(table.Rows), len(table.ColumnDefinitions))
		}
		data, _ := json.Marshal(table)
		if !strings.Contains(string(data), `"rows":[]`) {
			t.Errorf("empty rows must encode as [] for kubectl: %s", data)
		}
	})
	t.Run("no headers", func(t *testing.T) {
		table, err := toTable(list, metav1.TableOptions{NoHeaders: true}, now)
		if err != nil {
			t.Fatal(err)
		}
		if table.ColumnDefinitions != nil || len(table.Rows) != 2 {
			t.Errorf("columns %v rows %d", table.ColumnDefinitions, len(table.Rows))
		}
	})
}

func TestIncludeObject(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: objMeta("p", time.Minute)}
	pod.Labels = map[string]string{"app": "x"}
	tests := []struct {
		policy   metav1.IncludeObjectPolicy
		wantKind string // "" means no object
	}{
		{"", "PartialObjectMetadata"},
		{metav1.IncludeMetadata, "PartialObjectMetadata"},
		{metav1.IncludeObject, "Pod"},
		{metav1.IncludeNone, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy), func(t *testing.T) {
			table, err := toTable(pod, metav1.TableOptions{IncludeObject: tt.policy}, now)
			if err != nil {
				t.Fatal(err)
			}
			obj := table.Rows[0].Object.Object
			if tt.wantKind == "" {
				if obj != nil {
					t.Fatalf("object = %T, want none", obj)
				}
				return
			}
			if got := obj.GetObjectKind().GroupVersionKind().Kind; got != tt.wantKind {
				t.Errorf("kind = %q, want %q", got, tt.wantKind)
			}
			switch o := obj.(type) {
			case *metav1.PartialObjectMetadata:
				if o.APIVersion != "meta.k8s.io/v1" || o.Name != "p" || o.Labels["app"] != "x" || o.ResourceVersion != "42" {
					t.Errorf("partial = %+v", o)
				}
			case *corev1.Pod:
				if o.APIVersion != "v1" || o.Name != "p" {
					t.Errorf("pod = %+v", o.TypeMeta)
				}
				if pod.APIVersion != "" {
					t.Errorf("caller's pod was modified")
				}
			default:
				t.Errorf("object type %T", obj)
			}
		})
	}
	if _, err := toTable(pod, metav1.TableOptions{IncludeObject: "Everything"}, now); err == nil {
		t.Error("unknown includeObject accepted")
	}
}

func TestUnstructured(t *testing.T) {
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "default", "creationTimestamp": ago(26 * time.Hour).Format(time.RFC3339), "resourceVersion": "9"},
		"spec":     map[string]any{"size": 3},
	}}
	t.Run("custom resource", func(t *testing.T) {
		table, err := toTable(cr, metav1.TableOptions{}, now)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(columnNames(table), []string{"Name", "Age"}) {
			t.Errorf("columns = %v", columnNames(table))
		}
		if !reflect.DeepEqual(table.Rows[0].Cells, []any{"w1", "26h"}) {
			t.Errorf("cells = %#v", table.Rows[0].Cells)
		}
		if table.ResourceVersion != "9" {
			t.Errorf("resourceVersion = %q", table.ResourceVersion)
		}
	})
	t.Run("custom resource list", func(t *testing.T) {
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList",
			"metadata": map[string]any{"resourceVersion": "10"}}}
		list.Items = []unstructured.Unstructured{*cr, *cr}
		table, err := toTable(list, metav1.TableOptions{IncludeObject: metav1.IncludeObject}, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(table.Rows) != 2 || table.ResourceVersion != "10" {
			t.Fatalf("rows %d rv %q", len(table.Rows), table.ResourceVersion)
		}
		if u, ok := table.Rows[1].Object.Object.(*unstructured.Unstructured); !ok || u.GetKind() != "Widget" {
			t.Errorf("row object = %#v", table.Rows[1].Object.Object)
		}
	})
	t.Run("built-in kind as unstructured", func(t *testing.T) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": "s", "creationTimestamp": ago(time.Minute).Format(time.RFC3339)},
			"spec":     map[string]any{"type": "ClusterIP", "clusterIP": "10.96.0.10", "ports": []any{map[string]any{"port": int64(53), "protocol": "UDP"}}},
		}}
		table, err := toTable(u, metav1.TableOptions{}, now)
		if err != nil {
			t.Fatal(err)
		}
		want := []any{"s", "ClusterIP", "10.96.0.10", "<none>", "53/UDP", "60s", "<none>"}
		if !reflect.DeepEqual(table.Rows[0].Cells, want) {
			t.Errorf("cells = %#v, want %#v", table.Rows[0].Cells, want)
		}
	})
	t.Run("mixed v1 List", func(t *testing.T) {
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
		pod := unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}}}
		list.Items = []unstructured.Unstructured{*cr, pod}
		table, err := toTable(list, metav1.TableOptions{}, now)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(columnNames(table), []string{"Name", "Age"}) || len(table.Rows) != 2 {
			t.Errorf("columns %v rows %d", columnNames(table), len(table.Rows))
		}
		if table.Rows[1].Cells[0] != "p" {
			t.Errorf("row 1 = %v", table.Rows[1].Cells)
		}
	})
}

func TestAge(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{5*time.Minute + 3*time.Second, "5m3s"},
		{3 * time.Hour, "3h"},
		{2 * 24 * time.Hour, "2d"},
		{90 * time.Second, "90s"},
		{-time.Second / 2, "0s"},
	}
	for _, tt := range tests {
		if got := age(ago(tt.d), now); got != tt.want {
			t.Errorf("age(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	if got := age(metav1.Time{}, now); got != "<unknown>" {
		t.Errorf("zero time: %q", got)
	}
}

func TestNil(t *testing.T) {
	if _, err := ToTable(nil, metav1.TableOptions{}); err == nil {
		t.Error("nil object accepted")
	}
	if _, err := ToTable((*corev1.Pod)(nil), metav1.TableOptions{}); err == nil {
		t.Error("nil *Pod accepted")
	}
	if _, err := ToTable(&metav1.Status{}, metav1.TableOptions{}); err == nil {
		t.Error("object without metadata accepted")
	}
}
