package server_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/certs"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// userConfig returns a kubeconfig file and a client config for a client certificate with
// CN=user and O=groups, signed by s's CA.
func userConfig(t *testing.T, s *server.Server, user string, groups ...string) (string, *rest.Config) {
	t.Helper()
	certPEM, keyPEM, err := s.Certs().IssueClient(user, groups, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: s.URL(), CertificateAuthorityData: s.Certs().CAPEM}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), strings.ReplaceAll(user, ":", "_")+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return path, rc
}

// eventuallyOK polls cond until it returns nil or 10 seconds pass (the authorizer's caches
// follow etcd by watch, so a new binding takes effect a moment after it is written).
func eventuallyOK(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustCreate[T any](t *testing.T, fn func(context.Context, T, metav1.CreateOptions) (T, error), obj T) T {
	t.Helper()
	out, err := fn(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func wantForbidden(t *testing.T, err error, msg string) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Fatalf("got %v, want 403 Forbidden", err)
	}
	if msg != "" && err.Error() != msg {
		t.Fatalf("message\n %q\nwant\n %q", err.Error(), msg)
	}
}

func TestAuthorizationRBAC(t *testing.T) {
	s := servertest.New(t, nil)
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	mustCreate(t, admin.CoreV1().Namespaces().Create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})

	aliceKC, aliceRC := userConfig(t, s, "alice")
	alice := kubernetes.NewForConfigOrDie(aliceRC)
	ka := newKubectlEnv(t, aliceKC)
	kadmin := newKubectlEnv(t, s.KubeconfigPath())

	t.Run("no bindings", func(t *testing.T) {
		_, err := alice.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		wantForbidden(t, err, `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"`)
		_, err = alice.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		wantForbidden(t, err, `nodes "n1" is forbidden: User "alice" cannot get resource "nodes" in API group "" at the cluster scope`)
		ka.fails(`Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"`, "get", "pods", "-n", "default")
		// What every authenticated user may do (system:basic-user, system:discovery).
		contains(t, ka.ok("api-resources"), "pods", "roles")
	})

	t.Run("rolebinding", func(t *testing.T) {
		mustCreate(t, admin.RbacV1().Roles("team").Create, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods"}}}})
		mustCreate(t, admin.RbacV1().RoleBindings("team").Create, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-reads"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}})
		eventuallyOK(t, "alice lists pods in team", func() error {
			_, err := alice.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
			return err
		})
		_, err := alice.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		wantForbidden(t, err, "")
		err = alice.CoreV1().Pods("team").Delete(ctx, "x", metav1.DeleteOptions{})
		wantForbidden(t, err, `pods "x" is forbidden: User "alice" cannot delete resource "pods" in API group "" in the namespace "team"`)
		out := kadmin.ok("get", "rolebindings", "-n", "team", "-o", "wide")
		contains(t, out, "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS", "alice-reads", "Role/pod-reader", "alice")
		contains(t, kadmin.ok("get", "roles", "-n", "team"), "CREATED AT", "pod-reader")
	})

	t.Run("can-i", func(t *testing.T) {
		if out := ka.ok("auth", "can-i", "list", "pods", "-n", "team"); strings.TrimSpace(out) != "yes" {
			t.Fatalf("can-i list pods in team: %q", out)
		}
		out, _, err := ka.run("auth", "can-i", "list", "pods", "-n", "default")
		if err == nil || strings.TrimSpace(out) != "no" {
			t.Fatalf("can-i list pods in default: %q %v", out, err)
		}
		out = ka.ok("auth", "can-i", "--list", "-n", "team")
		contains(t, out, "Resources", "Non-Resource URLs", "pods", "[get list watch]", "selfsubjectaccessreviews.authorization.k8s.io", "/version")
	})

	t.Run("clusterrolebinding and aggregation", func(t *testing.T) {
		_, bobRC := userConfig(t, s, "bob", "readers")
		bob := kubernetes.NewForConfigOrDie(bobRC)
		mustCreate(t, admin.RbacV1().ClusterRoleBindings().Create, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "readers-view"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{{Kind: "Group", Name: "readers"}}})
		eventuallyOK(t, "bob lists configmaps everywhere", func() error {
			_, err := bob.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
			return err
		})
		_, err := bob.CoreV1().Secrets("team").List(ctx, metav1.ListOptions{})
		wantForbidden(t, err, `secrets is forbidden: User "bob" cannot list resource "secrets" in API group "" in the namespace "team"`)
		// A ClusterRole labelled aggregate-to-view adds its rules to view, and so to bob.
		mustCreate(t, admin.RbacV1().ClusterRoles().Create, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "secret-viewer", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
			Rules:      []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}})
		eventuallyOK(t, "view aggregates secret-viewer", func() error {
			_, err := bob.CoreV1().Secrets("team").List(ctx, metav1.ListOptions{})
			return err
		})
		for _, name := range []string{"view", "edit", "admin"} {
			cr, err := admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, r := range cr.Rules {
				found = found || (len(r.Resources) == 1 && r.Resources[0] == "secrets" && len(r.Verbs) == 1 && r.Verbs[0] == "list")
			}
			if name == "view" && !found {
				t.Fatalf("view does not hold secret-viewer's rule: %v", cr.Rules)
			}
		}
		if err := admin.RbacV1().ClusterRoles().Delete(ctx, "secret-viewer", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventuallyOK(t, "view drops secret-viewer", func() error {
			_, err := bob.CoreV1().Secrets("team").List(ctx, metav1.ListOptions{})
			if apierrors.IsForbidden(err) {
				return nil
			}
			return err
		})
	})

	t.Run("escalation", func(t *testing.T) {
		_, carolRC := userConfig(t, s, "carol")
		carol := kubernetes.NewForConfigOrDie(carolRC)
		mustCreate(t, admin.RbacV1().Roles("team").Create, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "role-writer"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"create", "update", "get"}, APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"}}}})
		mustCreate(t, admin.RbacV1().RoleBindings("team").Create, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "carol-writes"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "role-writer"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "carol"}}})
		secretsRole := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "secret-reader"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}}
		var err error
		eventuallyOK(t, "carol's create reaches the escalation check", func() error {
			_, err = carol.RbacV1().Roles("team").Create(ctx, secretsRole, metav1.CreateOptions{})
			if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "attempting to grant") {
				return nil
			}
			return err
		})
		want := `roles.rbac.authorization.k8s.io "secret-reader" is forbidden: user "carol" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}`
		if err.Error() != want {
			t.Fatalf("escalation message\n %q\nwant\n %q", err.Error(), want)
		}
		// A role carol's rules cover is fine.
		mustCreate(t, carol.RbacV1().Roles("team").Create, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "role-getter"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles"}}}})
		// Binding herself to the admin ClusterRole is an escalation too.
		_, err = carol.RbacV1().RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "carol-admin"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "carol"}}}, metav1.CreateOptions{})
		wantForbidden(t, err, "")
		if !strings.Contains(err.Error(), `rolebindings.rbac.authorization.k8s.io "carol-admin" is forbidden: user "carol"`) {
			t.Fatalf("bind message: %v", err)
		}
		// With the escalate verb on roles (and bind on clusterroles), both are allowed.
		mustCreate(t, admin.RbacV1().Roles("team").Create, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "escalator"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"escalate", "bind"}, APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "clusterroles"}}}})
		mustCreate(t, admin.RbacV1().RoleBindings("team").Create, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "carol-escalates"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "escalator"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "carol"}}})
		eventuallyOK(t, "carol escalates", func() error {
			_, err := carol.RbacV1().Roles("team").Create(ctx, secretsRole, metav1.CreateOptions{})
			return err
		})
		mustCreate(t, carol.RbacV1().RoleBindings("team").Create, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "carol-admin"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "carol"}}})
	})

	t.Run("impersonation", func(t *testing.T) {
		ka.fails(`Error from server (Forbidden): users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`,
			"get", "pods", "-n", "team", "--as", "bob")
		// The admin may impersonate anyone, and then is that user.
		kadmin.fails(`pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"`, "get", "pods", "-n", "default", "--as", "alice")
		kadmin.ok("get", "pods", "-n", "team", "--as", "alice")
		mustCreate(t, admin.RbacV1().ClusterRoles().Create, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "impersonate-readers"},
			Rules: []rbacv1.PolicyRule{
				{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"users"}, ResourceNames: []string{"bob"}},
				{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"groups"}, ResourceNames: []string{"readers"}},
			}})
		mustCreate(t, admin.RbacV1().ClusterRoleBindings().Create, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-impersonates"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "impersonate-readers"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}})
		eventuallyOK(t, "alice acts as bob in readers", func() error {
			_, stderr, err := ka.run("get", "configmaps", "-A", "--as", "bob", "--as-group", "readers")
			if err != nil {
				return &kubectlError{stderr}
			}
			return nil
		})
		ka.fails(`groups "system:masters" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope`,
			"get", "pods", "--as", "bob", "--as-group", "system:masters")
		ka.fails(`uids.authentication.k8s.io "1234" is forbidden: User "alice" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope`,
			"get", "configmaps", "--as", "bob", "--as-uid", "1234")
		// Groups without a user are a bad request.
		req, _ := http.NewRequest("GET", s.URL()+"/api/v1/namespaces/team/pods", nil)
		req.Header.Set("Impersonate-Group", "readers")
		resp := doRaw(t, aliceRC, req)
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("group without user: %d", resp.StatusCode)
		}
	})

	t.Run("access reviews", func(t *testing.T) {
		sar := func(ns string) *authorizationv1.SubjectAccessReview {
			return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "pods"}}}
		}
		got, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar("team"), metav1.CreateOptions{})
		if err != nil || !got.Status.Allowed {
			t.Fatalf("SAR team: %+v %v", got.Status, err)
		}
		if want := `RBAC: allowed by RoleBinding "alice-reads/team" of Role "pod-reader" to User "alice"`; got.Status.Reason != want {
			t.Fatalf("SAR team reason %q, want upstream's %q", got.Status.Reason, want)
		}
		got, err = admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar("default"), metav1.CreateOptions{})
		if err != nil || got.Status.Allowed || got.Status.Denied {
			t.Fatalf("SAR default: %+v %v", got.Status, err)
		}
		_, err = admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice"}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified") {
			t.Fatalf("SAR without attributes: %v", err)
		}
		// alice may not ask about others, but may ask about herself.
		_, err = alice.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar("team"), metav1.CreateOptions{})
		wantForbidden(t, err, `subjectaccessreviews.authorization.k8s.io is forbidden: User "alice" cannot create resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope`)
		self, err := alice.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}}}, metav1.CreateOptions{})
		if err != nil || !self.Status.Allowed {
			t.Fatalf("SSAR /healthz: %+v %v", self, err)
		}
		// /apis is only in system:discovery (/healthz is in system:public-info-viewer too).
		self, err = alice.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/apis", Verb: "get"}}}, metav1.CreateOptions{})
		if want := `RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"`; err != nil || self.Status.Reason != want {
			t.Fatalf("SSAR /apis reason %q (%v), want upstream's %q", self.Status.Reason, err, want)
		}
		local, err := admin.AuthorizationV1().LocalSubjectAccessReviews("team").Create(ctx, &authorizationv1.LocalSubjectAccessReview{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team"},
			Spec:       authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "team", Verb: "watch", Resource: "pods"}}}, metav1.CreateOptions{})
		if err != nil || !local.Status.Allowed {
			t.Fatalf("LSAR: %+v %v", local, err)
		}
		_, err = admin.AuthorizationV1().LocalSubjectAccessReviews("team").Create(ctx, &authorizationv1.LocalSubjectAccessReview{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team"},
			Spec:       authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "watch", Resource: "pods"}}}, metav1.CreateOptions{})
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "spec.resourceAttributes.namespace must match namespace: team") {
			t.Fatalf("LSAR in another namespace: %v", err)
		}
	})

	t.Run("metrics and public info", func(t *testing.T) {
		req, _ := http.NewRequest("GET", s.URL()+"/metrics", nil)
		resp := doRaw(t, aliceRC, req)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `forbidden: User \"alice\" cannot get path \"/metrics\"`) {
			t.Fatalf("alice /metrics: %d %s", resp.StatusCode, body)
		}
		_, promRC := userConfig(t, s, "prometheus", "system:monitoring")
		resp = doRaw(t, promRC, req)
		body, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "# TYPE") {
			t.Fatalf("system:monitoring /metrics: %d %.200s", resp.StatusCode, body)
		}
		// --profiling (on by default, as upstream): cluster-admin only.
		req, _ = http.NewRequest("GET", s.URL()+"/debug/pprof/goroutine?debug=1", nil)
		if resp := doRaw(t, aliceRC, req); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("alice /debug/pprof/goroutine: %d", resp.StatusCode)
		}
		resp = doRaw(t, servertest.RestConfig(t, s), req)
		body, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile: total") {
			t.Fatalf("admin /debug/pprof/goroutine: %d %.200s", resp.StatusCode, body)
		}
		anon := rest.AnonymousClientConfig(aliceRC)
		for _, p := range []string{"/healthz", "/livez", "/readyz", "/version"} {
			req, _ := http.NewRequest("GET", s.URL()+p, nil)
			if resp := doRaw(t, anon, req); resp.StatusCode != http.StatusOK {
				t.Fatalf("anonymous %s: %d", p, resp.StatusCode)
			}
		}
	})
}

// TestProfilingOff: --profiling=false serves no /debug/pprof/, even to cluster-admin.
func TestProfilingOff(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) { c.Profiling = false })
	req, _ := http.NewRequest("GET", s.URL()+"/debug/pprof/", nil)
	if resp := doRaw(t, servertest.RestConfig(t, s), req); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("admin /debug/pprof/ with profiling off: %d, want 404", resp.StatusCode)
	}
}

type kubectlError struct{ stderr string }

func (e *kubectlError) Error() string { return e.stderr }

func doRaw(t *testing.T, rc *rest.Config, req *http.Request) *http.Response {
	t.Helper()
	rt, err := rest.TransportFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: rt, Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestNodeAuthorizer: a kubelet reads what its pods reference and writes its own Node,
// Lease and pods' status, nothing of other nodes.
func TestNodeAuthorizer(t *testing.T) {
	s := servertest.New(t, nil)
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	_, n1RC := userConfig(t, s, "system:node:n1", "system:nodes")
	n1 := kubernetes.NewForConfigOrDie(n1RC)
	for _, name := range []string{"s1", "s2"} {
		mustCreate(t, admin.CoreV1().Secrets("default").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	mustCreate(t, admin.CoreV1().ConfigMaps("default").Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c1"}})
	for _, name := range []string{"n1", "n2"} {
		mustCreate(t, admin.CoreV1().Nodes().Create, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	mustCreate(t, admin.CoreV1().Pods("default").Create, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1"}, Spec: corev1.PodSpec{
		NodeName:   "n1",
		Containers: []corev1.Container{{Name: "c", Image: "busybox", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c1"}}}}}},
		Volumes:    []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s1"}}}},
	}})
	mustCreate(t, admin.CoreV1().Pods("default").Create, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p2"}, Spec: corev1.PodSpec{
		NodeName: "n2", Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s2"}}}},
	}})
	eventuallyOK(t, "n1 reads its pod's secret", func() error {
		_, err := n1.CoreV1().Secrets("default").Get(ctx, "s1", metav1.GetOptions{})
		return err
	})
	if _, err := n1.CoreV1().ConfigMaps("default").Get(ctx, "c1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := n1.CoreV1().Secrets("default").Get(ctx, "s2", metav1.GetOptions{})
	wantForbidden(t, err, `secrets "s2" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'n1' and this object`)
	_, err = n1.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	wantForbidden(t, err, "")

	// Own node and lease: yes; another node: no.
	if _, err := n1.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = n1.CoreV1().Nodes().Patch(ctx, "n2", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{})
	wantForbidden(t, err, "")
	// Reads: its own Node only, and pods only with its spec.nodeName field selector (upstream's
	// AuthorizeNodeWithSelectors).
	_, err = n1.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	wantForbidden(t, err, `nodes is forbidden: User "system:node:n1" cannot list resource "nodes" in API group "" at the cluster scope: node 'n1' cannot read all nodes, only its own Node object`)
	_, err = n1.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
	wantForbidden(t, err, "")
	if _, err := n1.CoreV1().Nodes().List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=n1"}); err != nil {
		t.Fatalf("a node lists its own Node by name: %v", err)
	}
	_, err = n1.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	wantForbidden(t, err, `pods is forbidden: User "system:node:n1" cannot list resource "pods" in API group "" at the cluster scope: can only list/watch pods with spec.nodeName field selector`)
	_, err = n1.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n2"})
	wantForbidden(t, err, "")
	if _, err := n1.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1"}); err != nil {
		t.Fatalf("a node lists its own pods: %v", err)
	}
	_, err = n1.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	wantForbidden(t, err, `leases.coordination.k8s.io is forbidden: User "system:node:n1" cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "default": can only access leases in the "kube-node-lease" system namespace`)
	mustCreate(t, n1.CoordinationV1().Leases("kube-node-lease").Create, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	_, err = n1.CoordinationV1().Leases("kube-node-lease").Update(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}, metav1.UpdateOptions{})
	wantForbidden(t, err, "")
	// Its pods' status: yes; another node's pod: no.
	if _, err := n1.CoreV1().Pods("default").Patch(ctx, "p1", types.MergePatchType, []byte(`{"status":{"message":"hi"}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	_, err = n1.CoreV1().Pods("default").Patch(ctx, "p2", types.MergePatchType, []byte(`{"status":{"message":"hi"}}`), metav1.PatchOptions{}, "status")
	wantForbidden(t, err, "")
	// Deleting the pod removes the relationship.
	if err := admin.CoreV1().Pods("default").Delete(ctx, "p1", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	eventuallyOK(t, "n1 loses s1", func() error {
		_, err := n1.CoreV1().Secrets("default").Get(ctx, "s1", metav1.GetOptions{})
		if apierrors.IsForbidden(err) {
			return nil
		}
		return err
	})
}

// TestAuthorizationTwoServers: a binding written through one apiserver takes effect on
// another that shares its etcd.
func TestAuthorizationTwoServers(t *testing.T) {
	s1 := servertest.New(t, nil)
	cfg, err := servertest.Config(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg.EtcdServers = []string{s1.EtcdClientURL()}
	cfg.CertDir = s1.Certs().Dir
	// s1's member requires the etcd client certificate s1 generated.
	cfg.EtcdCAFile = filepath.Join(cfg.CertDir, certs.EtcdCACertFile)
	cfg.EtcdCertFile = filepath.Join(cfg.CertDir, certs.EtcdClientCertFile)
	cfg.EtcdKeyFile = filepath.Join(cfg.CertDir, certs.EtcdClientKeyFile)
	cfg.Kubeconfig = "-"
	s2, err := servertest.Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s2.Shutdown() })
	ctx := context.Background()
	admin1 := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s1))
	_, daveRC := userConfig(t, s2, "dave")
	dave2 := kubernetes.NewForConfigOrDie(daveRC)
	_, err = dave2.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	wantForbidden(t, err, `namespaces is forbidden: User "dave" cannot list resource "namespaces" in API group "" at the cluster scope`)
	mustCreate(t, admin1.RbacV1().ClusterRoleBindings().Create, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dave-admin"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "dave"}}})
	eventuallyOK(t, "dave lists namespaces on the other apiserver", func() error {
		_, err := dave2.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		return err
	})
	if err := admin1.RbacV1().ClusterRoleBindings().Delete(ctx, "dave-admin", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventuallyOK(t, "dave loses it on the other apiserver", func() error {
		_, err := dave2.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if apierrors.IsForbidden(err) {
			return nil
		}
		return err
	})
}

// TestRBACValidation: the RBAC kinds are validated as upstream's (422 with field paths),
// and a binding's roleRef cannot change.
func TestRBACValidation(t *testing.T) {
	s := servertest.New(t, nil)
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	invalid := func(err error, fields ...string) {
		t.Helper()
		if !apierrors.IsInvalid(err) {
			t.Fatalf("got %v, want 422 Invalid", err)
		}
		st := err.(apierrors.APIStatus).Status()
		var got []string
		for _, c := range st.Details.Causes {
			got = append(got, c.Field)
		}
		if strings.Join(got, ",") != strings.Join(fields, ",") {
			t.Fatalf("causes %q, want %q (%v)", got, fields, err)
		}
	}
	_, err := admin.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Rules: []rbacv1.PolicyRule{
		{Resources: []string{"pods"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}},
	}}, metav1.CreateOptions{})
	invalid(err, "rules[0].verbs", "rules[0].apiGroups", "rules[1].nonResourceURLs")
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "c"}, AggregationRule: &rbacv1.AggregationRule{}}, metav1.CreateOptions{})
	invalid(err, "aggregationRule.clusterRoleSelectors")
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "sa"}, {Kind: "Robot", Name: "r2"}}}, metav1.CreateOptions{})
	invalid(err, "roleRef.kind", "subjects[0].namespace", "subjects[1].kind")
	if !strings.Contains(err.Error(), `roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`) {
		t.Fatalf("message: %v", err)
	}
	rb, err := admin.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "u"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rb.Subjects[0].APIGroup != rbacv1.GroupName {
		t.Fatalf("subject apiGroup not defaulted: %+v", rb.Subjects[0])
	}
	rb.RoleRef.Name = "edit"
	_, err = admin.RbacV1().RoleBindings("default").Update(ctx, rb, metav1.UpdateOptions{})
	invalid(err, "roleRef")
	if !strings.Contains(err.Error(), "cannot change roleRef") {
		t.Fatalf("message: %v", err)
	}
	// The bootstrap policy is there, as upstream's reconciliation leaves it.
	for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:node", "system:controller:namespace-controller", "system:public-info-viewer"} {
		if _, err := admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("clusterrole %s: %v", name, err)
		}
	}
	if _, err := admin.RbacV1().RoleBindings("kube-system").Get(ctx, "system::leader-locking-kube-scheduler", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	view, err := admin.RbacV1().ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
	if err != nil || len(view.Rules) == 0 {
		t.Fatalf("view is not aggregated: %v %v", view, err)
	}
}

// TestBootstrapReconcileOnRestart: a restart puts back what was taken out of the bootstrap
// policy, except from objects annotated autoupdate=false, and keeps what was added.
func TestBootstrapReconcileOnRestart(t *testing.T) {
	cfg, err := servertest.Config(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := servertest.Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	crs := cs.RbacV1().ClusterRoles()
	extra := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}
	// system:discovery: rules replaced by another one; system:basic-user: emptied and pinned.
	d, err := crs.Get(ctx, "system:discovery", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := d.Rules
	d.Rules = []rbacv1.PolicyRule{extra}
	if _, err := crs.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := crs.Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Rules = []rbacv1.PolicyRule{extra}
	b.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
	if _, err := crs.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, "system:monitoring", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// system:public-info-viewer bound to another role: recreated with its own
	pub, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "system:public-info-viewer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, pub.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantRef := pub.RoleRef
	pub.ResourceVersion, pub.UID, pub.RoleRef.Name = "", "", "system:discovery"
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, pub, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}

	s, err = servertest.Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
	cs = kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	crs = cs.RbacV1().ClusterRoles()
	d, err = crs.Get(ctx, "system:discovery", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// As upstream's reconciliation: the missing permissions are appended one per rule.
	if len(want) != 1 || len(d.Rules) != 1+len(want[0].NonResourceURLs) || d.Rules[0].Resources[0] != "configmaps" {
		t.Fatalf("system:discovery after restart: %v, want the added rule and %v", d.Rules, want)
	}
	for i, u := range want[0].NonResourceURLs {
		if r := d.Rules[1+i]; len(r.NonResourceURLs) != 1 || r.NonResourceURLs[0] != u || r.Verbs[0] != "get" {
			t.Fatalf("system:discovery rule %d: %v, want get %s", 1+i, r, u)
		}
	}
	b, err = crs.Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Rules) != 1 || b.Rules[0].Resources[0] != "configmaps" {
		t.Fatalf("system:basic-user (autoupdate=false) was changed: %v", b.Rules)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "system:monitoring", metav1.GetOptions{}); err != nil {
		t.Fatalf("deleted bootstrap binding not recreated: %v", err)
	}
	if pub, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "system:public-info-viewer", metav1.GetOptions{}); err != nil || pub.RoleRef != wantRef {
		t.Fatalf("binding with another roleRef after restart: %v %v, want %v", pub.RoleRef, err, wantRef)
	}
}

// processCPU is the CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAuthorizationModes measures the same requests by the same non-admin user (static
// token alice, allowed by a RoleBinding to edit among 1000 others in the namespace) on an
// apiserver with the default Node,RBAC and on one with AlwaysAllow, in one process: what RBAC
// costs a request end to end. Compare rbac/* with allow/* of the same run
// (`-count 10`, medians of cpu-ns/op, the process's CPU time per request), as the rbac rows of `make bench` do across processes.
func BenchmarkAuthorizationModes(b *testing.B) {
	ctx := context.Background()
	tokens := writeTokenFile(b)
	clients := map[string]kubernetes.Interface{}
	for _, mode := range []string{"Node,RBAC", "AlwaysAllow"} {
		s := servertest.New(b, func(c *server.Config) { c.TokenAuthFile, c.AuthorizationMode = tokens, mode })
		admin := kubernetes.NewForConfigOrDie(servertest.RestConfig(b, s))
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		for i := range 1000 {
			if _, err := admin.RbacV1().RoleBindings("bench").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "other-" + strconv.Itoa(i)},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
				Subjects: []rbacv1.Subject{{Kind: "User", Name: "other-" + strconv.Itoa(i)}}}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := admin.RbacV1().RoleBindings("bench").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-edit"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		for i := range 100 {
			if _, err := admin.CoreV1().ConfigMaps("bench").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i)},
				Data: map[string]string{"key": "value"}}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		alice := kubernetes.NewForConfigOrDie(tokenConfig(b, s, "alice-token"))
		for deadline := time.Now().Add(30 * time.Second); ; {
			_, err := alice.CoreV1().ConfigMaps("bench").Get(ctx, "cm-0", metav1.GetOptions{})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("alice's RoleBinding did not take effect: %v", err)
			}
			time.Sleep(10 * time.Millisecond) // poll
		}
		clients[mode] = alice
	}
	for _, op := range []struct {
		name string
		do   func(cs kubernetes.Interface, i int) error
	}{
		{"get", func(cs kubernetes.Interface, i int) error {
			_, err := cs.CoreV1().ConfigMaps("bench").Get(ctx, "cm-"+strconv.Itoa(i%100), metav1.GetOptions{})
			return err
		}},
		{"list", func(cs kubernetes.Interface, _ int) error {
			_, err := cs.CoreV1().ConfigMaps("bench").List(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 100})
			return err
		}},
	} {
		for _, m := range []struct{ name, mode string }{{"rbac", "Node,RBAC"}, {"allow", "AlwaysAllow"}} {
			b.Run(m.name+"/"+op.name, func(b *testing.B) {
				i, cpu0 := 0, processCPU(b)
				for b.Loop() {
					if err := op.do(clients[m.mode], i); err != nil {
						b.Fatal(err)
					}
					i++
				}
				// The process's CPU time (client, both servers, their etcd members) per
				// request: the machine's other load disturbs it far less than ns/op.
				b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}
