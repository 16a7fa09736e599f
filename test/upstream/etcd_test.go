// Package upstream_test runs upstream Kubernetes programs, built from their Go modules by
// internal/upstream, against hacp.
package upstream_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	"github.com/hacp/hacp/test/upstream/diffupstream"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// samples are manifests for the kinds an object with only a name is not valid for, by
// "resource.group"; {{name}} is the object's name. Every other kind of controlplane.Kinds() is
// created with metadata only.
var samples = map[string]string{
	"pods": `{"spec":{"containers":[{"name":"c","image":"nginx:1.27","ports":[{"containerPort":80}],
		"env":[{"name":"A","value":"b"}],"resources":{"limits":{"cpu":"100m","memory":"64Mi"}}}]}}`,
	"services":  `{"spec":{"selector":{"app":"{{name}}"},"ports":[{"name":"http","port":80,"targetPort":8080}]}}`,
	"endpoints": `{"subsets":[{"addresses":[{"ip":"10.77.1.1"}],"ports":[{"name":"http","port":8080}]}]}`,
	"events": `{"involvedObject":{"kind":"Pod","name":"p","namespace":"default"},"reason":"Tested","message":"m",
		"type":"Normal","source":{"component":"interop"},"count":1,
		"firstTimestamp":"2026-01-02T03:04:05Z","lastTimestamp":"2026-01-02T03:04:05Z"}`,
	"leases.coordination.k8s.io": `{"spec":{"holderIdentity":"me","leaseDurationSeconds":15}}`,
	"deployments.apps": `{"spec":{"replicas":2,"selector":{"matchLabels":{"app":"{{name}}"}},
		"template":{"metadata":{"labels":{"app":"{{name}}"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}}}`,
	"configmaps":      `{"data":{"k":"v"},"binaryData":{"b":"AAEC"}}`,
	"secrets":         `{"type":"Opaque","data":{"k":"djE="}}`,
	"nodes":           `{"metadata":{"labels":{"kubernetes.io/hostname":"{{name}}"}},"spec":{"podCIDR":"10.77.2.0/24"}}`,
	"serviceaccounts": `{"automountServiceAccountToken":false}`,
	// Kinds served since 1.34-1.37.
	"volumeattributesclasses.storage.k8s.io": `{"driverName":"disk.example.com","parameters":{"iops":"1000"}}`,
	"resourceclaims.resource.k8s.io":         `{"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.example.com"}}]}}}`,
	"resourceclaimtemplates.resource.k8s.io": `{"spec":{"spec":{"devices":{"requests":[{"name":"gpu",
		"exactly":{"deviceClassName":"gpu.example.com","allocationMode":"All"}}]}}}}`,
	"resourceslices.resource.k8s.io": `{"spec":{"driver":"gpu.example.com","pool":{"name":"n1","resourceSliceCount":1},"nodeName":"n1",
		"devices":[{"name":"gpu-0","attributes":{"model":{"string":"x1"}}}]}}`,
	"devicetaintrules.resource.k8s.io": `{"spec":{"deviceSelector":{"driver":"gpu.example.com"},
		"taint":{"key":"example.com/broken","value":"yes","effect":"NoSchedule","timeAdded":"2026-01-02T03:04:05Z"}}}`,
	"storageversionmigrations.storagemigration.k8s.io": `{"spec":{"resource":{"group":"apps","resource":"deployments"}}}`,
	"mutatingadmissionpolicies.admissionregistration.k8s.io": `{"spec":{"matchConstraints":{"resourceRules":[{"apiGroups":[""],
		"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},"reinvocationPolicy":"Never",
		"mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{metadata: Object.metadata{labels: {'a': 'b'}}}"}}]}}`,
	"mutatingadmissionpolicybindings.admissionregistration.k8s.io": `{"spec":{"policyName":"p"}}`,
}

// The samples that carry certificates: a CA for a ClusterTrustBundle, a stub PKCS#10 request
// for a PodCertificateRequest.
func init() {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "interop-ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	ca, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	bundle, _ := json.Marshal(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca})))
	samples["clustertrustbundles.certificates.k8s.io"] = `{"spec":{"trustBundle":` + string(bundle) + `}}`
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		panic(err)
	}
	stub, _ := json.Marshal(csr)
	samples["podcertificaterequests.certificates.k8s.io"] = `{"spec":{"signerName":"example.com/signer","podName":"p","podUID":"u1",
		"serviceAccountName":"default","serviceAccountUID":"u2","nodeName":"n1","nodeUID":"u3","maxExpirationSeconds":86400,
		"stubPKCS10Request":` + string(stub) + `}}`
}

// kind is one resource of controlplane.Kinds() as the test drives it.
type kind struct {
	gvr        schema.GroupVersionResource
	gvk        schema.GroupVersionKind
	namespaced bool
	keyRoot    string // below /registry/: upstream's, which differs from the resource for a few kinds
	json       bool   // stored as JSON by both (CustomResourceDefinitions), else protobuf
}

// encodedAsUpstream reports whether v is in the encoding kube-apiserver writes k in.
func (k kind) encodedAsUpstream(v []byte) bool {
	if k.json {
		return bytes.HasPrefix(v, []byte("{"))
	}
	return bytes.HasPrefix(v, []byte("k8s\x00"))
}

func (k kind) key() string {
	if k.gvr.Group == "" {
		return k.gvr.Resource
	}
	return k.gvr.Resource + "." + k.gvr.Group
}

// keyMismatch lists kinds hacp keeps under another etcd key than kube-apiserver does, so
// neither server would see the other's objects of them. None today: nodes, services,
// endpoints, replicationcontrollers and ingresses use upstream's key roots (Kind.KeyRoot).
var keyMismatch = map[string]bool{}

// readGaps are the fields of objects kube-apiserver wrote that hacp reads differently, by
// kind. Asserted, so a fix removes the entry. (Both apply their defaults when they decode a
// stored object: kube-apiserver stores a Job's labels and a claim's phase empty and fills
// them on read.)
var readGaps = map[string][]string{}

// unreadable are kinds kube-apiserver 1.37 stores at a version hacp does not decode:
// IPAddress and ServiceCIDR at networking.k8s.io/v1beta1 (GA in 1.33, stored as v1beta1 for
// one release so that a downgrade can read them). Asserted.
var unreadable = map[string]bool{}

// updateGap lists kinds whose objects written by kube-apiserver hacp reads but refuses to
// update (422), because hacp's defaulting is not upstream's yet (issue 13, part 2).
var updateGap = map[string]bool{}

func kinds(t *testing.T) []kind {
	var out []kind
	for _, k := range controlplane.Kinds() {
		if k.StorageOf != nil {
			continue // served from another kind's objects (autoscaling/v1 HPAs are v2's)
		}
		if keyMismatch[k.Plural] && k.Group == "" {
			t.Logf("not shared yet (etcd key differs from kube-apiserver's): %s", k.Plural)
			continue
		}
		out = append(out, kind{
			gvr:        k.GroupVersion().WithResource(k.Plural),
			gvk:        k.GVK(),
			namespaced: k.Namespaced,
			keyRoot:    cmp.Or(k.KeyRoot, k.Plural),
			json:       k.StorageJSON,
		})
	}
	return out
}

// objName is the name of the object of k that who ("kas" or "hacp") writes; IPAddresses are
// named by their address.
func (k kind) objName(who string) string {
	switch k.gvr.Resource {
	case "ipaddresses":
		return map[string]string{"kas": "10.77.200.10", "hacp": "10.77.200.11"}[who]
	case "customresourcedefinitions":
		return who + "widgets.golden.example.com" // plural.group
	case "apiservices":
		return "v1." + who + ".golden.example.com" // version.group
	}
	return "by-" + who + "-" + k.gvr.Resource
}

// manifest is the sample object of k named name (in namespace "default" when namespaced):
// from samples, else the first object of its kind in the golden corpus, else metadata only.
func manifest(t *testing.T, k kind, name string) *unstructured.Unstructured {
	t.Helper()
	obj := map[string]any{}
	if s, ok := samples[k.key()]; ok {
		if err := json.Unmarshal([]byte(strings.ReplaceAll(s, "{{name}}", name)), &obj); err != nil {
			t.Fatalf("sample of %s: %v", k.key(), err)
		}
	} else {
		for _, c := range readCorpus(t) {
			if c.GroupVersionKind() == k.gvk {
				obj = c.DeepCopy().Object
				break
			}
		}
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(k.gvk)
	u.SetName(name)
	if k.gvr.Resource == "customresourcedefinitions" {
		// Names follow metadata.name (plural.group); kinds differ within the group.
		plural := strings.SplitN(name, ".", 2)[0]
		_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"plural": plural, "singular": strings.TrimSuffix(plural, "s"),
			"kind": strings.ToUpper(plural[:1]) + strings.TrimSuffix(plural[1:], "s")}, "spec", "names")
	}
	if k.gvr.Resource == "apiservices" {
		// A local APIService of the group its name says (version.group).
		_ = unstructured.SetNestedMap(u.Object, map[string]any{"group": strings.TrimPrefix(name, "v1."), "version": "v1",
			"groupPriorityMinimum": int64(100), "versionPriority": int64(10)}, "spec")
	}
	if k.namespaced {
		u.SetNamespace("default")
	}
	return u
}

func (k kind) client(dc dynamic.Interface) dynamic.ResourceInterface {
	if k.namespaced {
		return dc.Resource(k.gvr).Namespace("default")
	}
	return dc.Resource(k.gvr)
}

// TestEtcdSharedWithKubeAPIServer: hacp takes over an etcd that kube-apiserver 1.37 wrote
// (objects of every kind hacp serves are read with the same content, listed and updated),
// and kube-apiserver takes it back (what hacp wrote, as protobuf, is read and updated).
func TestEtcdSharedWithKubeAPIServer(t *testing.T) {
	bin := upstream.Binary(t, "kube-apiserver")
	etcd := etcdtest.Start(t)
	ec, err := etcd.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ec.Close() })
	ctx := context.Background()
	ks := kinds(t)

	// 1. kube-apiserver writes one object of every kind.
	kas := startKubeAPIServer(t, bin, etcd.ClientURL())
	dc := dynamic.NewForConfigOrDie(kas.config)
	written := map[string]*unstructured.Unstructured{}
	for _, k := range ks {
		name := k.objName("kas")
		if _, err := k.client(dc).Create(ctx, manifest(t, k, name), metav1.CreateOptions{}); err != nil {
			t.Fatalf("kube-apiserver create %s: %v (add a sample manifest for it to samples)", k.key(), err)
		}
		got, err := k.client(dc).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// kube-apiserver's controllers accept a definition's names and establish it; hacp's
		// would do the same to one left half-way.
		written[k.key()] = settled(t, k, k.client(dc), got)
		if v := rawValue(t, ec, k, name); !k.encodedAsUpstream(v) {
			t.Fatalf("kube-apiserver stored %s as %.20q, not in the expected encoding", k.key(), v)
		}
	}
	kas.stop(t)

	// 2. hacp reads them with the same content, lists and updates them.
	hacp, hdc := startHacp(t, etcd.ClientURL())
	updated := map[string]*unstructured.Unstructured{}
	for _, k := range ks {
		name := k.objName("kas")
		got, err := k.client(hdc).Get(ctx, name, metav1.GetOptions{})
		if unreadable[k.key()] {
			if err == nil || !strings.Contains(err.Error(), "v1beta1") {
				t.Errorf("hacp get %s written by kube-apiserver: %v; if it reads now, remove it from unreadable", k.key(), err)
			}
			updated[k.key()] = written[k.key()]
			continue
		}
		if err != nil {
			t.Fatalf("hacp get %s written by kube-apiserver: %v", k.key(), err)
		}
		sameContent(t, "hacp get of "+k.key()+" written by kube-apiserver", written[k.key()], got, readGaps[k.key()]...)
		list, err := k.client(hdc).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("hacp list %s: %v", k.key(), err)
		}
		if !containsObject(list.Items, written[k.key()]) {
			t.Errorf("hacp list %s lacks %s written by kube-apiserver", k.key(), name)
		}
		u, err := addLabel(ctx, k.client(hdc), got, "hacp-updated")
		if updateGap[k.key()] {
			// Known gap: hacp's defaulting differs from upstream's, so its update
			// validation sees a changed spec. Asserted so the entry goes once fixed.
			if !apierrors.IsInvalid(err) {
				t.Errorf("hacp update of %s written by kube-apiserver: %v; if fixed, remove it from updateGap", k.key(), err)
			}
			t.Logf("known gap: hacp refuses to update %s written by kube-apiserver: %v", k.key(), err)
			updated[k.key()] = got
			continue
		}
		if err != nil {
			t.Fatalf("hacp update %s written by kube-apiserver: %v", k.key(), err)
		}
		updated[k.key()] = u
		if v := rawValue(t, ec, k, name); !k.encodedAsUpstream(v) {
			t.Errorf("hacp stored %s as %.20q, not as kube-apiserver does", k.key(), v)
		}
	}
	// ... and writes objects of its own.
	for _, k := range ks {
		name := k.objName("hacp")
		if _, err := k.client(hdc).Create(ctx, manifest(t, k, name), metav1.CreateOptions{}); err != nil {
			t.Fatalf("hacp create %s: %v", k.key(), err)
		}
		got, err := k.client(hdc).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		updated[k.key()+"/new"] = settled(t, k, k.client(hdc), got)
		if v := rawValue(t, ec, k, name); !k.encodedAsUpstream(v) {
			t.Errorf("hacp stored %s as %.20q, not as kube-apiserver does", k.key(), v)
		}
	}
	if err := hacp.Shutdown(); err != nil {
		t.Fatal(err)
	}

	// 3. kube-apiserver reads and updates what hacp wrote.
	kas = startKubeAPIServer(t, bin, etcd.ClientURL())
	dc = dynamic.NewForConfigOrDie(kas.config)
	for _, k := range ks {
		for _, c := range []struct {
			name, want string
			defaulted  bool // kube-apiserver's answer may add defaults to what hacp stored
		}{{k.objName("kas"), k.key(), false}, {k.objName("hacp"), k.key() + "/new", true}} {
			got, err := k.client(dc).Get(ctx, c.name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("kube-apiserver get %s %s written by hacp: %v", k.key(), c.name, err)
			}
			what := "kube-apiserver get of " + k.key() + " " + c.name + " written by hacp"
			if !c.defaulted {
				sameContent(t, what, updated[c.want], got)
			} else {
				// kube-apiserver defaults what it decodes from etcd, so an object hacp created
				// may come back with fields hacp does not default (yet); nothing hacp stored
				// may be lost or changed.
				var added []string
				if diff := subset("", updated[c.want].Object, got.Object, &added); diff != "" {
					t.Errorf("%s: %s", what, diff)
				}
				if len(added) > 0 {
					t.Logf("%s: kube-apiserver's defaults added %v", what, added)
				}
			}
			if _, err := addLabel(ctx, k.client(dc), got, "kas-updated"); err != nil {
				t.Errorf("kube-apiserver update %s %s written by hacp: %v", k.key(), c.name, err)
			}
		}
	}
	kas.stop(t)
}

// rawValue is the etcd value of an object, at upstream's key.
func rawValue(t *testing.T, ec *clientv3.Client, k kind, name string) []byte {
	t.Helper()
	key := "/registry/" + k.keyRoot + "/"
	if k.namespaced {
		key += "default/"
	}
	resp, err := ec.Get(context.Background(), key+name)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get %s: %v %v", key+name, resp, err)
	}
	return resp.Kvs[0].Value
}

func addLabel(ctx context.Context, c dynamic.ResourceInterface, obj *unstructured.Unstructured, label string) (*unstructured.Unstructured, error) {
	obj = obj.DeepCopy()
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[label] = "true"
	obj.SetLabels(l)
	return c.Update(ctx, obj, metav1.UpdateOptions{})
}

func containsObject(items []unstructured.Unstructured, want *unstructured.Unstructured) bool {
	for _, it := range items {
		if it.GetName() == want.GetName() && it.GetUID() == want.GetUID() && it.GetResourceVersion() == want.GetResourceVersion() {
			return true
		}
	}
	return false
}

// sameContent fails unless two servers' answers for one stored object are equal in every
// field: they decode the same etcd value at the same revision.
func sameContent(t *testing.T, what string, want, got *unstructured.Unstructured, gaps ...string) {
	t.Helper()
	// kube-apiserver answers `creationTimestamp: null` in embedded object metadata (pod
	// templates, claim templates), hacp omits it: the same stored value, a difference of JSON
	// output only.
	w, g := dropNullTimestamps(diffupstream.CopyJSON(want.Object)), dropNullTimestamps(diffupstream.CopyJSON(got.Object))
	var diffs []diffupstream.FieldDiff
	if !equality.Semantic.DeepEqual(w, g) {
		diffs = diffupstream.DiffPaths("", w, g)
	}
	for _, d := range diffs {
		if !slices.Contains(gaps, d.Path) {
			t.Errorf("%s differs at %s: written %s, read %s", what, d.Path, d.Want, d.Got)
		}
	}
	for _, gap := range gaps {
		if !slices.ContainsFunc(diffs, func(d diffupstream.FieldDiff) bool { return d.Path == gap }) {
			t.Errorf("%s: %s now matches: remove it from the known gaps", what, gap)
		}
	}
}

// dropNullTimestamps removes every "creationTimestamp": null.
func dropNullTimestamps(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "creationTimestamp" && e == nil {
				delete(x, k)
				continue
			}
			x[k] = dropNullTimestamps(e)
		}
	case []any:
		for i := range x {
			x[i] = dropNullTimestamps(x[i])
		}
	}
	return v
}

// subset returns "" if every field of want is in got with the same value (lists must have
// the same length), else the first difference; fields only in got are appended to added.
func subset(path string, want, got any, added *[]string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: %T became %T", path, want, got)
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s.%s lost (was %v)", path, k, wv)
			}
			if d := subset(path+"."+k, wv, gv, added); d != "" {
				return d
			}
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				*added = append(*added, path+"."+k)
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: %v became %v", path, want, got)
		}
		for i := range w {
			if d := subset(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], added); d != "" {
				return d
			}
		}
		return ""
	}
	if !equality.Semantic.DeepEqual(want, got) {
		return fmt.Sprintf("%s: %v became %v", path, want, got)
	}
	return ""
}

// startHacp starts hacp's apiserver on an external etcd with its defaults (protobuf), but
// API Priority and Fairness off as its kube-apiserver peer's (upstream.KubeAPIServerArgs):
// with it on, either server writes the FlowSchemas' Dangling conditions.
func startHacp(t *testing.T, etcdURL string) (*server.Server, dynamic.Interface) {
	t.Helper()
	s := servertest.New(t, func(cfg *server.Config) {
		cfg.EtcdServers = []string{etcdURL}
		cfg.EnablePriorityAndFairness = false
	})
	return s, dynamic.NewForConfigOrDie(servertest.RestConfig(t, s))
}

type kubeAPIServer struct {
	*upstream.KubeAPIServer
	config *rest.Config
}

// startKubeAPIServer runs kube-apiserver on etcdURL (upstream.StartKubeAPIServer: self-signed
// serving certificates, a fresh service-account key, AlwaysAllow and a static token for the
// client) and waits for /readyz. The test's cleanup kills it if the test did not stop it.
func startKubeAPIServer(t *testing.T, bin, etcdURL string, extra ...string) *kubeAPIServer {
	t.Helper()
	k, err := upstream.StartKubeAPIServer(bin, etcdURL, t.TempDir(), extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		k.Kill()
		if t.Failed() {
			t.Logf("kube-apiserver log tail:\n%s", k.LogTail(8000))
		}
	})
	return &kubeAPIServer{KubeAPIServer: k, config: k.Config}
}

// stop ends kube-apiserver with SIGTERM, as a kubelet would, and waits for it.
func (k *kubeAPIServer) stop(t *testing.T) {
	t.Helper()
	if err := k.Stop(); err != nil {
		t.Fatal(err)
	}
}

func crdEstablished(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// settled returns got once the server's own controllers are done with it: a
// CustomResourceDefinition is Established; other objects as they are.
func settled(t *testing.T, k kind, c dynamic.ResourceInterface, got *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	done := crdEstablished
	switch k.gvr.Resource {
	case "customresourcedefinitions":
	case "apiservices":
		// Both servers' aggregators mark a local APIService available, in the same words.
		done = func(u *unstructured.Unstructured) bool {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			return len(conds) > 0
		}
	default:
		return got
	}
	for deadline := time.Now().Add(time.Minute); !done(got); {
		if time.Now().After(deadline) {
			t.Fatalf("%s not established: %v", got.GetName(), got.Object["status"])
		}
		time.Sleep(100 * time.Millisecond) // poll
		var err error
		if got, err = c.Get(context.Background(), got.GetName(), metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return got
}
