package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const admissionConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  path: podsecurity.yaml
`

const podSecurityConfig = `apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
defaults:
  enforce: baseline
  enforce-version: latest
exemptions:
  namespaces: [exempt]
  runtimeClasses: [sandboxed]
`

// TestPodSecurityConfiguration: --admission-control-config-file's PodSecurityConfiguration
// sets the level of namespaces without labels and exempts namespaces and runtime classes
// (recorded in the audit annotation pod-security.kubernetes.io/exempt).
func TestPodSecurityConfiguration(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "admission.yaml")
	if err := os.WriteFile(file, []byte(admissionConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "podsecurity.yaml"), []byte(podSecurityConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	s := servertest.New(t, func(c *server.Config) { c.AdmissionControlConfigFile = file })
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	for _, ns := range []string{"plain", "exempt"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventuallyOK(t, "default service account", func() error {
			_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
			return err
		})
	}
	privileged := func(name string) *corev1.Pod {
		p := testPod(name)
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		return p
	}
	i := 0
	eventuallyOK(t, "default level baseline", func() error {
		i++
		name := fmt.Sprintf("priv-%d", i)
		_, err := cs.CoreV1().Pods("plain").Create(ctx, privileged(name), metav1.CreateOptions{})
		if err == nil {
			return fmt.Errorf("admitted")
		}
		want := `pods "` + name + `" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("got %v, want %q", err, want)
		}
		return nil
	})
	if _, err := cs.CoreV1().Pods("exempt").Create(ctx, privileged("priv"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("exempt namespace: %v", err)
	}
	// The RuntimeClass plugin admits a pod only with a class that exists.
	if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "sandboxed"}, Handler: "runsc"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventuallyOK(t, "exempt runtime class", func() error {
		sandboxed := privileged("sandboxed")
		sandboxed.Spec.RuntimeClassName = ptr.To("sandboxed")
		_, err := cs.CoreV1().Pods("plain").Create(ctx, sandboxed, metav1.CreateOptions{})
		if err != nil && !strings.Contains(err.Error(), `RuntimeClass "sandboxed" not found`) {
			t.Fatalf("exempt runtime class: %v", err)
		}
		return err
	})

	t.Run("bad configuration", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "admission.yaml")
		if err := os.WriteFile(bad, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  configuration:\n    apiVersion: pod-security.admission.config.k8s.io/v1\n    kind: PodSecurityConfiguration\n    defaults: {enforce: strictest}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := server.DefaultConfig()
		cfg.AdmissionControlConfigFile = bad
		err := cfg.Validate()
		if err == nil {
			t.Fatal("accepted")
		}
		for _, want := range []string{"admission-control-config-file", bad, "plugin PodSecurity", "strictest"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %q", err, want)
			}
		}
	})
}
