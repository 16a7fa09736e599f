package audit

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/request"
)

func res(verb, group, resource, sub, ns, name string) *request.Info {
	return &request.Info{IsResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
}

func nonRes(path string) *request.Info { return &request.Info{Path: path, Verb: "get"} }

func TestEvaluate(t *testing.T) {
	no := false
	p := &Policy{OmitStages: []Stage{StageRequestReceived}, OmitManagedFields: true, Rules: []PolicyRule{
		{Level: LevelNone, Users: []string{"system:kube-proxy"}, Verbs: []string{"watch"}},
		{Level: LevelRequestResponse, UserGroups: []string{"auditors"}, OmitStages: []Stage{StageResponseStarted}, OmitManagedFields: &no},
		{Level: LevelMetadata, Resources: []GroupResources{{Group: "", Resources: []string{"pods/log", "*/status"}}}},
		{Level: LevelRequest, Resources: []GroupResources{{Group: "apps", Resources: []string{"deployments/*"}}}},
		{Level: LevelMetadata, Resources: []GroupResources{{Group: "", Resources: []string{"configmaps"}, ResourceNames: []string{"cfg"}}}},
		{Level: LevelRequest, Namespaces: []string{"team"}},
		{Level: LevelNone, NonResourceURLs: []string{"/healthz*", "/version"}},
		{Level: LevelRequestResponse, Resources: []GroupResources{{Group: ""}}},
		{Level: LevelMetadata},
	}}
	alice := &request.User{Name: "alice", Groups: []string{"dev"}}
	auditor := &request.User{Name: "bob", Groups: []string{"x", "auditors"}}
	proxy := &request.User{Name: "system:kube-proxy"}
	tests := []struct {
		name  string
		u     *request.User
		info  *request.Info
		level Level
	}{
		{"user and verb", proxy, res("watch", "", "services", "", "", ""), LevelNone},
		{"user, other verb", proxy, res("list", "discovery.k8s.io", "endpointslices", "", "", ""), LevelMetadata},
		{"group", auditor, res("get", "apps", "deployments", "", "a", "d"), LevelRequestResponse},
		{"subresource", alice, res("get", "", "pods", "log", "a", "p"), LevelMetadata},
		{"*/status", alice, res("update", "", "services", "status", "a", "s"), LevelMetadata},
		{"pods is not pods/log", alice, res("get", "", "pods", "", "a", "p"), LevelRequestResponse},
		{"resource/*", alice, res("update", "apps", "deployments", "scale", "a", "d"), LevelRequest},
		{"resource/* needs a subresource name match of the resource", alice, res("update", "apps", "replicasets", "scale", "a", "d"), LevelMetadata},
		{"resourceNames", alice, res("get", "", "configmaps", "", "a", "cfg"), LevelMetadata},
		{"resourceNames other name", alice, res("get", "", "configmaps", "", "a", "other"), LevelRequestResponse},
		{"namespace", alice, res("create", "apps", "deployments", "", "team", ""), LevelRequest},
		{"cluster scope is namespace \"\"", alice, res("get", "rbac.authorization.k8s.io", "clusterroles", "", "", "x"), LevelMetadata},
		{"non-resource wildcard", alice, nonRes("/healthz/etcd"), LevelNone},
		{"non-resource exact", alice, nonRes("/version"), LevelNone},
		{"non-resource other", alice, nonRes("/apis"), LevelMetadata},
		{"no user (failed authentication)", nil, nonRes("/apis"), LevelMetadata},
		{"secrets capped", auditor, res("get", "", "secrets", "", "a", "s"), LevelMetadata},
		{"secrets capped for RequestResponse rules too", alice, res("create", "", "secrets", "", "b", ""), LevelMetadata},
		{"token request capped", auditor, res("create", "", "serviceaccounts", "token", "a", "default"), LevelMetadata},
		{"token review capped", auditor, res("create", "authentication.k8s.io", "tokenreviews", "", "", ""), LevelMetadata},
		{"secrets at None stay None", proxy, res("watch", "", "secrets", "", "", ""), LevelNone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Evaluate(tc.u, tc.info).Level; got != tc.level {
				t.Fatalf("level %s, want %s", got, tc.level)
			}
		})
	}
	t.Run("stages and managed fields", func(t *testing.T) {
		c := p.Evaluate(auditor, res("get", "", "pods", "", "a", "p"))
		if !c.Omits(StageRequestReceived) || !c.Omits(StageResponseStarted) || c.Omits(StageResponseComplete) || c.OmitManagedFields {
			t.Fatalf("rule config %+v: want the policy's and the rule's stages, and the rule's omitManagedFields", c)
		}
		c = p.Evaluate(alice, res("get", "", "pods", "", "a", "p"))
		if !c.Omits(StageRequestReceived) || c.Omits(StageResponseStarted) || !c.OmitManagedFields {
			t.Fatalf("rule config %+v: want the policy's", c)
		}
		if slices.Contains(p.OmitStages, StageResponseStarted) {
			t.Fatal("Evaluate changed the policy's stages")
		}
	})
}

func TestLoadPolicy(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // each must appear in the error; none: valid
	}{
		{"valid", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n", nil},
		{"wrong version", "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules:\n- level: Metadata\n", []string{":1: apiVersion: Unsupported value: \"audit.k8s.io/v1beta1\""}},
		{"no rules", "apiVersion: audit.k8s.io/v1\nkind: Policy\n", []string{"rules: Required value: a policy needs at least one rule"}},
		{"missing level", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- verbs: [get]\n", []string{":4: rules.0.level: Required value"}},
		{"bad stage", "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Done]\nrules:\n- level: None\n", []string{":3: omitStages.0: Unsupported value: \"Done\""}},
		{"both kinds of rule", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  namespaces: [a]\n  nonResourceURLs: [/x]\n", []string{":6: rules.0.nonResourceURLs: Invalid value", "rules cannot apply to both regular resources and non-resource URLs"}},
		{"url without slash", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [healthz]\n", []string{"rules.0.nonResourceURLs.0: Invalid value: \"healthz\": non-resource URL rules must begin with a '/' character"}},
		{"bad group", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  resources:\n  - group: Apps/v1\n", []string{":6: rules.0.resources.0.group: Invalid value: \"Apps/v1\""}},
		{"names without resources", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  resources:\n  - resourceNames: [x]\n", []string{"rules.0.resources.0.resourceNames: Invalid value", "using resourceNames requires at least one resource"}},
		{"unknown key", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  user: [a]\n", []string{":5: user: unknown key (did you mean \"users\"?)"}},
		{"wrong type", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: none\n", []string{":3:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "policy.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadPolicy(path)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) || !strings.HasPrefix(err.Error(), path) {
					t.Fatalf("error %q does not name %s and contain %q", err, path, w)
				}
			}
		})
	}
	if _, err := LoadPolicy(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("missing file: %v", err)
	}
}

// TestExamplePolicy loads configs/audit-policy.yaml and checks it decides as it says.
func TestExamplePolicy(t *testing.T) {
	p, err := LoadPolicy(filepath.Join("..", "..", "..", "configs", "audit-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	u := &request.User{Name: "alice", Groups: []string{"system:authenticated"}}
	for _, tc := range []struct {
		info  *request.Info
		level Level
	}{
		{nonRes("/healthz"), LevelNone},
		{res("get", "", "pods", "", "a", "p"), LevelMetadata},
		{res("create", "apps", "deployments", "", "a", ""), LevelRequest},
		{res("create", "rbac.authorization.k8s.io", "rolebindings", "", "a", ""), LevelRequestResponse},
		{res("update", "", "secrets", "", "a", "s"), LevelMetadata},
		{res("create", "", "events", "", "a", ""), LevelNone},
	} {
		if got := p.Evaluate(u, tc.info); got.Level != tc.level || !got.Omits(StageRequestReceived) || !got.OmitManagedFields {
			t.Errorf("%s %s/%s: %+v, want %s", tc.info.Verb, tc.info.APIGroup, tc.info.Resource, got, tc.level)
		}
	}
}
