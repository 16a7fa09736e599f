package upstream_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// authzDiffSeed fixes the corpus: the same requests, in the same order, on every run.
const authzDiffSeed = 37

// authzDiffRequests is how many requests the corpus holds.
const authzDiffRequests = 1200

// authzIdentity is a caller of the differential check: a client certificate (CN=user,
// O=groups) that both servers trust, a bearer token (see authzTokens), or no credentials at
// all. probesOnly callers send only the fixed probes: their rights (namespace admin) would
// let random requests change the RBAC objects, whose caches follow at each server's pace.
type authzIdentity struct {
	name       string
	user       string
	groups     []string
	probesOnly bool
}

// authzIdentities are the callers; authzFixtures gives each its bindings (or none).
var authzIdentities = []authzIdentity{
	{name: "anonymous"},
	{name: "nobody", user: "nobody"},
	{name: "viewer", user: "viewer"},
	{name: "lister", user: "lister"},
	{name: "node", user: "system:node:n1", groups: []string{"system:nodes"}},
	{name: "sa"},         // the server's own token for diff-a/sa1
	{name: "crosstoken"}, // the other server's token for diff-a/sa1: same key, other uid
	{name: "badtoken"},
	{name: "fakenode", user: "system:node:n1"}, // not in system:nodes
	{name: "emptynode", user: "system:node:", groups: []string{"system:nodes"}},
	{name: "sacert", user: "system:serviceaccount:diff-a:sa1", groups: []string{"system:serviceaccounts", "system:serviceaccounts:diff-a"}},
	{name: "nsadmin", user: "nsadmin", probesOnly: true},
}

// authzTarget is one server under test with a client per identity.
type authzTarget struct {
	name    string
	url     string
	admin   *rest.Config
	clients map[string]*http.Client
	tokens  map[string]string
}

// authzAnswer is what one server answered one request.
type authzAnswer struct {
	Code int    `json:"code"`
	Body string `json:"body,omitempty"`
	Err  string `json:"err,omitempty"`
}

// denied reports whether the answer refuses the caller: 401 or 403. A transport error is
// neither allowed nor denied.
func (a authzAnswer) denied() bool {
	return a.Code == http.StatusUnauthorized || a.Code == http.StatusForbidden
}

func (a authzAnswer) allowed() bool { return a.Err == "" && !a.denied() }

// authzResult is one line of the report.
type authzResult struct {
	N        int         `json:"n"`
	Identity string      `json:"identity"`
	Method   string      `json:"method"`
	Target   string      `json:"target"`
	Headers  [][2]string `json:"headers,omitempty"`
	Kube     authzAnswer `json:"kube"`
	Hacp     authzAnswer `json:"hacp"`
}

// TestAuthzDifferential sends one seeded corpus of requests (random verbs, paths, query
// strings and callers) to kube-apiserver 1.37 and to hacp, both with Node,RBAC, anonymous
// authentication and the same RBAC objects, in lockstep, and fails for every request hacp
// allows that kube-apiserver denies (issue 37). The opposite direction is counted and
// logged; every answer goes to _output/authzdiff/report.jsonl.
func TestAuthzDifferential(t *testing.T) {
	kubeBin := upstream.Binary(t, "kube-apiserver")
	h := servertest.New(t, func(c *server.Config) {
		c.AuthorizationMode = "Node,RBAC"
		c.AnonymousAuth = true
		c.EnableAdmissionPlugins = []string{"NodeRestriction"} // as kubeadm runs both
	})
	etcd := etcdtest.Start(t)
	kube := startAuthzKube(t, kubeBin, etcd.ClientURL(), h.Certs().CACert, h.Certs().ServiceAccountKey)
	// hacp aggregates ClusterRoles (view, edit, admin) itself; kube-apiserver leaves that to
	// kube-controller-manager's clusterrole-aggregation controller.
	startAggregation(t, upstream.Binary(t, "kube-controller-manager"), kube)
	hacp := &authzTarget{name: "hacp", url: h.URL(), admin: servertest.RestConfig(t, h)}
	targets := []*authzTarget{kube, hacp}
	for _, tg := range targets {
		createAuthzFixtures(t, tg)
		tg.clients = authzClients(t, h, tg)
	}
	kubeToken, hacpToken := issueSAToken(t, kube), issueSAToken(t, hacp)
	kube.tokens = map[string]string{"sa": kubeToken, "crosstoken": hacpToken, "badtoken": "not-a-token"}
	hacp.tokens = map[string]string{"sa": hacpToken, "crosstoken": kubeToken, "badtoken": "not-a-token"}
	for _, tg := range targets {
		waitAuthzReady(t, tg)
	}
	corpus := authzCorpus(authzDiffSeed, authzDiffRequests)
	var results []authzResult
	for i, rq := range corpus {
		res := authzResult{N: i, Identity: rq.identity, Method: rq.method, Target: rq.target(), Headers: rq.headers}
		res.Kube = sendAuthz(kube, rq)
		res.Hacp = sendAuthz(hacp, rq)
		results = append(results, res)
	}
	reportAuthzDiff(t, results)
}

// reportAuthzDiff fails for each request hacp allowed and kube-apiserver denied, logs the
// counts and writes the report.
func reportAuthzDiff(t *testing.T, results []authzResult) {
	t.Helper()
	var kubeAllowed, hacpAllowed, hacpLooser, hacpStricter, errs int
	for _, r := range results {
		if r.Kube.Err != "" || r.Hacp.Err != "" {
			errs++
		}
		if r.Kube.allowed() {
			kubeAllowed++
		}
		if r.Hacp.allowed() {
			hacpAllowed++
		}
		switch {
		case r.Hacp.allowed() && r.Kube.denied():
			hacpLooser++
			t.Errorf("#%d %s %s as %s%s: hacp allows (%d %s), kube-apiserver denies (%d %s)",
				r.N, r.Method, r.Target, r.Identity, headerText(r.Headers), r.Hacp.Code, r.Hacp.Body, r.Kube.Code, r.Kube.Body)
		case r.Hacp.denied() && r.Kube.allowed():
			hacpStricter++
			t.Logf("#%d %s %s as %s%s: hacp denies (%d), kube-apiserver allows (%d %s)",
				r.N, r.Method, r.Target, r.Identity, headerText(r.Headers), r.Hacp.Code, r.Kube.Code, r.Kube.Body)
		}
	}
	summary := fmt.Sprintf("%d requests; kube-apiserver allowed %d, denied %d; hacp allowed %d, denied %d; "+
		"hacp allows where kube-apiserver denies: %d; hacp denies where kube-apiserver allows: %d; transport errors: %d",
		len(results), kubeAllowed, countDenied(results, true), hacpAllowed, countDenied(results, false), hacpLooser, hacpStricter, errs)
	summary += "\n" + perIdentity(results)
	t.Log(summary)
	if errs > len(results)/10 {
		t.Errorf("%d of %d requests failed in transport: the check compared too little", errs, len(results))
	}
	writeAuthzReport(t, results, summary)
}

func headerText(h [][2]string) string {
	var b strings.Builder
	for _, kv := range h {
		fmt.Fprintf(&b, " [%s: %s]", kv[0], kv[1])
	}
	return b.String()
}

// perIdentity is a table of requests and allowed answers per caller.
func perIdentity(results []authzResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %8s %12s %12s\n", "identity", "requests", "kube allowed", "hacp allowed")
	for _, id := range authzIdentities {
		var n, k, h int
		for _, r := range results {
			if r.Identity != id.name {
				continue
			}
			n++
			if r.Kube.allowed() {
				k++
			}
			if r.Hacp.allowed() {
				h++
			}
		}
		fmt.Fprintf(&b, "%-10s %8d %12d %12d\n", id.name, n, k, h)
	}
	return b.String()
}

func countDenied(results []authzResult, kube bool) int {
	n := 0
	for _, r := range results {
		if (kube && r.Kube.denied()) || (!kube && r.Hacp.denied()) {
			n++
		}
	}
	return n
}

// writeAuthzReport writes one JSON line per request and the summary under
// _output/authzdiff/ (or $HACP_ARTIFACTS/authzdiff/), for review.
func writeAuthzReport(t *testing.T, results []authzResult, summary string) {
	t.Helper()
	dir := filepath.Join("..", "..", "_output", "authzdiff")
	if a := os.Getenv("HACP_ARTIFACTS"); a != "" {
		dir = filepath.Join(a, "authzdiff")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, r := range results {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "report.jsonl"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(summary+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	t.Logf("report: %s", abs)
}

// sendAuthz sends rq to tg as rq's identity and returns the status code and the start of the
// body. A watch's body is not read past what arrived with its headers: the code is enough.
func sendAuthz(tg *authzTarget, rq authzRequest) authzAnswer {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var body io.Reader
	if rq.body != "" {
		body = strings.NewReader(rq.body)
	}
	req, err := http.NewRequestWithContext(ctx, rq.method, tg.url+rq.target(), body)
	if err != nil {
		return authzAnswer{Err: err.Error()}
	}
	if rq.contentType != "" {
		req.Header.Set("Content-Type", rq.contentType)
	}
	req.Header.Set("Accept", "application/json")
	if tok := tg.tokens[rq.identity]; tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for _, h := range rq.headers {
		req.Header.Add(h[0], h[1])
	}
	resp, err := tg.clients[rq.identity].Do(req)
	if err != nil {
		return authzAnswer{Err: err.Error()}
	}
	defer resp.Body.Close()
	var b []byte
	if resp.StatusCode != http.StatusOK || !rq.streams() {
		b, _ = io.ReadAll(io.LimitReader(resp.Body, 4096))
	}
	return authzAnswer{Code: resp.StatusCode, Body: truncate(string(b), 300)}
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// authzClients returns an HTTP client per identity for tg: the certificate identities with
// a client certificate signed by hacp's CA (kube-apiserver trusts it too), the others with
// none.
func authzClients(t *testing.T, h *server.Server, tg *authzTarget) map[string]*http.Client {
	t.Helper()
	out := map[string]*http.Client{}
	for _, id := range authzIdentities {
		tc := &tls.Config{InsecureSkipVerify: true} // both serving certificates are self-made
		if id.user != "" {
			certPEM, keyPEM, err := h.Certs().IssueClient(id.user, id.groups, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			tc.Certificates = []tls.Certificate{pair}
		}
		tr := &http.Transport{TLSClientConfig: tc, MaxIdleConnsPerHost: 4}
		t.Cleanup(tr.CloseIdleConnections)
		out[id.name] = &http.Client{Transport: tr}
	}
	return out
}

// startAuthzKube runs kube-apiserver on etcdURL as hacp runs: Node,RBAC authorization,
// anonymous requests allowed through to it, client certificates from caFile, ServiceAccount
// tokens signed with hacp's key saKey for hacp's issuer (so that a token one server issued
// differs from the other's only in the ServiceAccount's uid), the default
// admission plugins and NodeRestriction (as kubeadm runs it, and hacp here); the admin is a
// static token. extra are further flags.
func startAuthzKube(t *testing.T, bin, etcdURL, caFile, saKey string, extra ...string) *authzTarget {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	const token = "authzdiff-admin"
	base, err := upstream.KubeAPIServerArgs(dir, etcdURL, port, token)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, a := range base {
		// The interop defaults allow everything, turn the ServiceAccount plugin off and sign
		// tokens with a key of their own.
		if !slices.ContainsFunc([]string{"--authorization-mode=", "--disable-admission-plugins=", "--service-account-"}, func(p string) bool { return strings.HasPrefix(a, p) }) {
			args = append(args, a)
		}
	}
	args = append(args, "--authorization-mode=Node,RBAC", "--anonymous-auth=true", "--client-ca-file="+caFile,
		"--enable-admission-plugins=NodeRestriction", "--service-account-issuer="+server.DefaultServiceAccountIssuer,
		"--service-account-key-file="+saKey, "--service-account-signing-key-file="+saKey)
	args = append(args, extra...)
	p := startProc(t, dir, "kube-apiserver-authzdiff", bin, args...)
	tg := &authzTarget{name: "kube", url: "https://127.0.0.1:" + port,
		admin: &rest.Config{Host: "https://127.0.0.1:" + port, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, BearerToken: token, QPS: 1000, Burst: 1000}}
	waitKubeReady(t, p, tg.url, token)
	return tg
}

// startAggregation runs kube-controller-manager against tg with only the
// clusterrole-aggregation controller, as the admin.
func startAggregation(t *testing.T, bin string, tg *authzTarget) {
	t.Helper()
	dir := t.TempDir()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: tg.url, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: tg.admin.BearerToken}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "admin"}
	cfg.CurrentContext = "c"
	kc := filepath.Join(dir, "admin.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	startProc(t, dir, "kube-controller-manager-authzdiff", bin, "--kubeconfig="+kc, "--authentication-kubeconfig="+kc,
		"--authorization-kubeconfig="+kc, "--bind-address=127.0.0.1", "--secure-port="+freePort(t),
		"--controllers=clusterrole-aggregation", "--leader-elect=false")
}

// waitKubeReady polls kube-apiserver's /readyz (as the admin) for up to two minutes.
func waitKubeReady(t *testing.T, p *proc, url, token string) {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer hc.CloseIdleConnections()
	var last string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if !p.running() {
			t.Fatalf("kube-apiserver exited: %v", p.exitErr)
		}
		req, _ := http.NewRequest(http.MethodGet, url+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			last = err.Error()
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		last = fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	t.Fatalf("kube-apiserver not ready within 2m: %s", last)
}
