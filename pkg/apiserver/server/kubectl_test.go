package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/testenv"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
)

// kubectlEnv runs the tests' kubectl (testenv.Kubectl) against one server, with a home and
// discovery cache of its own.
type kubectlEnv struct {
	t          *testing.T
	bin        string
	kubeconfig string
	dir        string
}

// newKubectlEnv returns a kubectlEnv for kubeconfig; it skips t (fails it in CI) without kubectl.
func newKubectlEnv(t *testing.T, kubeconfig string) *kubectlEnv {
	t.Helper()
	return &kubectlEnv{t: t, bin: testenv.Kubectl(t), kubeconfig: kubeconfig, dir: t.TempDir()}
}

func (k *kubectlEnv) cmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.kubeconfig, "HOME="+k.dir, "KUBECACHEDIR="+filepath.Join(k.dir, "cache"))
	return cmd
}

func (k *kubectlEnv) run(args ...string) (string, string, error) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := k.cmd(ctx, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// ok runs kubectl and fails the test unless it succeeds; it returns stdout.
func (k *kubectlEnv) ok(args ...string) string {
	k.t.Helper()
	out, errOut, err := k.run(args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// fails runs kubectl, expects failure and that stderr contains want.
func (k *kubectlEnv) fails(want string, args ...string) {
	k.t.Helper()
	out, errOut, err := k.run(args...)
	if err == nil {
		k.t.Fatalf("kubectl %s succeeded, want failure with %q\nstdout: %s", strings.Join(args, " "), want, out)
	}
	if !strings.Contains(errOut, want) {
		k.t.Fatalf("kubectl %s: stderr %q does not contain %q", strings.Join(args, " "), errOut, want)
	}
}

func (k *kubectlEnv) file(name, content string) string {
	p := filepath.Join(k.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		k.t.Fatal(err)
	}
	return p
}

func contains(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Fatalf("output does not contain %q:\n%s", w, out)
		}
	}
}

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: IMAGE
        ports:
        - containerPort: 80
      - name: sidecar
        image: busybox:1.36
`

func TestKubectlSession(t *testing.T) {
	s := servertest.New(t, nil)
	k := newKubectlEnv(t, s.KubeconfigPath())

	t.Run("discovery", func(t *testing.T) {
		out := k.ok("api-resources")
		contains(t, out, "deployments", "deploy", "apps/v1", "pods", "po", "namespaces", "leases", "coordination.k8s.io/v1")
		out = k.ok("api-versions")
		contains(t, out, "apps/v1", "coordination.k8s.io/v1", "v1")
		out = k.ok("version", "-o", "json")
		contains(t, out, `"minor": "37"`)
	})

	k.ok("create", "namespace", "demo")
	dep := k.file("dep.yaml", strings.Replace(deploymentYAML, "IMAGE", "nginx:1.27", 1))

	t.Run("create and get", func(t *testing.T) {
		contains(t, k.ok("create", "-f", dep), "deployment.apps/web created")
		out := k.ok("-n", "demo", "get", "deployments")
		contains(t, out, "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "web")
		out = k.ok("-n", "demo", "get", "deployment", "web", "-o", "yaml")
		contains(t, out, "kind: Deployment", "replicas: 2", "image: nginx:1.27", "resourceVersion:")
		var obj map[string]any
		if err := json.Unmarshal([]byte(k.ok("-n", "demo", "get", "deployment", "web", "-o", "json")), &obj); err != nil {
			t.Fatal(err)
		}
		if obj["kind"] != "Deployment" {
			t.Fatalf("-o json kind = %v", obj["kind"])
		}
		k.fails(`deployments.apps "web" already exists`, "create", "-f", dep)
		k.fails(`deployments.apps "missing" not found`, "-n", "demo", "get", "deployment", "missing")
	})

	t.Run("apply twice", func(t *testing.T) {
		contains(t, k.ok("apply", "-f", dep), "deployment.apps/web")
		changed := k.file("dep2.yaml", strings.Replace(deploymentYAML, "IMAGE", "nginx:1.28", 1))
		contains(t, k.ok("apply", "-f", changed), "deployment.apps/web configured")
		out := k.ok("-n", "demo", "get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[*].image}")
		if out != "nginx:1.28 busybox:1.36" {
			t.Fatalf("images after apply: %q", out)
		}
		// 1 at create; the first apply adds the last-applied annotation, and a deployment's
		// annotation change bumps its generation as upstream; the second changes the image.
		if gen := k.ok("-n", "demo", "get", "deployment", "web", "-o", "jsonpath={.metadata.generation}"); gen != "3" {
			t.Fatalf("generation after create, apply, apply with a new image: %s, want 3", gen)
		}
	})

	t.Run("patch", func(t *testing.T) {
		k.ok("-n", "demo", "patch", "deployment", "web", "--type", "merge", "-p", `{"spec":{"replicas":3}}`)
		k.ok("-n", "demo", "patch", "deployment", "web", "--type", "json", "-p", `[{"op":"add","path":"/metadata/labels","value":{"patched":"json"}}]`)
		k.ok("-n", "demo", "patch", "deployment", "web", "--type", "strategic", "-p", `{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox:1.37"}]}}}}`)
		out := k.ok("-n", "demo", "get", "deployment", "web", "-o", "jsonpath={.spec.replicas} {.metadata.labels.patched} {.spec.template.spec.containers[*].image}")
		if out != "3 json nginx:1.28 busybox:1.37" {
			t.Fatalf("after patches: %q", out)
		}
	})

	t.Run("label annotate scale", func(t *testing.T) {
		k.ok("-n", "demo", "label", "deployment", "web", "tier=front")
		k.ok("-n", "demo", "annotate", "deployment", "web", "owner=team-a")
		contains(t, k.ok("-n", "demo", "scale", "deployment", "web", "--replicas=5"), "scaled")
		out := k.ok("-n", "demo", "get", "deployment", "web", "-o", "jsonpath={.metadata.labels.tier} {.metadata.annotations.owner} {.spec.replicas}")
		if out != "front team-a 5" {
			t.Fatalf("label/annotate/scale: %q", out)
		}
		contains(t, k.ok("-n", "demo", "get", "deployments", "-l", "tier=front"), "web")
	})

	t.Run("watch", func(t *testing.T) {
		k.ok("-n", "demo", "create", "configmap", "first")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := k.cmd(ctx, "-n", "demo", "get", "configmaps", "-w")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// The existing configmap is listed first; then a new one must arrive as an event.
		created := false
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("kubectl get -w ended")
				}
				if strings.HasPrefix(l, "first") && !created {
					created = true
					k.ok("-n", "demo", "create", "configmap", "watched", "--from-literal=a=b")
				}
				if strings.HasPrefix(l, "watched") {
					return
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no watch event (listed first: %v)", created)
			}
		}
	})

	t.Run("explain", func(t *testing.T) {
		contains(t, k.ok("explain", "pod.spec.containers"), "KIND:", "Pod", "containers")
		contains(t, k.ok("explain", "deployment.spec.replicas"), "replicas")
	})

	t.Run("delete", func(t *testing.T) {
		contains(t, k.ok("-n", "demo", "delete", "configmap", "watched"), "deleted")
		k.fails("not found", "-n", "demo", "get", "configmap", "watched")
	})

	t.Run("namespace delete removes contents", func(t *testing.T) {
		k.ok("-n", "demo", "create", "configmap", "c1", "--from-literal=a=b")
		k.ok("-n", "demo", "create", "secret", "generic", "s1", "--from-literal=a=b")
		k.ok("delete", "namespace", "demo", "--wait=true")
		k.fails(`namespaces "demo" not found`, "get", "namespace", "demo")
		out := k.ok("get", "deployments,configmaps,secrets", "-A", "-o", "name")
		for _, gone := range []string{"web", "c1", "s1"} {
			if strings.Contains(out, "/"+gone) {
				t.Fatalf("%s survived its namespace:\n%s", gone, out)
			}
		}
		k.fails(`namespaces "demo" not found`, "-n", "demo", "create", "configmap", "late")
	})
}
