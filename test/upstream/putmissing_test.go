package upstream_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	"github.com/hacp/hacp/test/upstream/diffupstream"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

const putNamespace = "put-missing"

// putExtras are minimal objects of the kinds the golden corpus has none of (or none that fits
// the test namespace); their apiVersion is replaced by the version discovery prefers.
var putExtras = []string{
	`{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1.put.example.com"},
	  "spec":{"group":"put.example.com","version":"v1","groupPriorityMinimum":100,"versionPriority":10,
	  "service":{"namespace":"put-missing","name":"api"},"insecureSkipTLSVerify":true}}`,
	`{"apiVersion":"storage.k8s.io/v1","kind":"VolumeAttributesClass","metadata":{"name":"vac-minimal"},"driverName":"csi.example.com",
	  "parameters":{"iops":"100"}}`,
	`{"apiVersion":"v1","kind":"Event","metadata":{"name":"event-minimal"},"involvedObject":{"kind":"Pod","name":"p","namespace":"put-missing"},
	  "reason":"Tested","message":"m","type":"Normal","source":{"component":"put"}}`,
	`{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"eventv1-minimal"},"eventTime":"2026-01-02T03:04:05.000000Z",
	  "reportingController":"example.com/put","reportingInstance":"i","action":"Tested","reason":"Tested","type":"Normal",
	  "regarding":{"kind":"Pod","name":"p","namespace":"put-missing"}}`,
	`{"apiVersion":"resource.k8s.io/v1","kind":"DeviceTaintRule","metadata":{"name":"dtr-minimal"},
	  "spec":{"deviceSelector":{"driver":"dra.example.com"},"taint":{"key":"example.com/k","effect":"NoSchedule"}}}`,
	`{"apiVersion":"storagemigration.k8s.io/v1","kind":"StorageVersionMigration","metadata":{"name":"svm-minimal"},
	  "spec":{"resource":{"group":"apps","resource":"deployments"}}}`,
	`{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"dc-minimal"}}`,
	`{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"claim-minimal"},
	  "spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"dc-minimal"}}]}}}`,
	`{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":"claimtpl-minimal"},
	  "spec":{"spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"dc-minimal"}}]}}}}`,
	`{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"slice-minimal"},
	  "spec":{"driver":"dra.example.com","pool":{"name":"p","generation":1,"resourceSliceCount":1},"allNodes":true}}`,
	`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicy","metadata":{"name":"map-minimal"},
	  "spec":{"reinvocationPolicy":"Never","matchConstraints":{"resourceRules":[{"apiGroups":["put.example.com"],"apiVersions":["v1"],
	  "operations":["CREATE"],"resources":["nothings"]}]},
	  "mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{}"}}]}}`,
	`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicyBinding","metadata":{"name":"mapb-minimal"},
	  "spec":{"policyName":"map-minimal"}}`,
}

// TestPutMissingAsKubeAPIServer: a PUT of a minimal object to a name that does not exist gets
// the same answer from hacp as from kube-apiserver (upstream.KubernetesVersion), for every
// built-in resource both serve with the update verb: code, reason and message, whether the
// object then exists, and, when it was created, the same object as a POST makes (metadata
// the servers fill in, managedFields by manager and operation). The same for a PUT that
// carries a resourceVersion or a uid, for a PUT of the status subresource of a missing
// object, and for a server-side apply of the object and of its status (an apply creates,
// through status only where upstream's status storage lets it). No resource is skipped: each has a minimal object kube-apiserver accepts in a POST.
// Last, a Role created by PUT is held to RBAC's escalation check as one created by POST.
func TestPutMissingAsKubeAPIServer(t *testing.T) {
	bin := upstream.Binary(t, "kube-apiserver")
	etcd := etcdtest.Start(t)
	kasConfig := startRBACKubeAPIServer(t, bin, etcd.ClientURL())
	hacp := servertest.New(t, nil)
	kube := newPutTarget(t, kasConfig)
	ours := newPutTarget(t, servertest.RestConfig(t, hacp))
	objs := putObjects(t)
	for _, r := range commonUpdatable(t, kube, ours) {
		obj, ok := objs[schema.GroupKind{Group: r.gvr.Group, Kind: r.kind}.String()]
		if !ok {
			t.Errorf("%s (%s): no minimal object: add one to putExtras", r.key(), r.kind)
			continue
		}
		if _, err := kube.postDryRun(r, obj); err != "" {
			t.Errorf("%s: kube-apiserver rejects a POST of the minimal object: %s", r.key(), err)
			continue
		}
		want, got := kube.putMissing(r, obj), ours.putMissing(r, obj)
		sameLines(t, r.key(), want, got)
	}
	sameLines(t, "escalation", putEscalation(t, kube, kasConfig), putEscalation(t, ours, servertest.RestConfig(t, hacp)))
}

// startRBACKubeAPIServer runs kube-apiserver as startKubeAPIServer does but authorizing
// with RBAC, as hacp does, so that RBAC's escalation check applies, and returns an admin
// client config.
func startRBACKubeAPIServer(t *testing.T, bin, etcdURL string) *rest.Config {
	t.Helper()
	dir, port := t.TempDir(), freePort(t)
	const token = "put-missing-admin"
	args, err := upstream.KubeAPIServerArgs(dir, etcdURL, port, token)
	if err != nil {
		t.Fatal(err)
	}
	args = slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, "--authorization-mode=") })
	p := startProc(t, dir, "kube-apiserver-put", bin, append(args, "--authorization-mode=RBAC")...)
	url := "https://127.0.0.1:" + port
	waitKubeReady(t, p, url, token)
	return &rest.Config{Host: url, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, BearerToken: token, QPS: 1000, Burst: 1000}
}

// sameLines logs kube-apiserver's answers (want) and fails on each of hacp's that differs.
func sameLines(t *testing.T, what string, want, got []string) {
	t.Helper()
	t.Logf("%s: kube-apiserver answers\n  %s", what, strings.Join(want, "\n  "))
	for i := range max(len(want), len(got)) {
		w, g := lineAt(want, i), lineAt(got, i)
		if w != g {
			t.Errorf("%s:\n  kube-apiserver: %s\n  hacp:           %s", what, w, g)
		}
	}
}

// putEscalation: user putter may write roles in the test namespace; a PUT creating a Role
// that grants what putter holds succeeds, one granting more is forbidden.
func putEscalation(t *testing.T, p *putTarget, admin *rest.Config) []string {
	t.Helper()
	grant := []string{
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"role-writer"},
		  "rules":[{"apiGroups":["rbac.authorization.k8s.io"],"resources":["roles"],"verbs":["get","create","update"]}]}`,
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"role-writer"},
		  "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"role-writer"},
		  "subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"putter"}]}`,
	}
	for i, res := range []string{"roles", "rolebindings"} {
		path := "/apis/rbac.authorization.k8s.io/v1/namespaces/" + putNamespace + "/" + res
		if code, out := p.do(http.MethodPost, path, []byte(grant[i])); code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", path, code, out)
		}
	}
	rc := rest.CopyConfig(admin)
	rc.Impersonate = rest.ImpersonationConfig{UserName: "putter"}
	putter := newPutTargetAs(t, rc)
	// The grant reaches the authorizer through its informers: wait until putter holds it.
	for _, verb := range []string{"get", "create", "update"} {
		ssar := fmt.Sprintf(`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":
		  {"namespace":%q,"verb":%q,"group":"rbac.authorization.k8s.io","resource":"roles"}}}`, putNamespace, verb)
		until(t, "putter may "+verb+" roles", func() error {
			code, body := putter.do(http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", []byte(ssar))
			if code != http.StatusCreated || !bytes.Contains(body, []byte(`"allowed":true`)) {
				return fmt.Errorf("%d %s", code, body)
			}
			return nil
		})
	}
	role := func(name, resource string) []byte {
		return []byte(fmt.Sprintf(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":%q},
		  "rules":[{"apiGroups":["rbac.authorization.k8s.io"],"resources":[%q],"verbs":["get"]}]}`, name, resource))
	}
	path := "/apis/rbac.authorization.k8s.io/v1/namespaces/" + putNamespace + "/roles/"
	var out []string
	for _, c := range []struct{ name, resource string }{{"held", "roles"}, {"escalating", "secrets"}} {
		code, body := putter.do(http.MethodPut, path+c.name, role(c.name, c.resource))
		getCode, _ := p.do(http.MethodGet, path+c.name, nil)
		out = append(out, fmt.Sprintf("PUT role %s: %s; then GET %d", c.name, describeAnswer(code, body), getCode))
	}
	return out
}

func lineAt(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(nothing)"
}

// putResource is one resource as discovery lists it.
type putResource struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	status     bool
}

func (r putResource) key() string {
	if r.gvr.Group == "" {
		return r.gvr.Resource
	}
	return r.gvr.Group + "/" + r.gvr.Resource
}

// path is the URL path of the object named name.
func (r putResource) path(name string) string {
	p := "/apis/" + r.gvr.Group + "/" + r.gvr.Version
	if r.gvr.Group == "" {
		p = "/api/" + r.gvr.Version
	}
	if r.namespaced {
		p += "/namespaces/" + putNamespace
	}
	return p + "/" + r.gvr.Resource + "/" + name
}

// putTarget is one server under test.
type putTarget struct {
	t    *testing.T
	host string
	hc   *http.Client
	res  map[string]putResource
}

// newPutTarget is the server rc reaches, its updatable resources discovered and the test
// namespace made.
func newPutTarget(t *testing.T, rc *rest.Config) *putTarget {
	t.Helper()
	p := newPutTargetAs(t, rc)
	p.discover(rc)
	ns := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + putNamespace + `"}}`
	sa := `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}`
	for _, w := range [][2]string{{"/api/v1/namespaces", ns}, {"/api/v1/namespaces/" + putNamespace + "/serviceaccounts", sa}} {
		path, body := w[0], w[1]
		// (hacp makes the default ServiceAccount itself.)
		if code, out := p.do(http.MethodPost, path, []byte(body)); code != http.StatusCreated && code != http.StatusConflict {
			t.Fatalf("POST %s: %d %s", path, code, out)
		}
	}
	return p
}

// newPutTargetAs is the server rc reaches, as rc's user.
func newPutTargetAs(t *testing.T, rc *rest.Config) *putTarget {
	t.Helper()
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	return &putTarget{t: t, host: strings.TrimSuffix(rc.Host, "/"), hc: hc, res: map[string]putResource{}}
}

// discover keeps the resources of every group's preferred version whose verbs include
// update, and notes which have a status subresource.
func (p *putTarget) discover(rc *rest.Config) {
	dc := discovery.NewDiscoveryClientForConfigOrDie(rc)
	groups, err := dc.ServerGroups()
	if err != nil {
		p.t.Fatal(err)
	}
	for _, g := range groups.Groups {
		list, err := dc.ServerResourcesForGroupVersion(g.PreferredVersion.GroupVersion)
		if err != nil {
			p.t.Fatal(err)
		}
		gv, _ := schema.ParseGroupVersion(list.GroupVersion)
		for _, ar := range list.APIResources {
			base, sub, _ := strings.Cut(ar.Name, "/")
			if sub == "" && slices.Contains(ar.Verbs, "update") {
				r := p.res[gv.Group+"/"+base]
				r.gvr, r.kind, r.namespaced = gv.WithResource(base), ar.Kind, ar.Namespaced
				p.res[gv.Group+"/"+base] = r
			}
		}
		for _, ar := range list.APIResources {
			if base, sub, _ := strings.Cut(ar.Name, "/"); sub == "status" && slices.Contains(ar.Verbs, "update") {
				if r, ok := p.res[gv.Group+"/"+base]; ok {
					r.status = true
					p.res[gv.Group+"/"+base] = r
				}
			}
		}
	}
}

// commonUpdatable are the resources both servers serve with update, in a stable order; a
// resource one serves and the other does not is logged.
func commonUpdatable(t *testing.T, kube, ours *putTarget) []putResource {
	t.Helper()
	var out []putResource
	for k, r := range kube.res {
		o, ok := ours.res[k]
		switch {
		case !ok:
			t.Logf("%s: only kube-apiserver serves it with update", k)
		case o.gvr != r.gvr || o.status != r.status || o.namespaced != r.namespaced:
			t.Errorf("%s: discovery differs: kube-apiserver %+v, hacp %+v", k, r, o)
		default:
			out = append(out, r)
		}
	}
	for k := range ours.res {
		if _, ok := kube.res[k]; !ok {
			t.Logf("%s: only hacp serves it with update", k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}

// putObjects are putExtras and the golden corpus's objects, the first of each kind, by group
// and kind.
func putObjects(t *testing.T) map[string]*unstructured.Unstructured {
	t.Helper()
	corpus, err := diffupstream.ReadObjects(filepath.Join("testdata", "golden", "corpus.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, s := range append(putExtras, clusterTrustBundle(t), podCertificateRequest(t)) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(s)); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	objs = append(objs, corpus...)
	out := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		key := u.GroupVersionKind().GroupKind().String()
		if _, ok := out[key]; !ok {
			u.SetNamespace("")
			out[key] = u
		}
	}
	return out
}

// do sends one request and answers the code and body.
func (p *putTarget) do(method, path string, body []byte) (int, []byte) {
	return p.doType(method, path, "application/json", body)
}

// doType sends one request with a body of content type ctype.
func (p *putTarget) doType(method, path, ctype string, body []byte) (int, []byte) {
	req, err := http.NewRequest(method, p.host+path, bytes.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Accept", "application/json")
	resp, err := p.hc.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatal(err)
	}
	return resp.StatusCode, out
}

// named is obj under another name, in the test namespace when r is namespaced.
func named(r putResource, obj *unstructured.Unstructured, name string) []byte {
	u := obj.DeepCopy()
	u.SetName(name)
	u.SetAPIVersion(r.gvr.GroupVersion().String())
	if r.namespaced {
		u.SetNamespace(putNamespace)
	}
	b, err := u.MarshalJSON()
	if err != nil {
		panic(err)
	}
	return b
}

// altName is a second, third... name for obj: an IPAddress is named by its address.
func altName(obj *unstructured.Unstructured, n int) string {
	if obj.GetKind() == "IPAddress" {
		return fmt.Sprintf("192.168.77.%d", 10+n)
	}
	return fmt.Sprintf("%s-%d", obj.GetName(), n)
}

// postDryRun is the server's answer to a dry-run POST of obj, or its error.
func (p *putTarget) postDryRun(r putResource, obj *unstructured.Unstructured) (map[string]any, string) {
	path := strings.TrimSuffix(r.path(""), "/") + "?dryRun=All"
	code, body := p.do(http.MethodPost, path, named(r, obj, obj.GetName()))
	if code != http.StatusCreated {
		return nil, describeAnswer(code, body)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		p.t.Fatal(err)
	}
	return m, ""
}

// putMissing PUTs obj to names that do not exist, plainly, with a resourceVersion, with a
// uid, and to the status subresource, and describes each answer and what it left.
func (p *putTarget) putMissing(r putResource, obj *unstructured.Unstructured) []string {
	posted, _ := p.postDryRun(r, obj)
	out := []string{"PUT: " + p.putAndLook(r, obj.GetName(), "", named(r, obj, obj.GetName()), posted)}
	withRV := obj.DeepCopy()
	withRV.SetResourceVersion("12345")
	name := altName(obj, 1)
	out = append(out, "PUT with resourceVersion: "+p.putAndLook(r, name, "", named(r, withRV, name), nil))
	withUID := obj.DeepCopy()
	withUID.SetUID("0b5fa8f4-5b8f-4f5e-a1a2-000000000001")
	name = altName(obj, 2)
	out = append(out, "PUT with uid: "+p.putAndLook(r, name, "", named(r, withUID, name), nil))
	name = altName(obj, 4)
	out = append(out, "PUT dry run: "+p.putAndLook(r, name, "?dryRun=All", named(r, obj, name), nil))
	name = altName(obj, 5)
	out = append(out, "APPLY: "+p.applyAndLook(r, name, "", named(r, obj, name)))
	if r.status {
		name = altName(obj, 3)
		out = append(out, "PUT status: "+p.putAndLook(r, name, "/status", named(r, obj, name), nil))
		// Server-side apply creates a missing object, but never through a subresource.
		name = altName(obj, 6)
		out = append(out, "APPLY status: "+p.applyAndLook(r, name, "/status", named(r, obj, name)))
	}
	return out
}

// applyAndLook server-side applies body to name (suffix: a subresource) and describes the
// answer and whether the object then exists.
func (p *putTarget) applyAndLook(r putResource, name, suffix string, body []byte) string {
	code, answer := p.doType(http.MethodPatch, r.path(name)+suffix+"?fieldManager=putmissing", "application/apply-patch+yaml", body)
	out := describeAnswer(code, answer)
	getCode, _ := p.do(http.MethodGet, r.path(name), nil)
	return out + fmt.Sprintf("; then GET %d", getCode)
}

// putAndLook PUTs body to name (suffix: a subresource or a query) and describes the answer, whether the object then
// exists and, when posted is given, how the created object differs from the POST's.
func (p *putTarget) putAndLook(r putResource, name, suffix string, body []byte, posted map[string]any) string {
	code, answer := p.do(http.MethodPut, r.path(name)+suffix, body)
	out := describeAnswer(code, answer)
	getCode, got := p.do(http.MethodGet, r.path(name), nil)
	out += fmt.Sprintf("; then GET %d", getCode)
	if getCode != http.StatusOK {
		return out
	}
	var m map[string]any
	if err := json.Unmarshal(got, &m); err != nil {
		p.t.Fatal(err)
	}
	out += " " + describeCreated(m)
	if posted != nil {
		for _, d := range diffupstream.DiffPaths("", diffupstream.NormalizeGolden(posted), diffupstream.NormalizeGolden(m)) {
			out += fmt.Sprintf(" [POST has %s=%s, PUT %s]", d.Path, d.Want, d.Got)
		}
	}
	return out
}

// describeAnswer is the code, and for an error its reason, message and causes.
func describeAnswer(code int, body []byte) string {
	if code < 300 {
		return fmt.Sprint(code)
	}
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		return fmt.Sprintf("%d %s", code, body)
	}
	out := fmt.Sprintf("%d %s %q", code, st.Reason, st.Message)
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			out += fmt.Sprintf(" [%s %q %q]", c.Type, c.Field, c.Message)
		}
	}
	return out
}

// describeCreated says which metadata the server filled in and how managedFields record the
// write.
func describeCreated(m map[string]any) string {
	md, _ := m["metadata"].(map[string]any)
	var out []string
	for _, f := range []string{"uid", "creationTimestamp", "resourceVersion", "generation"} {
		if md[f] != nil && md[f] != "" {
			out = append(out, f)
		}
	}
	mfs, _ := md["managedFields"].([]any)
	for _, mf := range mfs {
		e, _ := mf.(map[string]any)
		out = append(out, fmt.Sprintf("managed(%v %v %v %v)", e["manager"], e["operation"], e["apiVersion"], e["subresource"]))
	}
	return strings.Join(out, " ")
}

// clusterTrustBundle is a ClusterTrustBundle of a fresh self-signed CA.
func clusterTrustBundle(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "put-missing-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pemText := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	b, err := json.Marshal(map[string]any{"apiVersion": "certificates.k8s.io/v1beta1", "kind": "ClusterTrustBundle",
		"metadata": map[string]any{"name": "ctb-minimal"}, "spec": map[string]any{"trustBundle": pemText}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// podCertificateRequest is a PodCertificateRequest with a stub PKCS#10 request of an Ed25519
// key, as kubelet sends.
func podCertificateRequest(t *testing.T) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, priv)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"apiVersion": "certificates.k8s.io/v1beta1", "kind": "PodCertificateRequest",
		"metadata": map[string]any{"name": "pcr-minimal"},
		"spec": map[string]any{"signerName": "example.com/signer", "podName": "p", "podUID": "7d1c5b6e-0000-4000-8000-000000000001",
			"serviceAccountName": "default", "serviceAccountUID": "7d1c5b6e-0000-4000-8000-000000000002",
			"nodeName": "n1", "nodeUID": "7d1c5b6e-0000-4000-8000-000000000003", "maxExpirationSeconds": 86400,
			"stubPKCS10Request": csr}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
