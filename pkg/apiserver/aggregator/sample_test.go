package aggregator_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/certs"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

var flundersGVR = schema.GroupVersionResource{Group: "wardle.example.com", Version: "v1alpha1", Resource: "flunders"}

// servingCert makes a CA and a serving certificate signed by it for hosts, written to dir;
// it returns the CA in PEM form and the certificate and key files.
func servingCert(t *testing.T, dir string, hosts ...string) (caPEM []byte, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wardle-ca"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: hosts[0]}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), certFile, keyFile
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	u, err := embedetcd.FreeLocalURL()
	if err != nil {
		t.Fatal(err)
	}
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := net.LookupPort("tcp", pu.Port())
	return p
}

// sampleAPIServer is a running k8s.io/sample-apiserver.
type sampleAPIServer struct {
	cmd      *exec.Cmd
	done     chan struct{}
	port     int
	caPEM    []byte
	auditLog string
}

func (s *sampleAPIServer) stop() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// startSampleAPIServer runs sample-apiserver against the hacp whose admin kubeconfig is
// given, on its own embedded etcd, serving a certificate for its Service's name.
func startSampleAPIServer(t *testing.T, kubeconfig string) *sampleAPIServer {
	t.Helper()
	bin := upstream.Binary(t, upstream.SampleAPIServer)
	dir := t.TempDir()
	etcd, err := embedetcd.StartLocal(filepath.Join(dir, "etcd"), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	caPEM, certFile, keyFile := servingCert(t, dir, "api.wardle.svc", "127.0.0.1")
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &sampleAPIServer{done: make(chan struct{}), port: freePort(t), caPEM: caPEM, auditLog: filepath.Join(dir, "audit.log")}
	logFile, err := os.Create(filepath.Join(dir, "sample-apiserver.log"))
	if err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command(bin,
		"--secure-port", fmt.Sprint(s.port), "--bind-address", "127.0.0.1",
		"--etcd-servers", etcd.ClientURL(),
		"--tls-cert-file", certFile, "--tls-private-key-file", keyFile,
		"--kubeconfig", kubeconfig, "--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
		"--enable-priority-and-fairness=false",
		"--audit-log-path", s.auditLog, "--audit-policy-file", policy,
	)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); logFile.Close(); close(s.done) }()
	t.Cleanup(s.stop)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "api.wardle.svc"}}}
	defer client.CloseIdleConnections()
	eventually(t, 120*time.Second, func() (bool, string) {
		select {
		case <-s.done:
			b, _ := os.ReadFile(logFile.Name())
			t.Fatalf("sample-apiserver exited: %v\n%s", s.cmd.ProcessState, tail(b, 3000))
		default:
		}
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", s.port))
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return s
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// TestSampleAPIServer registers k8s.io/sample-apiserver with hacp through an APIService and
// uses its flunders through hacp: kubectl, discovery, the caller's identity passed in the
// front-proxy headers, a watch, and the group's availability when it goes away.
func TestSampleAPIServer(t *testing.T) {
	// The Service's endpoint may not be loopback: the test runs in a namespace of its own,
	// without the network to build sample-apiserver in, so it is built first.
	upstream.Binary(t, upstream.SampleAPIServer)
	addr, inHost := netns.RerunInHost(t, "has-", "10.77.96")
	if !inHost {
		return
	}
	hacp := servertest.New(t, nil)
	sample := startSampleAPIServer(t, hacp.KubeconfigPath())
	cfg := servertest.RestConfig(t, hacp)
	cfg.WarningHandler = rest.NoWarnings{} // flunders v1alpha1 are "deprecated"
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)

	// Register it: a Service and Endpoints pointing at it, and the APIService.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "wardle"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	relay := netns.ForwardTCP(t, addr, net.JoinHostPort("127.0.0.1", strconv.Itoa(sample.port)))
	if _, err := cs.CoreV1().Services("wardle").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "api"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(relay))}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 the aggregator resolves Services through core/v1 Endpoints, as upstream's
	eps := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "api"}, Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: addr.String()}}, Ports: []corev1.EndpointPort{{Name: "https", Port: int32(relay)}}}}}
	if _, err := cs.CoreV1().Endpoints("wardle").Create(ctx, eps, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k := newKubectl(t, hacp.KubeconfigPath())
	k.ok(fmt.Sprintf(`{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1alpha1.wardle.example.com"},
"spec":{"group":"wardle.example.com","version":"v1alpha1","groupPriorityMinimum":1000,"versionPriority":15,
"service":{"namespace":"wardle","name":"api"},"caBundle":%q}}`, base64.StdEncoding.EncodeToString(sample.caPEM)), "create", "-f", "-")
	apiService := dyn.Resource(apiServicesGVR)
	eventually(t, 60*time.Second, func() (bool, string) {
		u, err := apiService.Get(ctx, "v1alpha1.wardle.example.com", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st, reason := availability(u)
		return st == "True" && reason == "Passed", fmt.Sprintf("Available=%s (%s): %v", st, reason, u.Object["status"])
	})
	if out := k.ok("", "get", "apiservice", "v1alpha1.wardle.example.com"); !strings.Contains(out, "wardle/api") || !strings.Contains(out, "True") {
		t.Fatalf("kubectl get apiservice:\n%s", out)
	}

	// Discovery through hacp: the group version's own document, and both /apis documents.
	if out := k.ok("", "get", "--raw", "/apis/wardle.example.com/v1alpha1"); !strings.Contains(out, `"flunders"`) {
		t.Fatalf("discovery of wardle.example.com/v1alpha1:\n%s", out)
	}
	eventually(t, 60*time.Second, func() (bool, string) {
		out, errOut, err := k.run("", "api-resources", "--api-group", "wardle.example.com")
		return err == nil && strings.Contains(out, "flunders"), out + errOut
	})
	if out := k.ok("", "get", "--raw", "/apis"); !strings.Contains(out, `"wardle.example.com/v1alpha1"`) {
		t.Fatalf("/apis lacks wardle.example.com:\n%s", out)
	}
	// Its OpenAPI v3 document, listed in hacp's index and proxied: kubectl explain reads it
	// (after create, which cached the index without it).
	if out, errOut, err := k.run("", "explain", "flunders.spec"); err != nil || !strings.Contains(out, "referenceType") {
		t.Fatalf("kubectl explain flunders.spec: %v\n%s%s", err, out, errOut)
	}

	// Its OpenAPI v2 document, merged into hacp's /openapi/v2 (JSON and protobuf): kubectl
	// explain's v2 output reads the protobuf.
	eventually(t, 60*time.Second, func() (bool, string) {
		out, errOut, err := k.run("", "explain", "flunders.spec", "--output=plaintext-openapiv2")
		return err == nil && strings.Contains(out, "referenceType"), out + errOut
	})
	if out := k.ok("", "get", "--raw", "/openapi/v2"); !strings.Contains(out, `"/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders"`) ||
		!strings.Contains(out, `"/api/v1/namespaces"`) {
		t.Fatalf("/openapi/v2 lacks the flunders or the namespaces paths:\n%s", tail([]byte(out), 2000))
	}

	// An RBAC-less user is refused; one with rights works, and sample-apiserver sees who.
	bundle := hacp.Certs()
	kubeconfigFor := func(user string, groups ...string) string {
		p := filepath.Join(t.TempDir(), user+".kubeconfig")
		if err := certs.WriteClientKubeconfig(p, hacp.URL(), bundle, user, groups, time.Hour); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "flunder-editor"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"wardle.example.com"}, Resources: []string{"flunders"}, Verbs: []string{"*"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "flunder-editors"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "flunder-editor"},
		Subjects: []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "wardle-users"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	alice := newKubectl(t, kubeconfigFor("alice", "wardle-users"))
	flunder := `{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"name":"%s","namespace":"default"},"spec":{}}`
	eventually(t, 30*time.Second, func() (bool, string) { // until the binding reaches both authorizers
		out, errOut, err := alice.run(fmt.Sprintf(flunder, "alices"), "create", "-f", "-")
		return err == nil, out + errOut
	})
	if out := k.ok("", "get", "flunders", "-A"); !strings.Contains(out, "alices") {
		t.Fatalf("kubectl get flunders:\n%s", out)
	}
	eventually(t, 30*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(sample.auditLog)
		for _, line := range strings.Split(string(b), "\n") {
			var ev struct {
				Verb string `json:"verb"`
				User struct {
					Username string   `json:"username"`
					Groups   []string `json:"groups"`
				} `json:"user"`
				ObjectRef struct {
					Resource string `json:"resource"`
				} `json:"objectRef"`
			}
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Verb == "create" && ev.ObjectRef.Resource == "flunders" &&
				ev.User.Username == "alice" && strings.Contains(strings.Join(ev.User.Groups, ","), "wardle-users") {
				return true, ""
			}
		}
		return false, "no create of flunders by alice (wardle-users) in sample-apiserver's audit log:\n" + string(tail(b, 2000))
	})
	bob := newKubectl(t, kubeconfigFor("bob"))
	if out, errOut, err := bob.run("", "get", "flunders", "-n", "default"); err == nil || !strings.Contains(errOut, "forbidden") {
		t.Fatalf("bob listed flunders: %v\n%s%s", err, out, errOut)
	}

	// Watches stream through, and leave no goroutine behind once closed.
	flunders := dyn.Resource(flundersGVR).Namespace("default")
	list, err := flunders.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	var watches []watch.Interface
	for range 10 {
		w, err := flunders.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		watches = append(watches, w)
	}
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(fmt.Sprintf(flunder, "watched")), &obj.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := flunders.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, w := range watches {
		select {
		case ev := <-w.ResultChan():
			if u, ok := ev.Object.(*unstructured.Unstructured); ev.Type != watch.Added || !ok || u.GetName() != "watched" {
				t.Fatalf("watch event %s %v", ev.Type, ev.Object)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("no watch event through the proxy")
		}
		w.Stop()
	}
	eventually(t, 30*time.Second, func() (bool, string) {
		n := runtime.NumGoroutine()
		return n <= before, fmt.Sprintf("%d goroutines after 10 watches closed, %d before they opened", n, before)
	})

	// Gone: the APIService becomes unavailable, its group answers 503 and leaves discovery,
	// and the rest of the API carries on.
	sample.stop()
	eventually(t, 60*time.Second, func() (bool, string) {
		_, _ = flunders.List(ctx, metav1.ListOptions{}) // a failed proxy request triggers a check
		u, err := apiService.Get(ctx, "v1alpha1.wardle.example.com", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st, reason := availability(u)
		return st == "False" && reason == "FailedDiscoveryCheck", fmt.Sprintf("Available=%s (%s)", st, reason)
	})
	if _, err := flunders.List(ctx, metav1.ListOptions{}); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("list flunders with the server gone: %v, want 503", err)
	}
	if out := k.ok("", "get", "apiservice", "v1alpha1.wardle.example.com"); !strings.Contains(out, "False (FailedDiscoveryCheck)") {
		t.Fatalf("kubectl get apiservice:\n%s", out)
	}
	if out := k.ok("", "get", "--raw", "/apis"); strings.Contains(out, "wardle.example.com") {
		t.Fatalf("/apis still lists wardle.example.com:\n%s", out)
	}
	eventually(t, 30*time.Second, func() (bool, string) {
		out := k.ok("", "get", "--raw", "/openapi/v2")
		return !strings.Contains(out, "wardle.example.com") && strings.Contains(out, `"/api/v1/namespaces"`), "/openapi/v2 still has wardle.example.com"
	})
	out, errOut, err := k.run("", "api-resources")
	if err != nil || strings.Contains(out, "flunders") || !strings.Contains(out, "deployments") {
		t.Fatalf("kubectl api-resources with the extension gone: %v\n%s%s", err, out, errOut)
	}
	if out := k.ok("", "get", "namespaces"); !strings.Contains(out, "wardle") {
		t.Fatalf("kubectl get namespaces:\n%s", out)
	}
}
