package upstream_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// apfFlags are the max-in-flight limits both servers run with: 15 seats for API Priority
// and Fairness to divide, so that a level with one share gets a single seat.
var apfFlags = []string{"--enable-priority-and-fairness=true", "--max-requests-inflight=10", "--max-mutating-requests-inflight=5"}

// apfTarget is one server of the API Priority and Fairness comparison.
type apfTarget struct {
	name   string
	config *rest.Config
	cs     *kubernetes.Clientset
	hc     *http.Client
}

func newAPFTarget(t *testing.T, name string, cfg *rest.Config) *apfTarget {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &apfTarget{name: name, config: cfg, cs: cs, hc: hc}
}

// TestFlowControlAsKubeAPIServer runs kube-apiserver 1.37 and hacp, both with API Priority
// and Fairness on and the same max-in-flight limits, and checks that they hold the same
// bootstrap FlowSchemas and PriorityLevelConfigurations (specs, labels, annotations, status
// conditions), classify the same requests by the same identities to the same FlowSchema and
// priority level (by name, from the response headers), and reject a request at a full
// one-seat Reject level with the same 429.
func TestFlowControlAsKubeAPIServer(t *testing.T) {
	bin := upstream.Binary(t, "kube-apiserver")
	etcd := etcdtest.Start(t)
	kas := startKubeAPIServer(t, bin, etcd.ClientURL(), apfFlags...)
	h := servertest.New(t, func(c *server.Config) {
		c.EnablePriorityAndFairness = true
		c.MaxRequestsInflight, c.MaxMutatingRequestsInflight = 10, 5
		c.AuthorizationMode, c.AnonymousAuth = "AlwaysAllow", false // as the interop peer
	})
	kube := newAPFTarget(t, "kube", kas.config)
	hacp := newAPFTarget(t, "hacp", servertest.RestConfig(t, h))

	t.Run("bootstrap", func(t *testing.T) { sameAPFObjects(t, kube, hacp) })
	t.Run("classification", func(t *testing.T) {
		want, got := classifyAll(t, kube), classifyAll(t, hacp)
		for i := range apfProbes {
			if got[i] != want[i] {
				t.Errorf("%s: hacp %s, kube-apiserver %s", apfProbes[i].name, got[i], want[i])
			}
			t.Logf("%s: %s", apfProbes[i].name, want[i])
		}
	})
	t.Run("metrics", func(t *testing.T) {
		want, got := apfMetricShapes(t, kube), apfMetricShapes(t, hacp)
		for _, name := range apfMetricNames {
			t.Logf("kube-apiserver %s", want[name])
			if got[name] != want[name] {
				t.Errorf("hacp           %s\nkube-apiserver %s", got[name], want[name])
			}
		}
	})
	t.Run("dumps", func(t *testing.T) {
		for _, name := range []string{"dump_priority_levels", "dump_queues", "dump_requests"} {
			want, got := apfDump(t, kube, name), apfDump(t, hacp, name)
			t.Logf("kube-apiserver %s: %s", name, want)
			if got != want {
				t.Errorf("%s:\nhacp           %s\nkube-apiserver %s", name, got, want)
			}
		}
	})
	t.Run("reject", func(t *testing.T) {
		want, got := tinyLevelRejects(t, kube), tinyLevelRejects(t, hacp)
		t.Logf("kube-apiserver: %s", want)
		if got != want {
			t.Errorf("429 at a full Reject level:\nhacp           %s\nkube-apiserver %s", got, want)
		}
	})
}

// apfMetricNames are the APF metrics compared by shape: the ones hacp serves, and one
// that 1.37 no longer has.
var apfMetricNames = []string{"current_executing_requests", "current_executing_seats", "current_inqueue_requests",
	"rejected_requests_total", "dispatched_requests_total", "request_wait_duration_seconds",
	"request_queue_length_after_enqueue", "nominal_limit_seats", "lower_limit_seats", "upper_limit_seats",
	"current_limit_seats", "request_execution_seconds", "work_estimated_seats", "request_concurrency_limit"}

// apfMetricShapes scrapes tg's /metrics as the admin and describes each of apfMetricNames:
// its type, label names and histogram buckets, or that it is absent. (The classification
// requests have run, so each has a series.)
func apfMetricShapes(t *testing.T, tg *apfTarget) map[string]string {
	t.Helper()
	resp, body := apfSend(t, tg, "GET", "/metrics", "", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s /metrics: %s", tg.name, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("%s /metrics: %v", tg.name, err)
	}
	out := map[string]string{}
	for _, short := range apfMetricNames {
		name := "apiserver_flowcontrol_" + short
		fam := fams[name]
		if fam == nil || len(fam.GetMetric()) == 0 {
			out[short] = name + " absent"
			continue
		}
		m := fam.GetMetric()[0]
		var labels []string
		for _, l := range m.GetLabel() {
			labels = append(labels, l.GetName())
		}
		slices.Sort(labels)
		var buckets []float64
		for _, b := range m.GetHistogram().GetBucket() {
			buckets = append(buckets, b.GetUpperBound())
		}
		out[short] = fmt.Sprintf("%s %v labels %v buckets %v", name, fam.GetType(), labels, buckets)
	}
	return out
}

// apfDump is what the admin gets from the APF debug dump name: status, content type and
// header row, and for dump_priority_levels the levels listed (columns trimmed of the
// tabwriter's padding).
func apfDump(t *testing.T, tg *apfTarget, name string) string {
	t.Helper()
	resp, body := apfSend(t, tg, "GET", "/debug/api_priority_and_fairness/"+name, "", "", nil)
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	trim := func(line string) []string {
		cols := strings.Split(line, ",")
		for i := range cols {
			cols[i] = strings.TrimSpace(cols[i])
		}
		return cols
	}
	out := fmt.Sprintf("%d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), strings.Join(trim(lines[0]), ","))
	if name == "dump_priority_levels" {
		var levels []string
		for _, l := range lines[1:] {
			levels = append(levels, trim(l)[0])
		}
		out += " levels " + strings.Join(levels, " ")
	}
	return out
}

// apfObjects is a server's FlowSchemas and priority levels, stripped of what differs
// between any two servers (uid, resourceVersion, timestamps, managedFields), as JSON.
func apfObjects(t *testing.T, tg *apfTarget) string {
	t.Helper()
	ctx := context.Background()
	fss, err := tg.cs.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pls, err := tg.cs.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	meta := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: m.Name, Labels: m.Labels, Annotations: m.Annotations, Generation: m.Generation}
	}
	var b strings.Builder
	for _, fs := range fss.Items {
		fs.ObjectMeta = meta(fs.ObjectMeta)
		for i := range fs.Status.Conditions {
			fs.Status.Conditions[i].LastTransitionTime = metav1.Time{}
		}
		j, _ := json.Marshal(fs)
		fmt.Fprintf(&b, "flowschema %s\n", j)
	}
	for _, pl := range pls.Items {
		pl.ObjectMeta = meta(pl.ObjectMeta)
		for i := range pl.Status.Conditions {
			pl.Status.Conditions[i].LastTransitionTime = metav1.Time{}
		}
		j, _ := json.Marshal(pl)
		fmt.Fprintf(&b, "prioritylevel %s\n", j)
	}
	return b.String()
}

// sameAPFObjects waits (the controllers write the objects and their conditions after
// start) for both servers to hold the same APF objects, and reports the lines that differ.
func sameAPFObjects(t *testing.T, kube, hacp *apfTarget) {
	t.Helper()
	var want, got string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		want, got = apfObjects(t, kube), apfObjects(t, hacp)
		if want == got && strings.Count(want, "\n") >= 15 && !strings.Contains(want, `"conditions":null`) {
			return
		}
	}
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for _, l := range wl {
		if !slices.Contains(gl, l) {
			t.Errorf("kube-apiserver only: %s", l)
		}
	}
	for _, l := range gl {
		if !slices.Contains(wl, l) {
			t.Errorf("hacp only: %s", l)
		}
	}
}

// apfProbe is one request of the classification table, sent as the admin impersonating
// user and groups (no user: the admin itself).
type apfProbe struct {
	name, method, path, body string
	user                     string
	groups                   []string
}

const leaseBody = `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"n1","namespace":"kube-node-lease"},"spec":{"holderIdentity":"n1"}}`

// leaseUpdate is leaseBody changed, at the resourceVersion $RV.
const leaseUpdate = `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"n1","namespace":"kube-node-lease","resourceVersion":"$RV"},"spec":{"holderIdentity":"n1","leaseDurationSeconds":40}}`

var (
	nodeGroups = []string{"system:nodes", "system:authenticated"}
	saKube     = []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}
	saDefault  = []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}
	authn      = []string{"system:authenticated"}
)

var apfProbes = []apfProbe{
	{"node lease update", "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", leaseUpdate, "system:node:n1", nodeGroups},
	{"node pod list", "GET", "/api/v1/pods", "", "system:node:n1", nodeGroups},
	{"node get node", "GET", "/api/v1/nodes/n1", "", "system:node:n1", nodeGroups},
	{"controller-manager configmaps", "GET", "/api/v1/namespaces/default/configmaps", "", "system:kube-controller-manager", authn},
	{"controller-manager leader lease", "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager", "", "system:kube-controller-manager", authn},
	{"controller-manager endpoints", "GET", "/api/v1/namespaces/default/endpoints/x", "", "system:kube-controller-manager", authn},
	{"scheduler pods", "GET", "/api/v1/pods", "", "system:kube-scheduler", authn},
	{"scheduler leader lease", "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler", "", "system:kube-scheduler", authn},
	{"kube-system service account", "GET", "/api/v1/namespaces/kube-system/configmaps", "", "system:serviceaccount:kube-system:foo", saKube},
	{"kube-system service account lease", "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/foo", "", "system:serviceaccount:kube-system:foo", saKube},
	{"default service account", "GET", "/api/v1/namespaces/default/configmaps", "", "system:serviceaccount:default:foo", saDefault},
	{"plain user", "GET", "/api/v1/namespaces/default/configmaps", "", "alice", authn},
	{"plain user cluster scope", "GET", "/api/v1/namespaces", "", "alice", authn},
	{"system:masters", "GET", "/api/v1/namespaces", "", "bob", []string{"system:masters", "system:authenticated"}},
	{"admin itself", "GET", "/api/v1/namespaces", "", "", nil},
	{"unauthenticated", "GET", "/api/v1/namespaces", "", "system:anonymous", []string{"system:unauthenticated"}},
	{"healthz", "GET", "/healthz", "", "alice", authn},
	{"livez", "GET", "/livez", "", "alice", authn},
	{"readyz anonymous", "GET", "/readyz", "", "system:anonymous", []string{"system:unauthenticated"}},
	{"version non-resource", "GET", "/version", "", "alice", authn},
}

// apfSend sends one request with impersonation, and returns the response with its body read.
func apfSend(t *testing.T, tg *apfTarget, method, path, body, user string, groups []string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(tg.config.Host, "/")+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if user != "" {
		req.Header.Set("Impersonate-User", user)
		for _, g := range groups {
			req.Header.Add("Impersonate-Group", g)
		}
	}
	resp, err := tg.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s %s: %v", tg.name, method, path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}

// apfNames maps the UIDs of tg's FlowSchemas and priority levels to their names.
func apfNames(t *testing.T, tg *apfTarget) map[string]string {
	t.Helper()
	ctx := context.Background()
	names := map[string]string{}
	fss, err := tg.cs.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fs := range fss.Items {
		names[string(fs.UID)] = fs.Name
	}
	pls, err := tg.cs.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range pls.Items {
		names[string(pl.UID)] = pl.Name
	}
	return names
}

// classification names a response's FlowSchema and priority level (and its code).
func classification(resp *http.Response, names map[string]string) string {
	fs := resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID)
	pl := resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)
	name := func(uid string) string {
		if n, ok := names[uid]; ok {
			return n
		}
		return fmt.Sprintf("<uid %q>", uid)
	}
	return fmt.Sprintf("%d flowschema=%s prioritylevel=%s", resp.StatusCode, name(fs), name(pl))
}

// classifyAll sends apfProbes to tg and says how each was classified.
func classifyAll(t *testing.T, tg *apfTarget) []string {
	t.Helper()
	names := apfNames(t, tg)
	// The node's lease exists (hacp does not create a Lease on PUT yet, nor refuse an
	// update without a resourceVersion; upstream does both).
	resp, body := apfSend(t, tg, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", leaseBody, "", nil)
	var lease metav1.PartialObjectMetadata
	if err := json.Unmarshal(body, &lease); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("%s: lease: %s %s", tg.name, resp.Status, body)
	}
	var out []string
	for _, p := range apfProbes {
		resp, body := apfSend(t, tg, p.method, p.path, strings.ReplaceAll(p.body, "$RV", lease.ResourceVersion), p.user, p.groups)
		c := classification(resp, names)
		if resp.StatusCode >= 300 {
			c += " " + string(body)
		}
		out = append(out, c)
	}
	return out
}

// tinyLevelRejects makes a one-seat Reject priority level for user apf-tiny, holds its seat
// with a ConfigMap create that a validating webhook keeps waiting, and returns what a burst
// of further requests by that user got (status line, body, headers), all of which must be
// the same; the held create must then succeed.
func tinyLevelRejects(t *testing.T, tg *apfTarget) string {
	t.Helper()
	ctx := context.Background()
	hook := newHoldingWebhook(t)
	pl, fs := createTinyLevel(t, tg)
	createHoldingHook(t, tg, hook)
	// Wait for the controller to take up the new objects: a request by the user is
	// classified to them (the seat is free, so it runs).
	var got string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, _ := apfSend(t, tg, "GET", "/api/v1/namespaces/default/configmaps", "", "apf-tiny", authn)
		got = fmt.Sprintf("%d %s %s", resp.StatusCode, resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID),
			resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID))
		if got == fmt.Sprintf("200 %s %s", fs.UID, pl.UID) {
			break
		}
	}
	if got != fmt.Sprintf("200 %s %s", fs.UID, pl.UID) {
		t.Fatalf("%s: apf-tiny not served at its level: %s", tg.name, got)
	}
	held := holdSeat(t, tg, hook, "apf-tiny")
	var first string
	for i := range 5 {
		resp, body := apfSend(t, tg, "GET", "/api/v1/namespaces/default/configmaps/held", "", "apf-tiny", authn)
		line := fmt.Sprintf("%s %q content-type=%q nosniff=%q retry-after-set=%t", resp.Status, body,
			resp.Header.Get("Content-Type"), resp.Header.Get("X-Content-Type-Options"), resp.Header.Get("Retry-After") != "")
		if i == 0 {
			first = line
		} else if line != first {
			t.Errorf("%s: request %d of the burst: %s, the first: %s", tg.name, i, line, first)
		}
	}
	hook.release()
	if r := <-held; r.code != http.StatusCreated {
		t.Errorf("%s: held create: %d %v", tg.name, r.code, r.err)
	}
	_ = tg.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, "apf-hold", metav1.DeleteOptions{})
	return first
}

// sent is the outcome of a request sent from another goroutine.
type sent struct {
	code int
	err  error
}

// holdSeat sends ConfigMap creates as user, each labelled for hook, until one reaches hook
// (the webhook configuration takes effect a little after it is created; and another
// request may hold the seat wanted for a moment), and returns where that one's outcome
// will come.
func holdSeat(t *testing.T, tg *apfTarget, hook *holdingWebhook, user string) chan sent {
	t.Helper()
	for i := 0; i < 500; i++ {
		held := make(chan sent, 1)
		go func() {
			code, err := apfSendNoFatal(tg, "POST", "/api/v1/namespaces/default/configmaps",
				fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held-%d","labels":{"apf-hold":"true"}}}`, i), user, authn)
			held <- sent{code, err}
		}()
		select {
		case <-hook.arrived:
			return held
		case r := <-held:
			if r.code != http.StatusCreated && r.code != http.StatusTooManyRequests {
				t.Fatalf("%s: create before the webhook took effect: %d %v", tg.name, r.code, r.err)
			}
		}
	}
	t.Fatalf("%s: the webhook never took effect", tg.name)
	return nil
}

// apfSendNoFatal is apfSend for another goroutine than the test's: it returns the code.
func apfSendNoFatal(tg *apfTarget, method, path, body, user string, groups []string) (int, error) {
	req, err := http.NewRequest(method, strings.TrimSuffix(tg.config.Host, "/")+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Impersonate-User", user)
	for _, g := range groups {
		req.Header.Add("Impersonate-Group", g)
	}
	resp, err := tg.hc.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// createTinyLevel makes the priority level apf-tiny (one share, nothing lent or borrowed,
// Reject) and the FlowSchema apf-tiny sending user apf-tiny's resource requests to it.
func createTinyLevel(t *testing.T, tg *apfTarget) (*flowcontrolv1.PriorityLevelConfiguration, *flowcontrolv1.FlowSchema) {
	t.Helper()
	ctx := context.Background()
	one, zero := int32(1), int32(0)
	pl, err := tg.cs.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "apf-tiny"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: &one, LendablePercent: &zero,
				BorrowingLimitPercent: &zero, LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tg.cs.FlowcontrolV1().FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "apf-tiny"},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "apf-tiny"},
			MatchingPrecedence:  50,
			DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "apf-tiny"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
					Namespaces: []string{"*"}, ClusterScope: true}},
			}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pl, fs
}

// holdingWebhook is a validating webhook that keeps each review waiting until released.
type holdingWebhook struct {
	srv      *httptest.Server
	arrived  chan struct{}
	released chan struct{}
	once     sync.Once
}

func newHoldingWebhook(t *testing.T) *holdingWebhook {
	t.Helper()
	h := &holdingWebhook{arrived: make(chan struct{}, 16), released: make(chan struct{})}
	h.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		h.arrived <- struct{}{}
		select {
		case <-h.released:
		case <-r.Context().Done():
			return
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(func() { h.release(); h.srv.Close() })
	return h
}

func (h *holdingWebhook) release() { h.once.Do(func() { close(h.released) }) }

// createHoldingHook registers hook for ConfigMap creates of objects labelled apf-hold=true.
func createHoldingHook(t *testing.T, tg *apfTarget, hook *holdingWebhook) {
	t.Helper()
	none, timeout, url := admissionregistrationv1.SideEffectClassNone, int32(30), hook.srv.URL+"/validate"
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.srv.Certificate().Raw})
	_, err := tg.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "apf-hold"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "hold.apf.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"apf-hold": "true"}},
			SideEffects:    &none, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: &timeout}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMaxInFlightAsKubeAPIServer runs kube-apiserver 1.37 and hacp with API Priority and
// Fairness off and one mutating request at a time, holds that slot with a create a webhook
// keeps waiting, and checks that another user's create gets the same 429 from both (status
// line, body, Retry-After, content headers) while an admin in system:masters is served.
func TestMaxInFlightAsKubeAPIServer(t *testing.T) {
	bin := upstream.Binary(t, "kube-apiserver")
	etcd := etcdtest.Start(t)
	kas := startKubeAPIServer(t, bin, etcd.ClientURL(), "--max-mutating-requests-inflight=1")
	h := servertest.New(t, func(c *server.Config) {
		c.EnablePriorityAndFairness = false
		c.MaxMutatingRequestsInflight = 1
		c.AuthorizationMode, c.AnonymousAuth = "AlwaysAllow", false
	})
	kube := newAPFTarget(t, "kube", kas.config)
	hacp := newAPFTarget(t, "hacp", servertest.RestConfig(t, h))
	want, got := inflightRejects(t, kube), inflightRejects(t, hacp)
	t.Logf("kube-apiserver: %s", want)
	if got != want {
		t.Errorf("429 of the max-in-flight limit:\nhacp           %s\nkube-apiserver %s", got, want)
	}
}

// inflightRejects holds tg's one mutating slot and returns what alice's create got, and
// whether the admin's was served.
func inflightRejects(t *testing.T, tg *apfTarget) string {
	t.Helper()
	hook := newHoldingWebhook(t)
	createHoldingHook(t, tg, hook)
	held := holdSeat(t, tg, hook, "holder")
	resp, body := apfSend(t, tg, "POST", "/api/v1/namespaces/default/configmaps",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"second"}}`, "alice", authn)
	line := fmt.Sprintf("%s %q retry-after=%q content-type=%q nosniff=%q", resp.Status, body,
		resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"), resp.Header.Get("X-Content-Type-Options"))
	masters, _ := apfSend(t, tg, "POST", "/api/v1/namespaces/default/configmaps",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"masters"}}`, "", nil)
	line += fmt.Sprintf(" system:masters=%d", masters.StatusCode)
	hook.release()
	if r := <-held; r.code != http.StatusCreated {
		t.Errorf("%s: held create: %d %v", tg.name, r.code, r.err)
	}
	return line
}
