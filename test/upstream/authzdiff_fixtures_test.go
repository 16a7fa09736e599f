package upstream_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The objects both servers hold before the corpus runs:
//
//   - namespaces diff-a and diff-b, each with ConfigMaps cm1, cm2, Secrets s1, s2 and the
//     ServiceAccount default (no controller-manager runs to make it, and the ServiceAccount
//     admission plugin wants it for pods);
//   - viewer: ClusterRole view in diff-a;
//   - lister: a Role in diff-a allowing list (not watch) of configmaps, get of Secret s1 only
//     and delete/deletecollection of ConfigMap cm2 only (resourceNames);
//   - sa (diff-a/sa1, by token or by a certificate naming it): ClusterRole edit in diff-b
//     (not in its own namespace, so that it cannot delete itself, its token or the node's
//     pod mid-run);
//   - nsadmin: ClusterRole admin in diff-b (probes only, its RBAC writes dry runs);
//   - nodes n1 and n2; pod p1 in diff-a bound to n1 (Secret s1, ConfigMap cm1 and a PVC pvc1
//     as volumes, ServiceAccount sa1), pod p2 in diff-b bound to n2 (Secret s2): the Node
//     authorizer's graph;
//   - nobody and anonymous: nothing.
const (
	authzNSA = "diff-a"
	authzNSB = "diff-b"
)

// createAuthzFixtures creates the fixtures through tg's API as the admin.
func createAuthzFixtures(t *testing.T, tg *authzTarget) {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(tg.admin)
	must := func(what string, err error) {
		t.Helper()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s: create %s: %v", tg.name, what, err)
		}
	}
	for _, ns := range []string{authzNSA, authzNSB} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		must("namespace "+ns, err)
		_, err = cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		must(ns+"/default", err)
		for _, name := range []string{"cm1", "cm2"} {
			_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			must(ns+"/"+name, err)
		}
		for _, name := range []string{"s1", "s2"} {
			_, err = cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			must(ns+"/"+name, err)
		}
	}
	_, err := cs.CoreV1().ServiceAccounts(authzNSA).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa1"}}, metav1.CreateOptions{})
	must("sa1", err)
	createAuthzRBAC(t, tg, cs, must)
	createAuthzNodes(t, tg, cs, must)
}

// createAuthzRBAC creates the Roles and RoleBindings.
func createAuthzRBAC(t *testing.T, tg *authzTarget, cs kubernetes.Interface, must func(string, error)) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "lister"}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}},
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"s1"}},
		{Verbs: []string{"delete", "deletecollection"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"cm2"}},
	}}
	_, err := cs.RbacV1().Roles(authzNSA).Create(ctx, role, metav1.CreateOptions{})
	must("role lister", err)
	bindings := []struct {
		ns, name, kind, role string
		subject              rbacv1.Subject
	}{
		{authzNSA, "viewer", "ClusterRole", "view", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "viewer"}},
		{authzNSA, "lister", "Role", "lister", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "lister"}},
		{authzNSB, "sa1-edit", "ClusterRole", "edit", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: authzNSA, Name: "sa1"}},
		{authzNSB, "nsadmin", "ClusterRole", "admin", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "nsadmin"}},
	}
	for _, b := range bindings {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: b.kind, Name: b.role},
			Subjects: []rbacv1.Subject{b.subject}}
		_, err := cs.RbacV1().RoleBindings(b.ns).Create(ctx, rb, metav1.CreateOptions{})
		must("rolebinding "+b.name, err)
	}
}

// createAuthzNodes creates the nodes and the pods bound to them.
func createAuthzNodes(t *testing.T, tg *authzTarget, cs kubernetes.Interface, must func(string, error)) {
	t.Helper()
	ctx := context.Background()
	for _, n := range []string{"n1", "n2"} {
		_, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		must("node "+n, err)
	}
	off := false
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: authzNSA}, Spec: corev1.PodSpec{NodeName: "n1", ServiceAccountName: "sa1",
			AutomountServiceAccountToken: &off, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes: []corev1.Volume{
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s1"}}},
				{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm1"}}}},
				{Name: "p", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "pvc1"}}},
			}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "p2", Namespace: authzNSB}, Spec: corev1.PodSpec{NodeName: "n2",
			AutomountServiceAccountToken: &off, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s2"}}}}}},
	}
	for _, p := range pods {
		_, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		must("pod "+p.Name, err)
	}
}

// issueSAToken returns a token for diff-a/sa1 from tg's TokenRequest: a bound token names
// the ServiceAccount's uid, which differs between the servers, so each issues its own.
func issueSAToken(t *testing.T, tg *authzTarget) string {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(tg.admin)
	tr, err := cs.CoreV1().ServiceAccounts(authzNSA).CreateToken(context.Background(), "sa1", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("%s: token for sa1: %v", tg.name, err)
	}
	return tr.Status.Token
}

// waitAuthzReady polls, on tg, one request each binding (or the node graph) allows until
// the authorizers' caches hold them.
func waitAuthzReady(t *testing.T, tg *authzTarget) {
	t.Helper()
	probes := []struct{ identity, path string }{
		{"viewer", "/api/v1/namespaces/diff-a/configmaps"},
		{"lister", "/api/v1/namespaces/diff-a/configmaps"},
		{"lister", "/api/v1/namespaces/diff-a/secrets/s1"},
		{"sa", "/api/v1/namespaces/diff-b/configmaps"},
		{"nsadmin", "/apis/rbac.authorization.k8s.io/v1/namespaces/diff-b/rolebindings"},
		{"node", "/api/v1/namespaces/diff-a/secrets/s1"},
		{"node", "/api/v1/namespaces/diff-a/configmaps/cm1"},
	}
	for _, p := range probes {
		var last string
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
			a := sendAuthz(tg, authzRequest{identity: p.identity, method: http.MethodGet, path: p.path})
			if a.Code == http.StatusOK {
				break
			}
			last = fmt.Sprintf("%d %s %s", a.Code, a.Body, a.Err)
			if time.Now().After(deadline) {
				t.Fatalf("%s: GET %s as %s not allowed within 2m: %s", tg.name, p.path, p.identity, last)
			}
		}
	}
}
