package upstream_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
)

// authzRequest is one request of the corpus: who sends it and what.
type authzRequest struct {
	identity    string
	method      string
	path        string
	query       string
	body        string
	contentType string
	headers     [][2]string
}

// target is the request's path and query string.
func (r authzRequest) target() string {
	if r.query == "" {
		return r.path
	}
	return r.path + "?" + r.query
}

// streams reports whether a 200 answer may be a stream that does not end by itself (a
// watch, in any spelling): its body is not read.
func (r authzRequest) streams() bool {
	return strings.Contains(r.path, "/watch") || strings.HasPrefix(r.query, "watch") || strings.Contains(r.query, "&watch") ||
		strings.Contains(r.path, "/proxy") || strings.HasSuffix(r.path, "/log")
}

// authzResource is an API resource the corpus names, served or not.
type authzResource struct {
	group, version, resource, kind string
	namespaced                     bool
	subresources                   []string
}

func (r authzResource) prefix() string {
	if r.group == "" {
		return "/api/" + r.version
	}
	return "/apis/" + r.group + "/" + r.version
}

func (r authzResource) apiVersion() string {
	if r.group == "" {
		return r.version
	}
	return r.group + "/" + r.version
}

// authzHot is how many of authzResources' first entries the corpus draws more often: those
// some caller holds rights on.
const authzHot = 11

// authzResources are core and group resources, namespaced and cluster-scoped, with their
// subresources, and some that no server serves.
var authzResources = []authzResource{
	{"", "v1", "pods", "Pod", true, []string{"status", "log", "exec", "attach", "portforward", "proxy", "binding", "eviction", "ephemeralcontainers", "resize"}},
	{"", "v1", "configmaps", "ConfigMap", true, nil},
	{"", "v1", "secrets", "Secret", true, nil},
	{"", "v1", "serviceaccounts", "ServiceAccount", true, []string{"token"}},
	{"", "v1", "services", "Service", true, []string{"status", "proxy"}},
	{"", "v1", "nodes", "Node", false, []string{"status", "proxy"}},
	{"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, []string{"status"}},
	{"", "v1", "events", "Event", true, nil},
	{"coordination.k8s.io", "v1", "leases", "Lease", true, nil},
	{"apps", "v1", "deployments", "Deployment", true, []string{"scale", "status"}},
	{"storage.k8s.io", "v1", "csinodes", "CSINode", false, nil},
	{"", "v1", "endpoints", "Endpoints", true, nil},
	{"", "v1", "replicationcontrollers", "ReplicationController", true, []string{"scale", "status"}},
	{"", "v1", "resourcequotas", "ResourceQuota", true, []string{"status"}},
	{"", "v1", "limitranges", "LimitRange", true, nil},
	{"", "v1", "podtemplates", "PodTemplate", true, nil},
	{"", "v1", "namespaces", "Namespace", false, []string{"status", "finalize"}},
	{"", "v1", "persistentvolumes", "PersistentVolume", false, []string{"status"}},
	{"", "v1", "componentstatuses", "ComponentStatus", false, nil},
	{"", "v1", "widgets", "Widget", true, nil},
	{"apps", "v1", "statefulsets", "StatefulSet", true, []string{"scale"}},
	{"apps", "v1", "daemonsets", "DaemonSet", true, []string{"status"}},
	{"apps", "v1", "replicasets", "ReplicaSet", true, []string{"scale"}},
	{"apps", "v1", "controllerrevisions", "ControllerRevision", true, nil},
	{"batch", "v1", "jobs", "Job", true, []string{"status"}},
	{"batch", "v1", "cronjobs", "CronJob", true, nil},
	{"autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, nil},
	{"policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true, []string{"status"}},
	{"networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", true, nil},
	{"networking.k8s.io", "v1", "ingresses", "Ingress", true, []string{"status"}},
	{"networking.k8s.io", "v1", "ingressclasses", "IngressClass", false, nil},
	{"rbac.authorization.k8s.io", "v1", "roles", "Role", true, nil},
	{"rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true, nil},
	{"rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false, nil},
	{"rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", false, nil},
	{"certificates.k8s.io", "v1", "certificatesigningrequests", "CertificateSigningRequest", false, []string{"approval", "status"}},
	{"storage.k8s.io", "v1", "storageclasses", "StorageClass", false, nil},
	{"storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", false, []string{"status"}},
	{"authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", false, nil},
	{"authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", false, nil},
	{"authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", false, nil},
	{"authorization.k8s.io", "v1", "localsubjectaccessreviews", "LocalSubjectAccessReview", true, nil},
	{"authentication.k8s.io", "v1", "tokenreviews", "TokenReview", false, nil},
	{"authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", false, nil},
	{"discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true, nil},
	{"events.k8s.io", "v1", "events", "Event", true, nil},
	{"apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", false, []string{"status"}},
	{"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", false, nil},
	{"apiregistration.k8s.io", "v1", "apiservices", "APIService", false, []string{"status"}},
	{"flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "FlowSchema", false, []string{"status"}},
	{"scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false, nil},
	{"node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", false, nil},
	{"example.com", "v1", "widgets", "Widget", true, []string{"status"}},
	{"apps", "v1", "nonsense", "Nonsense", false, nil},
}

// authzNonResource are non-resource URLs and paths that name no resource at all.
var authzNonResource = []string{
	"/", "/healthz", "/healthz/etcd", "/livez", "/livez/ping", "/readyz", "/readyz/ping", "/version", "/version/",
	"/metrics", "/metrics/slis", "/openapi/v2", "/openapi/v3", "/openapi/v3/api/v1", "/openapi/v3/apis/apps/v1",
	"/api", "/api/v1", "/apis", "/apis/", "/apis/apps", "/apis/apps/v1", "/apis/example.com/v1",
	"/.well-known/openid-configuration", "/openid/v1/jwks", "/logs", "/logs/", "/debug/pprof/", "/debug/pprof/heap",
	"/debug/flags/v", "/swagger.json", "/ui", "/random/garbage", "/apis/foo", "/api/v2/pods",
}

// authzOddPaths are resource paths written oddly: empty segments, dots, escaped slashes,
// trailing slashes, extra segments.
var authzOddPaths = []string{
	"//api/v1/namespaces/diff-a/secrets", "/api/v1/namespaces/diff-a/secrets/", "/api/v1/namespaces/diff-a/configmaps/../secrets",
	"/api/v1/namespaces/diff-a/secrets%2Fs1", "/api/v1/namespaces//configmaps", "/api/v1/namespaces/diff-a/pods/p1/log/extra",
	"/api/v1/namespaces/diff-a/configmaps/cm1/status/x/y", "/api/v1/watch", "/api/v1/watch/namespaces/diff-a/secrets/s1",
	"/api/v1/proxy/namespaces/diff-a/pods/p1", "/api/v1/proxy/nodes/n1", "/api/v1/nodes/n1/proxy/configz",
	"/api/v1/namespaces/diff-a", "/api/v1/namespaces/diff-a/status", "/api/v1/namespaces/diff-a/finalize",
	"/apis/rbac.authorization.k8s.io/v1/namespaces/diff-a/rolebindings/viewer/status", "/api/v1/namespaces/DIFF-A/secrets",
	"/api/v1/namespaces/diff-a/secrets/s1/", "/api/v1/namespaces/diff-a/secrets/.", "/api/v1/namespaces/diff-a/secrets/..",
}

// authzQueries are the query parameters a request may carry (each spelling of watch among
// them).
var authzQueries = []string{
	"watch", "watch=true", "watch=yes", "watch=1", "watch=f", "watch=0", "watch=false", "watch=TRUE", "watch=",
	"labelSelector=a%3Db", "fieldSelector=metadata.name%3Dcm1", "fieldSelector=metadata.name%3Ds1",
	"fieldSelector=spec.nodeName%3Dn1", "fieldSelector=spec.nodeName%3Dn2", "fieldSelector=metadata.name%3Dn1",
	"fieldSelector=metadata.name%3Dcm2", "fieldSelector=spec.nodeName%3D%3Dn1", "dryRun=All", "resourceVersion=0",
	"fieldManager=authzdiff", "timeoutSeconds=1", "limit=1", "allowWatchBookmarks=true",
}

var (
	authzNamespaces = []string{authzNSA, authzNSA, authzNSA, authzNSB, authzNSB, "kube-system", "kube-node-lease", "default", "nope"}
	authzNames      = []string{"cm1", "cm2", "s1", "s2", "p1", "p2", "sa1", "n1", "n2", "default", "x1", "x2", "pvc1", "diff-a"}
	authzMethods    = []string{
		http.MethodGet, http.MethodGet, http.MethodGet, http.MethodGet, http.MethodGet, http.MethodPost, http.MethodPost,
		http.MethodPut, http.MethodPatch, http.MethodPatch, http.MethodDelete, http.MethodDelete, http.MethodHead, http.MethodOptions,
	}
)

// authzCorpus returns the targeted probes followed by n requests drawn from a generator
// seeded with seed: the same list on every run.
func authzCorpus(seed uint64, n int) []authzRequest {
	rng := rand.New(rand.NewPCG(seed, seed))
	out := append(authzProbes(), authzEscalationProbes()...)
	for range n {
		out = append(out, randomAuthzRequest(rng))
	}
	return out
}

// authzProbes are requests that must be in every run whatever the generator draws: each
// watch spelling against a caller allowed list but not watch, the node's graph, a name
// given by field selector, the ServiceAccount outside its binding.
func authzProbes() []authzRequest {
	var out []authzRequest
	for _, q := range []string{"watch", "watch=true", "watch=yes", "watch=1", "watch=f", "watch=0", "watch=false", "watch=", "watch=TRUE"} {
		out = append(out, authzRequest{identity: "lister", method: http.MethodGet, path: "/api/v1/namespaces/diff-a/configmaps", query: q})
	}
	post := func(id, path, q, body string) authzRequest {
		return authzRequest{identity: id, method: http.MethodPost, path: path, query: q, body: body, contentType: "application/json"}
	}
	out = append(out,
		get("lister", "/api/v1/watch/namespaces/diff-a/configmaps", ""),
		get("lister", "/api/v1/namespaces/diff-a/secrets", "fieldSelector=metadata.name%3Ds1"),
		get("lister", "/api/v1/namespaces/diff-a/secrets/s2", ""),
		authzRequest{identity: "lister", method: http.MethodDelete, path: "/api/v1/namespaces/diff-a/configmaps", query: "fieldSelector=metadata.name%3Dcm2&dryRun=All"},
		get("node", "/api/v1/namespaces/diff-a/secrets/s1", ""),
		get("node", "/api/v1/namespaces/diff-a/secrets/s2", ""),
		get("node", "/api/v1/namespaces/diff-b/secrets/s2", ""),
		get("node", "/api/v1/namespaces/diff-a/persistentvolumeclaims/pvc1", ""),
		get("node", "/api/v1/pods", "fieldSelector=spec.nodeName%3Dn1"),
		get("node", "/api/v1/pods", ""),
		get("node", "/api/v1/nodes/n2", ""),
		get("sa", "/api/v1/namespaces/diff-a/secrets", ""),
		get("viewer", "/api/v1/namespaces/diff-a/secrets", ""),
		get("viewer", "/api/v1/namespaces/diff-b/configmaps", ""),
		get("anonymous", "/api/v1/namespaces/diff-a/configmaps", "watch=yes"),
		post("node", "/apis/storage.k8s.io/v1/csinodes", "", `{"apiVersion":"storage.k8s.io/v1","kind":"CSINode","metadata":{"name":"n2"},"spec":{"drivers":[]}}`),
		post("node", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", "", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"n2"}}`),
		get("nobody", "/openid/v1/jwks", ""),
		get("anonymous", "/.well-known/openid-configuration", ""),
	)
	return out
}

// authzEscalationProbes are RBAC writes (dry runs, so that no cache has to catch up) and
// impersonations: what a namespace admin may grant and whom callers may become.
func authzEscalationProbes() []authzRequest {
	const rbac = "/apis/rbac.authorization.k8s.io/v1"
	binding := func(ns, kind, role string) string {
		return fmt.Sprintf(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"%sBinding","metadata":{"name":"probe"%s},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":%q,"name":%q},"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"nobody"}]}`,
			map[bool]string{true: "Role", false: "ClusterRole"}[ns != ""], map[bool]string{true: `,"namespace":"` + ns + `"`, false: ""}[ns != ""], kind, role)
	}
	role := func(kind, rules string) string {
		return fmt.Sprintf(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":%q,"metadata":{"name":"probe"},"rules":[%s]}`, kind, rules)
	}
	post := func(id, path, body string) authzRequest {
		return authzRequest{identity: id, method: http.MethodPost, path: path, query: "dryRun=All", body: body, contentType: "application/json"}
	}
	as := func(id, path string, h ...string) authzRequest {
		return authzRequest{identity: id, method: http.MethodGet, path: path, headers: [][2]string{{h[0], h[1]}}}
	}
	nsB := rbac + "/namespaces/diff-b"
	return []authzRequest{
		post("nsadmin", nsB+"/rolebindings", binding("diff-b", "ClusterRole", "view")),
		post("nsadmin", nsB+"/rolebindings", binding("diff-b", "ClusterRole", "admin")),
		post("nsadmin", nsB+"/rolebindings", binding("diff-b", "ClusterRole", "cluster-admin")),
		post("nsadmin", nsB+"/rolebindings", binding("diff-b", "ClusterRole", "system:node")),
		post("nsadmin", nsB+"/rolebindings", binding("diff-b", "Role", "missing")),
		post("nsadmin", rbac+"/namespaces/diff-a/rolebindings", binding("diff-a", "ClusterRole", "view")),
		post("nsadmin", rbac+"/clusterrolebindings", binding("", "ClusterRole", "view")),
		post("nsadmin", nsB+"/roles", role("Role", `{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}`)),
		post("nsadmin", nsB+"/roles", role("Role", `{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}`)),
		post("nsadmin", nsB+"/roles", role("Role", `{"apiGroups":[""],"resources":["nodes"],"verbs":["get"]}`)),
		post("nsadmin", nsB+"/roles", role("Role", `{"apiGroups":["rbac.authorization.k8s.io"],"resources":["roles"],"verbs":["escalate","bind"]}`)),
		post("nsadmin", rbac+"/clusterroles", role("ClusterRole", `{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}`)),
		post("sa", nsB+"/rolebindings", binding("diff-b", "ClusterRole", "view")),
		post("sacert", nsB+"/roles", role("Role", `{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}`)),
		as("nsadmin", "/api/v1/namespaces/diff-b/secrets", "Impersonate-User", "system:serviceaccount:diff-b:default"),
		as("nsadmin", "/api/v1/namespaces/diff-b/secrets", "Impersonate-User", "system:serviceaccount:diff-a:sa1"),
		as("nsadmin", "/api/v1/namespaces/diff-b/secrets", "Impersonate-User", "viewer"),
		as("nsadmin", "/api/v1/namespaces/diff-b/secrets", "Impersonate-Group", "system:masters"),
		as("viewer", "/api/v1/namespaces/diff-a/secrets", "Impersonate-User", "admin"),
		as("nobody", "/api/v1/namespaces/diff-a/secrets", "Impersonate-Group", "system:masters"),
		as("sa", "/api/v1/namespaces/diff-b/secrets", "Impersonate-User", "system:serviceaccount:diff-b:default"),
		as("node", "/api/v1/nodes/n2", "Impersonate-User", "system:node:n2"),
		as("anonymous", "/api/v1/namespaces", "Impersonate-User", "admin"),
		get("crosstoken", "/api/v1/namespaces/diff-b/configmaps", ""),
		get("sacert", "/api/v1/namespaces/diff-b/configmaps", ""),
		get("emptynode", "/api/v1/namespaces/diff-a/secrets/s1", ""),
		get("fakenode", "/api/v1/namespaces/diff-a/secrets/s1", ""),
	}
}

// get is a GET of path?q as id.
func get(id, path, q string) authzRequest {
	return authzRequest{identity: id, method: http.MethodGet, path: path, query: q}
}

// randomAuthzRequest draws one request: a caller, a method, a path (a resource path most
// of the time), a query string and a body that fits the method.
func randomAuthzRequest(rng *rand.Rand) authzRequest {
	r := authzRequest{identity: randomIdentity(rng), method: pick(rng, authzMethods)}
	if rng.IntN(20) == 0 {
		r.headers = [][2]string{pick2(rng, authzImpersonation)}
	}
	var res *authzResource
	switch p := rng.IntN(100); {
	case p < 40:
		// The resources the callers hold rights on, or the node's graph reaches.
		rs := authzResources[rng.IntN(authzHot)]
		res = &rs
		r.path = randomResourcePath(rng, rs)
	case p < 70:
		rs := authzResources[rng.IntN(len(authzResources))]
		res = &rs
		r.path = randomResourcePath(rng, rs)
	case p < 78:
		rs := authzResources[rng.IntN(len(authzResources))]
		res = &rs
		r.path = randomWatchPath(rng, rs)
	case p < 90:
		r.path = pick(rng, authzNonResource)
		if rng.IntN(3) > 0 {
			r.method = pick(rng, []string{http.MethodGet, http.MethodGet, http.MethodHead})
		}
	default:
		r.path = pick(rng, authzOddPaths)
	}
	r.query = randomQuery(rng)
	r.body, r.contentType = randomBody(rng, r, res)
	return r
}

func pick(rng *rand.Rand, from []string) string { return from[rng.IntN(len(from))] }

func pick2(rng *rand.Rand, from [][2]string) [2]string { return from[rng.IntN(len(from))] }

// randomIdentity draws a caller that sends random requests.
func randomIdentity(rng *rand.Rand) string {
	for {
		if id := authzIdentities[rng.IntN(len(authzIdentities))]; !id.probesOnly {
			return id.name
		}
	}
}

// authzImpersonation are the Impersonate-* headers a random request may carry.
var authzImpersonation = [][2]string{
	{"Impersonate-User", "admin"}, {"Impersonate-User", "viewer"}, {"Impersonate-User", "system:serviceaccount:diff-b:default"},
	{"Impersonate-User", "system:node:n1"}, {"Impersonate-Group", "system:masters"}, {"Impersonate-Uid", "1"},
	{"Impersonate-Extra-Scopes", "view"},
}

// randomResourcePath names a collection (across namespaces or in one), an object or a
// subresource of rs.
func randomResourcePath(rng *rand.Rand, rs authzResource) string {
	p := rs.prefix()
	if rs.namespaced && rng.IntN(5) > 0 {
		p += "/namespaces/" + pick(rng, authzNamespaces)
	}
	p += "/" + rs.resource
	switch k := rng.IntN(10); {
	case k < 3:
		return p
	case k < 7 || len(rs.subresources) == 0:
		return p + "/" + pick(rng, authzNames)
	default:
		sub := pick(rng, slices.Concat(rs.subresources, []string{"bogus"}))
		return p + "/" + pick(rng, authzNames) + "/" + sub
	}
}

// randomWatchPath is the legacy /watch/ prefix form of a collection or an object.
func randomWatchPath(rng *rand.Rand, rs authzResource) string {
	p := rs.prefix() + "/watch"
	if rs.namespaced && rng.IntN(3) > 0 {
		p += "/namespaces/" + pick(rng, authzNamespaces)
	}
	p += "/" + rs.resource
	if rng.IntN(3) == 0 {
		p += "/" + pick(rng, authzNames)
	}
	return p
}

// randomQuery is no query half the time, else one or two parameters.
func randomQuery(rng *rand.Rand) string {
	if rng.IntN(2) == 0 {
		return ""
	}
	q := pick(rng, authzQueries)
	if rng.IntN(3) == 0 {
		q += "&" + pick(rng, authzQueries)
	}
	return q
}

// randomBody is a body for POST, PUT and PATCH: a small valid object of the resource (or
// the subresource's own kind) where that is cheap, a patch of its labels, or {}.
func randomBody(rng *rand.Rand, r authzRequest, res *authzResource) (body, contentType string) {
	switch r.method {
	case http.MethodPost, http.MethodPut:
	case http.MethodPatch:
		switch rng.IntN(4) {
		case 0:
			return `[{"op":"add","path":"/metadata/labels","value":{"authzdiff":"1"}}]`, "application/json-patch+json"
		case 1:
			return `{"metadata":{"labels":{"authzdiff":"1"}}}`, "application/strategic-merge-patch+json"
		default:
			return `{"metadata":{"labels":{"authzdiff":"1"}}}`, "application/merge-patch+json"
		}
	default:
		return "", ""
	}
	if res == nil || rng.IntN(6) == 0 {
		return "{}", "application/json"
	}
	parts := strings.Split(strings.TrimPrefix(r.path, res.prefix()+"/"), "/")
	name := pick(rng, []string{"x1", "x2", "cm1"})
	if i := indexOf(parts, res.resource); i >= 0 && i+1 < len(parts) {
		name = parts[i+1]
		if i+2 < len(parts) {
			return subresourceBody(parts[i+2], name), "application/json"
		}
	}
	return objectBody(*res, name), "application/json"
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// subresourceBody is the kind a subresource takes, or {}.
func subresourceBody(sub, name string) string {
	switch sub {
	case "eviction":
		return fmt.Sprintf(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":%q}}`, name)
	case "binding":
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":%q},"target":{"kind":"Node","name":"n1"}}`, name)
	case "token":
		return `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":3600}}`
	case "scale":
		return fmt.Sprintf(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":%q},"spec":{"replicas":2}}`, name)
	}
	return "{}"
}

// objectBody is a small object of rs named name; the kinds whose spec is required get one.
func objectBody(rs authzResource, name string) string {
	spec := ""
	switch rs.kind {
	case "ConfigMap":
		spec = `,"data":{"k":"v2"}`
	case "Secret":
		spec = `,"stringData":{"k":"v2"}`
	case "Pod":
		spec = `,"spec":{"containers":[{"name":"c","image":"busybox"}]}`
	case "Service":
		spec = `,"spec":{"ports":[{"port":80}]}`
	case "SelfSubjectAccessReview":
		spec = `,"spec":{"resourceAttributes":{"namespace":"diff-a","verb":"get","resource":"secrets"}}`
	case "SubjectAccessReview", "LocalSubjectAccessReview":
		spec = `,"spec":{"user":"viewer","resourceAttributes":{"namespace":"diff-a","verb":"get","resource":"secrets"}}`
	case "TokenReview":
		spec = `,"spec":{"token":"not-a-token"}`
	case "Lease":
		spec = `,"spec":{"holderIdentity":"n1"}`
	}
	return fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q}%s}`, rs.apiVersion(), rs.kind, name, spec)
}
