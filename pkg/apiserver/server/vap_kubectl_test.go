package server_test

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
)

const vapManifests = `apiVersion: v1
kind: Namespace
metadata:
  name: prod
  labels: {env: prod}
---
apiVersion: v1
kind: Namespace
metadata:
  name: dev
  labels: {env: dev}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: no-forbidden
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["configmaps"]
  validations:
  - expression: "!has(object.metadata.labels) || object.metadata.labels.forbidden != 'true'"
    message: configmaps labelled forbidden=true are not allowed
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: no-forbidden-prod
spec:
  policyName: no-forbidden
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {env: prod}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: few-keys
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  validations:
  - expression: "!has(object.data) || size(object.data) < 3"
    messageExpression: "'too many keys: ' + string(size(object.data))"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: few-keys-dev
spec:
  policyName: few-keys
  validationActions: [Warn]
  matchResources:
    namespaceSelector:
      matchLabels: {env: dev}
`

// TestKubectlValidatingAdmissionPolicy is the case with real kubectl: a policy that
// forbids ConfigMaps labelled forbidden=true, bound to the namespaces labelled env=prod,
// makes `kubectl create` of such a ConfigMap fail in prod with kube-apiserver's 422 and
// message (as kubectl prints it) and succeed in dev; a Warn binding's message reaches
// kubectl as a warning.
func TestKubectlValidatingAdmissionPolicy(t *testing.T) {
	s := servertest.New(t, nil)
	k := newKubectlEnv(t, s.KubeconfigPath())
	contains(t, k.ok("apply", "-f", k.file("vap.yaml", vapManifests)),
		"validatingadmissionpolicy.admissionregistration.k8s.io/no-forbidden created",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/no-forbidden-prod created")

	// The pipeline: a labelled ConfigMap made on the client, created on the server.
	const pipeline = "kubectl create configmap x --from-literal=a=b --dry-run=client -o yaml | " +
		"kubectl label -f - forbidden=true --local -o yaml | kubectl create -n NS -f -"
	const want = `The configmaps "x" is invalid: : ValidatingAdmissionPolicy 'no-forbidden' with binding 'no-forbidden-prod' denied request: configmaps labelled forbidden=true are not allowed`
	// The bindings take effect once the server's informers have them: server-side dry runs
	// show when.
	probe := k.file("probe.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: probe, labels: {forbidden: \"true\"}}\ndata: {a: '1', b: '2', c: '3'}\n")
	k.eventually(func() bool {
		_, errOut, err := k.run("create", "-n", "prod", "--dry-run=server", "-f", probe)
		return err != nil && strings.Contains(errOut, "ValidatingAdmissionPolicy 'no-forbidden'")
	})
	k.eventually(func() bool {
		_, errOut, err := k.run("create", "-n", "dev", "--dry-run=server", "-f", probe)
		return err == nil && strings.Contains(errOut, "ValidatingAdmissionPolicy 'few-keys'")
	})

	out, errOut, err := k.shell(strings.Replace(pipeline, "NS", "prod", 1))
	if err == nil || strings.TrimSpace(errOut) != want {
		t.Fatalf("in prod: err %v\nstdout %s\nstderr %s\nwant stderr %s", err, out, errOut, want)
	}
	out, errOut, err = k.shell(strings.Replace(pipeline, "NS", "dev", 1))
	if err != nil || !strings.Contains(out, "configmap/x created") {
		t.Fatalf("in dev: err %v\nstdout %s\nstderr %s", err, out, errOut)
	}
	k.ok("create", "configmap", "plain", "-n", "prod", "--from-literal=a=b")
	k.fails(strings.Replace(want, `"x"`, `"plain"`, 1), "label", "configmap", "plain", "-n", "prod", "forbidden=true")

	// Warn: admitted, and kubectl prints upstream's warning.
	_, errOut, err = k.run("create", "configmap", "many", "-n", "dev", "--from-literal=a=1", "--from-literal=b=2", "--from-literal=c=3")
	if err != nil || !strings.Contains(errOut, "Warning: Validation failed for ValidatingAdmissionPolicy 'few-keys' with binding 'few-keys-dev': too many keys: 3") {
		t.Fatalf("warn: err %v, stderr %s", err, errOut)
	}
}

// eventually waits until cond holds (30s at most).
func (k *kubectlEnv) eventually(cond func() bool) {
	k.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			k.t.Fatal("condition not met in 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// shell runs a shell pipeline of kubectl commands against the server.
func (k *kubectlEnv) shell(script string) (string, string, error) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	probe := k.cmd(ctx)
	// The script names "kubectl"; the test's release (testenv.Kubectl) runs it.
	script = strings.ReplaceAll(script, "kubectl ", "'"+strings.ReplaceAll(k.bin, "'", `'\''`)+"' ")
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -o pipefail; "+script)
	cmd.Env = probe.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}
