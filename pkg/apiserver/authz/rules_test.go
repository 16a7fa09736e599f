package authz

import (
	"context"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/request"
	rbacv1 "k8s.io/api/rbac/v1"
)

func TestRuleAllows(t *testing.T) {
	res := func(verb, group, resource, sub, name string) Attributes {
		return Attributes{Verb: verb, ResourceRequest: true, APIGroup: group, Resource: resource, Subresource: sub, Name: name}
	}
	path := func(verb, p string) Attributes { return Attributes{Verb: verb, Path: p} }
	rule := func(verbs, groups, resources, names, urls []string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names, NonResourceURLs: urls}
	}
	l := func(s ...string) []string { return s }
	tests := []struct {
		name string
		rule rbacv1.PolicyRule
		a    Attributes
		want bool
	}{
		{"exact", rule(l("get"), l(""), l("pods"), nil, nil), res("get", "", "pods", "", "p"), true},
		{"other verb", rule(l("get"), l(""), l("pods"), nil, nil), res("list", "", "pods", "", ""), false},
		{"other group", rule(l("get"), l(""), l("pods"), nil, nil), res("get", "apps", "pods", "", ""), false},
		{"verb star", rule(l("*"), l(""), l("pods"), nil, nil), res("delete", "", "pods", "", ""), true},
		{"group star", rule(l("get"), l("*"), l("deployments"), nil, nil), res("get", "apps", "deployments", "", ""), true},
		{"resource star covers subresources", rule(l("get"), l(""), l("*"), nil, nil), res("get", "", "pods", "log", ""), true},
		{"resource does not cover its subresource", rule(l("get"), l(""), l("pods"), nil, nil), res("get", "", "pods", "log", ""), false},
		{"resource/subresource", rule(l("get"), l(""), l("pods/log"), nil, nil), res("get", "", "pods", "log", ""), true},
		{"*/subresource", rule(l("update"), l(""), l("*/status"), nil, nil), res("update", "", "nodes", "status", "n"), true},
		{"*/subresource other", rule(l("update"), l(""), l("*/status"), nil, nil), res("update", "", "nodes", "scale", "n"), false},
		{"resource name", rule(l("get"), l(""), l("secrets"), l("a"), nil), res("get", "", "secrets", "", "a"), true},
		{"other resource name", rule(l("get"), l(""), l("secrets"), l("a"), nil), res("get", "", "secrets", "", "b"), false},
		{"resource names do not allow list", rule(l("list"), l(""), l("secrets"), l("a"), nil), res("list", "", "secrets", "", ""), false},
		{"url", rule(l("get"), nil, nil, nil, l("/healthz")), path("get", "/healthz"), true},
		{"url prefix", rule(l("get"), nil, nil, nil, l("/healthz/*")), path("get", "/healthz/etcd"), true},
		{"url prefix is not the path itself", rule(l("get"), nil, nil, nil, l("/healthz/*")), path("get", "/healthz"), false},
		{"url star", rule(l("get"), nil, nil, nil, l("*")), path("get", "/anything"), true},
		{"url rule is not a resource rule", rule(l("get"), nil, nil, nil, l("*")), res("get", "", "pods", "", ""), false},
		{"resource rule is not a url rule", rule(l("*"), l("*"), l("*"), nil, nil), path("get", "/metrics"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ruleAllows(&tc.a, &tc.rule); got != tc.want {
				t.Fatalf("ruleAllows = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCovers(t *testing.T) {
	owner := []rbacv1.PolicyRule{
		{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods", "*/status"}},
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"a"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/logs/*"}},
	}
	tests := []struct {
		name    string
		servant rbacv1.PolicyRule
		want    bool
		missing string
	}{
		{"subset", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}, true, ""},
		{"more verbs", rbacv1.PolicyRule{Verbs: []string{"get", "delete"}, APIGroups: []string{""}, Resources: []string{"pods"}}, false, `{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}`},
		{"any status", rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"nodes/status"}}, true, ""},
		{"named secret", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"a"}}, true, ""},
		{"all secrets", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}, false, `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`},
		{"url under prefix", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/logs/x"}}, true, ""},
		{"url outside", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}, false, `{NonResourceURLs:["/metrics"], Verbs:["get"]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, missing := covers(owner, []rbacv1.PolicyRule{tc.servant})
			if ok != tc.want {
				t.Fatalf("covers = %v (missing %v), want %v", ok, missing, tc.want)
			}
			if !ok {
				var got []string
				for _, m := range compactRules(missing) {
					got = append(got, compactString(m))
				}
				if strings.Join(got, "\n") != tc.missing {
					t.Fatalf("missing %q, want %q", got, tc.missing)
				}
			}
		})
	}
}

func TestUnionAndForbiddenMessage(t *testing.T) {
	alice := &request.User{Name: "alice", Groups: []string{request.AllAuthenticated}}
	master := &request.User{Name: "root", Groups: []string{request.SystemPrivilegedGrp}}
	deny := AuthorizerFunc(func(context.Context, Attributes) (Decision, string, error) { return Deny, "denied here", nil })
	noOp := AuthorizerFunc(func(context.Context, Attributes) (Decision, string, error) { return NoOpinion, "no idea", nil })
	a := Attributes{User: alice, Verb: "list", ResourceRequest: true, Resource: "pods", Namespace: "ns"}
	if d, reason, _ := (Union{privileged, noOp, deny, alwaysAllow}).Authorize(context.Background(), a); d != Deny || reason != "denied here" {
		t.Fatalf("deny does not stop the union: %v %q", d, reason)
	}
	if d, reason, _ := (Union{privileged, noOp, alwaysDeny}).Authorize(context.Background(), a); d != NoOpinion || reason != "no idea\nEverything is forbidden." {
		t.Fatalf("no opinions: %v %q", d, reason)
	}
	if d, _, _ := (Union{privileged, deny}).Authorize(context.Background(), Attributes{User: master, Verb: "get", Path: "/x"}); d != Allow {
		t.Fatalf("system:masters is not allowed first: %v", d)
	}
	for _, tc := range []struct {
		a    Attributes
		want string
	}{
		{a, `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "ns"`},
		{Attributes{User: alice, Verb: "get", ResourceRequest: true, APIGroup: "apps", Resource: "deployments", Subresource: "scale", Name: "web", Namespace: "ns"},
			`deployments.apps "web" is forbidden: User "alice" cannot get resource "deployments/scale" in API group "apps" in the namespace "ns"`},
		{Attributes{User: alice, Verb: "list", ResourceRequest: true, Resource: "nodes"}, `nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope`},
		{Attributes{User: alice, Verb: "get", Path: "/metrics"}, `forbidden: User "alice" cannot get path "/metrics"`},
	} {
		if got := ForbiddenError(tc.a, "").Error(); got != tc.want {
			t.Errorf("message %q, want %q", got, tc.want)
		}
	}
	if got := ForbiddenError(Attributes{User: alice, Verb: "get", Path: "/x"}, "why").Error(); got != `forbidden: User "alice" cannot get path "/x": why` {
		t.Errorf("reason: %q", got)
	}
}

func TestParseModes(t *testing.T) {
	if m, err := ParseModes("Node,RBAC"); err != nil || strings.Join(m, ",") != "Node,RBAC" {
		t.Fatalf("Node,RBAC: %v %v", m, err)
	}
	for _, bad := range []string{"", "RBAC,RBAC", "rbac", "Node,Webhook"} {
		if _, err := ParseModes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
