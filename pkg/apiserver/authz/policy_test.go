package authz

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// goldenPolicy is kube-apiserver v1.37's bootstrap policy as hack/rbac-golden/gen.sh writes
// it from upstream's bootstrappolicy package.
type goldenPolicy struct {
	ClusterRoles          []rbacv1.ClusterRole            `json:"clusterRoles"`
	ClusterRoleBindings   []rbacv1.ClusterRoleBinding     `json:"clusterRoleBindings"`
	NamespaceRoles        map[string][]rbacv1.Role        `json:"namespaceRoles"`
	NamespaceRoleBindings map[string][]rbacv1.RoleBinding `json:"namespaceRoleBindings"`
}

// ruleSet is rules as a sorted list of strings: upstream's reconciliation compares rules by
// coverage, not order, so order does not matter here either.
func ruleSet(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, fmt.Sprintf("%q %q %q %q %q", sortedStrings(r.Verbs), sortedStrings(r.APIGroups), sortedStrings(r.Resources), sortedStrings(r.ResourceNames), sortedStrings(r.NonResourceURLs)))
	}
	sort.Strings(out)
	return out
}

func subjectSet(s []rbacv1.Subject) []string {
	var out []string
	for _, x := range s {
		out = append(out, fmt.Sprintf("%s/%s/%s/%s", x.Kind, x.APIGroup, x.Namespace, x.Name))
	}
	sort.Strings(out)
	return out
}

func compareMeta(t *testing.T, what string, got, want metav1.ObjectMeta) {
	t.Helper()
	if got.Name != want.Name || got.Namespace != want.Namespace || !apiequality.Semantic.DeepEqual(got.Labels, want.Labels) || !apiequality.Semantic.DeepEqual(got.Annotations, want.Annotations) {
		t.Errorf("%s: metadata %v/%v labels %v annotations %v, upstream %v/%v %v %v", what, got.Namespace, got.Name, got.Labels, got.Annotations, want.Namespace, want.Name, want.Labels, want.Annotations)
	}
}

func compareRules(t *testing.T, what string, got, want []rbacv1.PolicyRule) {
	t.Helper()
	g, w := ruleSet(got), ruleSet(want)
	if !apiequality.Semantic.DeepEqual(g, w) {
		t.Errorf("%s: rules differ from upstream's\n got: %q\nwant: %q", what, g, w)
	}
}

func compareBinding(t *testing.T, what string, ref, wantRef rbacv1.RoleRef, subjects, wantSubjects []rbacv1.Subject) {
	t.Helper()
	if ref != wantRef {
		t.Errorf("%s: roleRef %v, upstream %v", what, ref, wantRef)
	}
	if g, w := subjectSet(subjects), subjectSet(wantSubjects); !apiequality.Semantic.DeepEqual(g, w) {
		t.Errorf("%s: subjects %q, upstream %q", what, g, w)
	}
}

// TestBootstrapPolicyGolden compares hacp's bootstrap policy, role by role and binding by
// binding, with the one upstream's v1.37 code produces.
func TestBootstrapPolicyGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/bootstrap-policy-v1.37.json")
	if err != nil {
		t.Fatal(err)
	}
	var want goldenPolicy
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if len(want.ClusterRoles) < 50 || len(want.ClusterRoleBindings) < 40 {
		t.Fatalf("golden data looks truncated: %d cluster roles, %d bindings", len(want.ClusterRoles), len(want.ClusterRoleBindings))
	}
	got := BootstrapPolicy()

	gotCR := map[string]rbacv1.ClusterRole{}
	for _, r := range got.ClusterRoles {
		if _, dup := gotCR[r.Name]; dup {
			t.Errorf("clusterrole %s defined twice", r.Name)
		}
		gotCR[r.Name] = r
	}
	for _, w := range want.ClusterRoles {
		g, ok := gotCR[w.Name]
		if !ok {
			t.Errorf("clusterrole %s is missing", w.Name)
			continue
		}
		delete(gotCR, w.Name)
		compareMeta(t, "clusterrole "+w.Name, g.ObjectMeta, w.ObjectMeta)
		compareRules(t, "clusterrole "+w.Name, g.Rules, w.Rules)
		if !apiequality.Semantic.DeepEqual(g.AggregationRule, w.AggregationRule) {
			t.Errorf("clusterrole %s: aggregationRule %v, upstream %v", w.Name, g.AggregationRule, w.AggregationRule)
		}
	}
	for name := range gotCR {
		t.Errorf("clusterrole %s is not upstream's", name)
	}

	gotCRB := map[string]rbacv1.ClusterRoleBinding{}
	for _, b := range got.ClusterRoleBindings {
		gotCRB[b.Name] = b
	}
	for _, w := range want.ClusterRoleBindings {
		g, ok := gotCRB[w.Name]
		if !ok {
			t.Errorf("clusterrolebinding %s is missing", w.Name)
			continue
		}
		delete(gotCRB, w.Name)
		compareMeta(t, "clusterrolebinding "+w.Name, g.ObjectMeta, w.ObjectMeta)
		compareBinding(t, "clusterrolebinding "+w.Name, g.RoleRef, w.RoleRef, g.Subjects, w.Subjects)
	}
	for name := range gotCRB {
		t.Errorf("clusterrolebinding %s is not upstream's", name)
	}

	if len(got.NamespaceRoles) != len(want.NamespaceRoles) || len(got.NamespaceRoleBindings) != len(want.NamespaceRoleBindings) {
		t.Errorf("namespaces with roles %d/%d, bindings %d/%d, upstream %d/%d", len(got.NamespaceRoles), len(got.NamespaceRoleBindings),
			len(want.NamespaceRoles), len(want.NamespaceRoleBindings), len(got.NamespaceRoles), len(got.NamespaceRoleBindings))
	}
	for ns, roles := range want.NamespaceRoles {
		if len(got.NamespaceRoles[ns]) != len(roles) {
			t.Errorf("%s: %d roles, upstream %d", ns, len(got.NamespaceRoles[ns]), len(roles))
		}
		for _, w := range roles {
			found := false
			for _, g := range got.NamespaceRoles[ns] {
				if g.Name == w.Name {
					found = true
					compareMeta(t, "role "+ns+"/"+w.Name, g.ObjectMeta, w.ObjectMeta)
					compareRules(t, "role "+ns+"/"+w.Name, g.Rules, w.Rules)
				}
			}
			if !found {
				t.Errorf("role %s/%s is missing", ns, w.Name)
			}
		}
	}
	for ns, bindings := range want.NamespaceRoleBindings {
		if len(got.NamespaceRoleBindings[ns]) != len(bindings) {
			t.Errorf("%s: %d rolebindings, upstream %d", ns, len(got.NamespaceRoleBindings[ns]), len(bindings))
		}
		for _, w := range bindings {
			found := false
			for _, g := range got.NamespaceRoleBindings[ns] {
				if g.Name == w.Name {
					found = true
					compareMeta(t, "rolebinding "+ns+"/"+w.Name, g.ObjectMeta, w.ObjectMeta)
					compareBinding(t, "rolebinding "+ns+"/"+w.Name, g.RoleRef, w.RoleRef, g.Subjects, w.Subjects)
				}
			}
			if !found {
				t.Errorf("rolebinding %s/%s is missing", ns, w.Name)
			}
		}
	}
}
