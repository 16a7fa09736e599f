package flowcontrol

import (
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/request"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
)

// bootstrapConfig is the config of upstream's bootstrap objects, as a fresh cluster has it.
func bootstrapConfig() *config {
	pls := append(append([]*flowcontrolv1.PriorityLevelConfiguration{}, bootstrap.MandatoryPriorityLevelConfigurations...), bootstrap.SuggestedPriorityLevelConfigurations...)
	fss := append(append([]*flowcontrolv1.FlowSchema{}, bootstrap.MandatoryFlowSchemas...), bootstrap.SuggestedFlowSchemas...)
	return digest(pls, fss)
}

func resource(verb, group, resource, sub, ns string) *request.Info {
	return &request.Info{IsResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns}
}

// TestClassifyBootstrap classifies typical requests by the bootstrap configuration to the
// FlowSchema and priority level kube-apiserver 1.37 picks for them.
func TestClassifyBootstrap(t *testing.T) {
	authn := "system:authenticated"
	node := &request.User{Name: "system:node:n1", Groups: []string{"system:nodes", authn}}
	cases := []struct {
		name   string
		user   *request.User
		info   *request.Info
		fs, pl string
	}{
		{"node lease renewal", node, resource("update", "coordination.k8s.io", "leases", "", "kube-node-lease"), "system-node-high", "node-high"},
		{"node status", node, resource("patch", "", "nodes", "status", ""), "system-node-high", "node-high"},
		{"node lists its pods", node, resource("list", "", "pods", "", ""), "system-nodes", "system"},
		{"kube-controller-manager", &request.User{Name: "system:kube-controller-manager", Groups: []string{authn}}, resource("list", "", "pods", "", ""), "kube-controller-manager", "workload-high"},
		{"controller-manager leader election", &request.User{Name: "system:kube-controller-manager", Groups: []string{authn}}, resource("update", "coordination.k8s.io", "leases", "", "kube-system"), "system-leader-election", "leader-election"},
		{"kube-scheduler", &request.User{Name: "system:kube-scheduler", Groups: []string{authn}}, resource("create", "", "pods", "binding", "default"), "kube-scheduler", "workload-high"},
		{"kube-system service account", &request.User{Name: "system:serviceaccount:kube-system:deployment-controller", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", authn}}, resource("update", "apps", "deployments", "status", "default"), "kube-system-service-accounts", "workload-high"},
		{"other service account", &request.User{Name: "system:serviceaccount:team:app", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team", authn}}, resource("list", "", "configmaps", "", ""), "service-accounts", "workload-low"},
		{"plain user", &request.User{Name: "alice", Groups: []string{authn}}, resource("get", "", "configmaps", "", "default"), "global-default", "global-default"},
		{"anonymous version", &request.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}, &request.Info{Verb: "get", Path: "/version"}, "global-default", "global-default"},
		{"health probe", &request.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}, &request.Info{Verb: "get", Path: "/readyz"}, "probes", "exempt"},
		{"system:masters", &request.User{Name: "admin", Groups: []string{"system:masters", authn}}, resource("delete", "", "namespaces", "", ""), "exempt", "exempt"},
		{"no group at all", &request.User{Name: "odd"}, resource("get", "", "pods", "", "default"), "catch-all", "catch-all"},
	}
	cfg := bootstrapConfig()
	for _, c := range cases {
		fs, pl := cfg.classify(c.user, c.info)
		if fs.Name != c.fs || pl.Name != c.pl {
			t.Errorf("%s: classified to FlowSchema %s, level %s; want %s, %s", c.name, fs.Name, pl.Name, c.fs, c.pl)
		}
	}
}

// TestClassifyRules checks the rule semantics upstream's matcher has: subjects by user,
// group and service account (one or all of a namespace), cluster scope against
// namespaces, subresources, non-resource URL prefixes, and precedence before name.
func TestClassifyRules(t *testing.T) {
	pl := &flowcontrolv1.PriorityLevelConfiguration{Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
		Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}}}
	pl.Name = "pl"
	rule := func(s flowcontrolv1.Subject, rr []flowcontrolv1.ResourcePolicyRule, nr []flowcontrolv1.NonResourcePolicyRule) []flowcontrolv1.PolicyRulesWithSubjects {
		return []flowcontrolv1.PolicyRulesWithSubjects{{Subjects: []flowcontrolv1.Subject{s}, ResourceRules: rr, NonResourceRules: nr}}
	}
	sa := func(ns, name string) flowcontrolv1.Subject {
		return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: ns, Name: name}}
	}
	everyNS := []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"pods/log"}, Namespaces: []string{"*"}}}
	clusterCM := []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ClusterScope: true}}
	metrics := []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics/*"}}}
	schema := func(name string, prec int32, rules []flowcontrolv1.PolicyRulesWithSubjects) *flowcontrolv1.FlowSchema {
		fs := &flowcontrolv1.FlowSchema{Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "pl"},
			MatchingPrecedence: prec, Rules: rules}}
		fs.Name = name
		return fs
	}
	cfg := digest([]*flowcontrolv1.PriorityLevelConfiguration{pl}, []*flowcontrolv1.FlowSchema{
		schema("b-sa-one", 10, rule(sa("ns1", "app"), everyNS, nil)),
		schema("a-sa-all", 10, rule(sa("ns2", "*"), everyNS, nil)),
		schema("c-sa-ns2", 10, rule(sa("ns2", "whoever"), everyNS, nil)), // same precedence: a-sa-all first by name
		schema("z-first", 5, rule(sa("ns3", "x"), everyNS, nil)),
		schema("a-later", 6, rule(sa("ns3", "x"), everyNS, nil)), // lower precedence wins before name
		schema("cluster-lists", 20, rule(flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "g"}}, clusterCM, nil)),
		schema("metrics", 30, rule(flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "*"}}, nil, metrics)),
	})
	cases := []struct {
		name string
		user *request.User
		info *request.Info
		want string
	}{
		{"one service account", &request.User{Name: "system:serviceaccount:ns1:app"}, resource("get", "", "pods", "log", "x"), "b-sa-one"},
		{"another in its namespace", &request.User{Name: "system:serviceaccount:ns1:other"}, resource("get", "", "pods", "log", "x"), "catch-all"},
		{"any of a namespace", &request.User{Name: "system:serviceaccount:ns2:whoever"}, resource("get", "", "pods", "log", "x"), "a-sa-all"},
		{"precedence before name", &request.User{Name: "system:serviceaccount:ns3:x"}, resource("get", "", "pods", "log", "x"), "z-first"},
		{"namespace prefix is not the namespace", &request.User{Name: "system:serviceaccount:ns2x:a"}, resource("get", "", "pods", "log", "x"), "catch-all"},
		{"subresource must match", &request.User{Name: "system:serviceaccount:ns1:app"}, resource("get", "", "pods", "", "x"), "catch-all"},
		{"cluster-wide list", &request.User{Name: "u", Groups: []string{"g"}}, resource("list", "", "configmaps", "", ""), "cluster-lists"},
		{"namespaced list is not cluster scope", &request.User{Name: "u", Groups: []string{"g"}}, resource("list", "", "configmaps", "", "default"), "catch-all"},
		{"non-resource prefix", &request.User{Name: "u"}, &request.Info{Verb: "get", Path: "/metrics/slis"}, "metrics"},
		{"non-resource prefix itself", &request.User{Name: "u"}, &request.Info{Verb: "get", Path: "/metrics"}, "catch-all"},
	}
	for _, c := range cases {
		if fs, _ := cfg.classify(c.user, c.info); fs.Name != c.want {
			t.Errorf("%s: FlowSchema %s, want %s", c.name, fs.Name, c.want)
		}
	}
	if len(cfg.dangling) != 0 {
		t.Errorf("dangling %v, want none (all reference pl)", cfg.dangling)
	}
	gone := digest(nil, []*flowcontrolv1.FlowSchema{schema("x", 5, nil)})
	if len(gone.dangling) != 1 || gone.dangling[0] != "x" {
		t.Errorf("a schema of a missing level: dangling %v, want [x]", gone.dangling)
	}
}

// TestAllocateBootstrap: the bootstrap levels' nominal seats out of upstream's default 600,
// lower and upper limits, as kube-apiserver 1.37 reports them in
// apiserver_flowcontrol_nominal_limit_seats (and lower/upper_limit_seats).
func TestAllocateBootstrap(t *testing.T) {
	got := allocate(600, bootstrapConfig().levels)
	want := map[string]limits{
		"exempt":          {0, 0, 600},
		"system":          {74, 50, 674},
		"node-high":       {98, 73, 698},
		"leader-election": {25, 25, 625},
		"workload-high":   {98, 49, 698},
		"workload-low":    {245, 24, 845},
		"global-default":  {49, 24, 649},
		"catch-all":       {13, 13, 613},
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %+v, want %+v", name, got[name], w)
		}
	}
}

// TestSeats: a list takes a seat per 100 objects stored (at least one), its level's most
// when the count is not known; everything else one seat. The level caps it (enqueue).
func TestSeats(t *testing.T) {
	counts := map[string]int{"configmaps": 250, "pods": 0}
	c := &Controller{opts: Options{Count: func(_, r string) (int, bool) { n, ok := counts[r]; return n, ok }}}
	cases := []struct {
		info *request.Info
		want int
	}{
		{resource("list", "", "configmaps", "", ""), 3},
		{resource("list", "", "configmaps", "", "default"), 3},
		{resource("list", "", "pods", "", ""), 1},
		{resource("get", "", "configmaps", "", "default"), 1},
		{resource("create", "", "configmaps", "", "default"), 1},
		{&request.Info{Verb: "get", Path: "/version"}, 1},
	}
	for _, tc := range cases {
		if got := c.seats(tc.info); got != tc.want {
			t.Errorf("%s %s: %d seats, want %d", tc.info.Verb, tc.info.Resource, got, tc.want)
		}
	}
	if got := c.seats(resource("list", "example.com", "widgets", "", "")); got < maxListSeats {
		t.Errorf("a list of unknown size: %d seats, want the most (capped by its level)", got)
	}
	d := newDispatcher(600, newMetrics(), time.Now)
	d.configure(bootstrapConfig())
	// Upstream's cap: max(1, min(ceil(15% of nominal), nominal/handSize)), at most 10; 10
	// on a level without queues (catch-all rejects).
	for level, want := range map[string]int{"global-default": 8, "workload-low": 10, "catch-all": 10} {
		w, _ := d.enqueue(level, "fs", 0, "", 1<<20)
		if w == nil || w.seats != want {
			t.Errorf("a huge list at %s: %+v, want capped at %d seats", level, w, want)
		}
	}
}
