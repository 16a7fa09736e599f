package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/testenv"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubectlServer serves the OpenAPI documents plus the least kubectl needs
// around them: /version (picks the kubectl minor through the dispatcher),
// legacy discovery derived from the same Resources, and one existing
// Deployment that `kubectl apply` patches. It records PATCH requests.
type kubectlServer struct {
	*httptest.Server
	bin     string // the tests' kubectl (testenv.Kubectl)
	mu      sync.Mutex
	patches []recordedPatch
}

type recordedPatch struct {
	path, contentType, query string
	body                     []byte
}

const existingDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","resourceVersion":"5","uid":"u1",
"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\",\"namespace\":\"default\"},\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"image\":\"nginx:1\",\"name\":\"a\"},{\"image\":\"busybox\",\"name\":\"b\"}]}}}}\n"}},
"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"image":"nginx:1","name":"a","imagePullPolicy":"IfNotPresent"},{"image":"busybox","name":"b"}]}}}}`

func newKubectlServer(t *testing.T, minor string, rs []Resource) *kubectlServer {
	t.Helper()
	spec, err := New(rs)
	if err != nil {
		t.Fatal(err)
	}
	lists := map[string]*metav1.APIResourceList{}
	var groups []string
	for _, r := range rs {
		gv := r.GroupVersion().String()
		if lists[gv] == nil {
			lists[gv] = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
			if r.Group != "" {
				groups = append(groups, gv)
			}
		}
		lists[gv].APIResources = append(lists[gv].APIResources, metav1.APIResource{
			Name: r.Plural, SingularName: strings.ToLower(r.Kind), Namespaced: r.Namespaced, Kind: r.Kind, Verbs: r.Verbs})
	}
	ks := &kubectlServer{bin: testenv.Kubectl(t)}
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.Handle("/openapi/", spec.Handler())
	mux.HandleFunc("/version", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]string{"major": "1", "minor": minor, "gitVersion": "v1." + minor + ".0"})
	})
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, r *http.Request) {
		gl := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for _, gv := range groups {
			g, v, _ := strings.Cut(gv, "/")
			d := metav1.GroupVersionForDiscovery{GroupVersion: gv, Version: v}
			gl.Groups = append(gl.Groups, metav1.APIGroup{Name: g, Versions: []metav1.GroupVersionForDiscovery{d}, PreferredVersion: d})
		}
		writeJSON(w, gl)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimSuffix(r.URL.Path, "/")
		if l := lists[strings.TrimPrefix(strings.TrimPrefix(path, "/api/"), "/apis/")]; l != nil && (path == "/api/v1" || strings.HasPrefix(path, "/apis/")) {
			writeJSON(w, l)
			return
		}
		if path == "/apis/apps/v1/namespaces/default/deployments/web" {
			if r.Method == http.MethodPatch {
				body, _ := io.ReadAll(r.Body)
				ks.mu.Lock()
				ks.patches = append(ks.patches, recordedPatch{path, r.Header.Get("Content-Type"), r.URL.RawQuery, body})
				ks.mu.Unlock()
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, existingDeployment)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"%s not found"}`, path)
	})
	ks.Server = httptest.NewServer(mux)
	t.Cleanup(ks.Close)
	return ks
}

func (ks *kubectlServer) kubectl(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	home := t.TempDir()
	args = append([]string{"--server=" + ks.URL, "--cache-dir=" + filepath.Join(home, "cache"), "--namespace=default"}, args...)
	cmd := exec.CommandContext(ctx, ks.bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG="+filepath.Join(home, "none"))
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

const podYAML = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: a
    image: nginx
    ports: [{containerPort: 80}]
    resources: {limits: {cpu: 100m}}
`

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: a, image: "nginx:2"}
      - {name: b, image: busybox}
`

// TestKubectl runs the tests' kubectl (testenv.Kubectl: the gcloud SDK's dispatcher picks
// 1.27, 1.30 and 1.33 in turn by the server's minor; any other kubectl runs once against a
// server of its own minor) against the documents: explain from v3 and from v2, create
// with default (strict) validation, which needs fieldValidation in the v3
// document, and apply, which fetches the documents and sends a strategic
// merge patch keyed by container name. kubectl may take that patch's
// metadata from OpenAPI or from its compiled-in types without saying which;
// TestStrategicMergeMetadata covers the OpenAPI lookups directly.
func TestKubectl(t *testing.T) {
	minors := []string{"27", "30", "33"}
	if minor, dispatcher := testenv.KubectlMinor(t, testenv.Kubectl(t)); !dispatcher {
		minors = []string{strconv.Itoa(minor)}
	}
	rs := testResources()
	rs[len(rs)-1].Schema = map[string]any{"type": "object", "properties": map[string]any{
		"spec": map[string]any{"type": "object", "properties": map[string]any{
			"size": map[string]any{"type": "integer", "description": "Size of the widget in furlongs."}}}}}

	for _, minor := range minors {
		t.Run("1."+minor, func(t *testing.T) {
			ks := newKubectlServer(t, minor, rs)

			out, errOut, err := ks.kubectl(t, "", "version", "-o", "json")
			if err != nil {
				t.Fatalf("kubectl version: %v\n%s", err, errOut)
			}
			if !strings.Contains(out, `"minor": "`+minor+`"`) {
				t.Fatalf("dispatcher did not pick kubectl 1.%s:\n%s", minor, out)
			}

			explain := []struct {
				args []string
				want []string
			}{
				{[]string{"explain", "pod.spec.containers"}, []string{"FIELD: containers <[]Container>", "List of containers belonging to the pod", "imagePullPolicy\t<string>"}},
				{[]string{"explain", "deployment.spec.replicas"}, []string{"GROUP:      apps", "Number of desired pods"}},
				{[]string{"explain", "widgets.spec.size"}, []string{"Size of the widget in furlongs."}},
				{[]string{"explain", "pod.spec.containers.ports", "--output=plaintext-openapiv2"}, []string{"ContainerPort represents a network port"}},
			}
			for _, tt := range explain {
				out, errOut, err := ks.kubectl(t, "", tt.args...)
				if err != nil {
					t.Errorf("kubectl %s: %v\n%s", strings.Join(tt.args, " "), err, errOut)
					continue
				}
				for _, w := range tt.want {
					if !strings.Contains(out, w) {
						t.Errorf("kubectl %s: output lacks %q:\n%s", strings.Join(tt.args, " "), w, out)
					}
				}
			}

			// Default validation (strict): kubectl must find fieldValidation
			// in the v3 document and leave validation to the server, without
			// falling back to client-side validation.
			out, errOut, err = ks.kubectl(t, podYAML, "create", "-f", "-", "--dry-run=client", "-o", "name")
			if err != nil || strings.TrimSpace(out) != "pod/web" {
				t.Errorf("kubectl create: %v %q\n%s", err, out, errOut)
			}

			out, errOut, err = ks.kubectl(t, deploymentYAML, "apply", "-f", "-", "--dry-run=server")
			if err != nil {
				t.Fatalf("kubectl apply: %v\n%s%s", err, out, errOut)
			}
			if strings.Contains(errOut, "openapi") {
				t.Errorf("kubectl apply complained about OpenAPI:\n%s", errOut)
			}
			ks.mu.Lock()
			patches := ks.patches
			ks.mu.Unlock()
			if len(patches) != 1 {
				t.Fatalf("server saw %d PATCH requests, want 1", len(patches))
			}
			p := patches[0]
			if p.contentType != "application/strategic-merge-patch+json" {
				t.Errorf("patch content type = %q", p.contentType)
			}
			if !strings.Contains(p.query, "fieldValidation=Strict") || !strings.Contains(p.query, "dryRun=All") {
				t.Errorf("patch query = %q, want fieldValidation=Strict and dryRun=All", p.query)
			}
			if !strings.Contains(string(p.body), `"$setElementOrder/containers":[{"name":"a"},{"name":"b"}]`) ||
				!strings.Contains(string(p.body), `{"image":"nginx:2","name":"a"}`) {
				t.Errorf("patch is not a strategic merge keyed by container name:\n%s", p.body)
			}
		})
	}
}
