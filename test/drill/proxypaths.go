//lint:file-ignore SA1019 services/proxy and the aggregator read core/v1 Endpoints, as kube-apiserver 1.33 does

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/hacp/hacp/internal/upstream"
)

// Issue 22's proof in the drill (--proxy-paths, with --control-plane): before the faults,
// every proxy subresource and an aggregated API are used through the VIP and the stack's
// balancer, with kubectl running in the client's namespace; kwok's node server (on the
// client, at the client's address, which every master reaches over the bridge) plays the
// kubelets, and k8s.io/sample-apiserver (on the client, with its own etcd) serves flunders
// through an APIService. During the scenarios a client-go informer watches flunders through
// the VIP and a writer creates them, as for ConfigMaps.

const (
	kubeletPort   = 10250 // kwok's node server on the client
	backendPort   = 8080  // the HTTP backend of pods/proxy and services/proxy, on the client
	echoPort      = 9000  // what kwok port-forwards to, on the client's loopback
	samplePort    = 9443  // sample-apiserver on the client
	sampleEtcd    = "127.0.0.1:23790"
	sampleEtcdP   = "127.0.0.1:23800"
	backendPod    = "drill-backend"
	wardleNS      = "wardle"
	sampleSvcName = "api"
	// sampleServerName is the name the aggregator verifies sample-apiserver's certificate for.
	sampleServerName = sampleSvcName + "." + wardleNS + ".svc"
	apiServiceName   = "v1alpha1.wardle.example.com"
)

var (
	flunderGVR    = schema.GroupVersionResource{Group: "wardle.example.com", Version: "v1alpha1", Resource: "flunders"}
	apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// pathResult is one proxy path's check, in report.json's proxy_paths.
type pathResult struct {
	Path     string  `json:"path"`
	OK       bool    `json:"ok"`
	Error    string  `json:"error,omitempty"`
	Attempts int     `json:"attempts"`
	Seconds  float64 `json:"seconds"` // from the first attempt to the end of the last
}

// extensions is what --proxy-paths runs next to a stack: the backends on the client, kwok's
// node-server files, sample-apiserver and its etcd, and the flunder informer.
type extensions struct {
	logFile   string
	listeners []net.Listener
	servers   []*http.Server
	etcd      *embed.Etcd
	sample    *proc
	kubectlKC string

	// flunders is set once the aggregated API served a create and a list through the VIP:
	// the scenarios then watch and write flunders.
	flunders     bool
	dyn          *dynamic.DynamicClient // connection per request, through the VIP
	stopInformer context.CancelFunc
	mu           sync.Mutex
	watch        []watchEvent // every flunder the informer reported added
}

// withProxyPaths says whether this stack runs issue 22's proxy-path checks and the flunder
// watch.
func (c *cluster) withProxyPaths() bool { return c.withControlPlane() && c.d.opts.proxyPaths }

// proxyAPIServerArgs are the apiserver flags the proxy paths need: kubelets reached at their
// InternalIP (kwok also reports a Hostname no resolver knows; kubeadm's order puts InternalIP
// first too) over TLS verified with the drill's CA, presenting a kubelet client certificate,
// and the front-proxy certificate and CA for extension apiservers.
func (c *cluster) proxyAPIServerArgs() []string {
	b := c.d.bundle
	return []string{
		"--kubelet-preferred-address-types", "InternalIP,ExternalIP,Hostname",
		"--kubelet-client-certificate", c.d.kubeletClientCert,
		"--kubelet-client-key", c.d.kubeletClientKey,
		"--kubelet-certificate-authority", b.CACert,
		"--proxy-client-cert-file", b.FrontProxyClientCert,
		"--proxy-client-key-file", b.FrontProxyClientKey,
		"--requestheader-client-ca-file", b.FrontProxyCACert,
		"--requestheader-allowed-names", "front-proxy-client",
	}
}

// kwokNodeArgs are kwok's flags for its node server: nodes at the client's address with the
// kubelet port, served with the drill's serving certificate (which names the client).
func (c *cluster) kwokNodeArgs() ([]string, error) {
	x := c.ext
	x.logFile = filepath.Join(c.dir, "container.log")
	if err := os.WriteFile(x.logFile, []byte(criLine(1, "first line")+criLine(2, "second line")), 0o644); err != nil {
		return nil, err
	}
	cfg := filepath.Join(c.dir, "kwok-node.yaml")
	if err := os.WriteFile(cfg, upstream.KwokDebugConfig(x.logFile, echoPort, "through-the-vip"), 0o644); err != nil {
		return nil, err
	}
	addr := c.d.client.Addr.String()
	return []string{"--config=" + cfg, fmt.Sprintf("--node-port=%d", kubeletPort), fmt.Sprintf("--server-address=%s:%d", addr, kubeletPort),
		"--tls-cert-file=" + c.d.bundle.ServingCert, "--tls-private-key-file=" + c.d.bundle.ServingKey}, nil
}

// criLine is one line of a container log in the CRI format kwok reads.
func criLine(i int, text string) string {
	return fmt.Sprintf("2026-01-01T00:00:%02d.000000000Z stdout F %s\n", i%60, text)
}

// startBackends starts, in the client's namespace, the HTTP backend of pods/proxy and
// services/proxy (on the client's address) and the echo server kwok port-forwards to (on
// its loopback).
func (c *cluster) startBackends() error {
	x := c.ext
	listen := func(addr string) (net.Listener, error) {
		var l net.Listener
		err := c.d.client.Do(func() error {
			var err error
			l, err = net.Listen("tcp", addr)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("listen on %s in %s: %w", addr, c.d.client.NS, err)
		}
		x.listeners = append(x.listeners, l)
		return l, nil
	}
	web, err := listen(fmt.Sprintf("%s:%d", c.d.client.Addr, backendPort))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s %s", backendPod, r.Method, r.URL.RequestURI())
	}), ReadHeaderTimeout: 10 * time.Second}
	x.servers = append(x.servers, srv)
	go func() { _ = srv.Serve(web) }()
	echo, err := listen(fmt.Sprintf("127.0.0.1:%d", echoPort))
	if err != nil {
		return err
	}
	go func() {
		for {
			conn, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_, _ = io.Copy(conn, conn)
			}()
		}
	}()
	return nil
}

// startSampleEtcd runs sample-apiserver's own single etcd member in the drill process, its
// listeners made inside the client's namespace (loopback there). The gRPC gateway, which
// would dial the client URL from another thread (outside the namespace), is off.
func (c *cluster) startSampleEtcd() error {
	ec := embed.NewConfig()
	ec.Name = "wardle"
	ec.Dir = filepath.Join(c.dir, "wardle-etcd")
	cu, pu := url.URL{Scheme: "http", Host: sampleEtcd}, url.URL{Scheme: "http", Host: sampleEtcdP}
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	ec.EnableGRPCGateway = false
	ec.UnsafeNoFsync = true
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	ec.LogLevel = "error"
	var e *embed.Etcd
	if err := c.d.client.Do(func() error {
		var err error
		e, err = embed.StartEtcd(ec)
		return err
	}); err != nil {
		return fmt.Errorf("sample-apiserver's etcd: %w", err)
	}
	c.ext.etcd = e
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err := <-e.Err():
		return fmt.Errorf("sample-apiserver's etcd: %w", err)
	case <-time.After(time.Minute):
		return errors.New("sample-apiserver's etcd not ready after 1m")
	}
}

// startSampleAPIServer runs sample-apiserver on the client against its etcd, talking to the
// cluster through the VIP (delegated authentication and authorization, its informers), and
// waits until it is ready.
func (c *cluster) startSampleAPIServer(ctx context.Context) error {
	if err := c.startSampleEtcd(); err != nil {
		return err
	}
	kc, err := c.kubeconfig("wardle", c.vipURL(), "wardle-apiserver", []string{"system:masters"})
	if err != nil {
		return err
	}
	b := c.d.bundle
	p, err := c.d.client.start(c.d.bin[upstream.SampleAPIServer],
		"--secure-port", fmt.Sprint(samplePort), "--bind-address", c.d.client.Addr.String(),
		"--etcd-servers", "http://"+sampleEtcd,
		"--tls-cert-file", b.ServingCert, "--tls-private-key-file", b.ServingKey,
		"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--enable-priority-and-fairness=false")
	if err != nil {
		return err
	}
	c.ext.sample = p
	hc := healthClient(b, c.d.client, 2*time.Second)
	u := fmt.Sprintf("https://%s:%d/readyz", c.d.client.Addr, samplePort)
	if err := poll(ctx, 2*time.Minute, func() bool { return !p.Exited() && healthy(ctx, hc, u) }); err != nil {
		return fmt.Errorf("sample-apiserver not ready: %w\n%s", err, p.Tail(2000))
	}
	return nil
}

// registerSample creates the wardle namespace, the Service and Endpoints that point at
// sample-apiserver on the client, and the APIService with the drill's CA as caBundle.
func (c *cluster) registerSample(ctx context.Context) error {
	cs := c.cp
	if err := createRetrying(ctx, func() error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: wardleNS}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: sampleSvcName},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(samplePort)}}}}
	if err := createRetrying(ctx, func() error {
		_, err := cs.CoreV1().Services(wardleNS).Create(ctx, svc, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	eps := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: sampleSvcName}, Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: c.d.client.Addr.String()}}, Ports: []corev1.EndpointPort{{Name: "https", Port: samplePort}}}}}
	if err := createRetrying(ctx, func() error {
		_, err := cs.CoreV1().Endpoints(wardleNS).Create(ctx, eps, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	as := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": apiServiceName},
		"spec": map[string]any{"group": flunderGVR.Group, "version": flunderGVR.Version, "groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"service": map[string]any{"namespace": wardleNS, "name": sampleSvcName}, "caBundle": base64.StdEncoding.EncodeToString(c.d.bundle.CAPEM)},
	}}
	dyn, err := dynamic.NewForConfig(restConfig(c.d.bundle, c.d.client, c.vipURL(), 10*time.Second))
	if err != nil {
		return err
	}
	return createRetrying(ctx, func() error {
		_, err := dyn.Resource(apiServiceGVR).Create(ctx, as, metav1.CreateOptions{})
		return err
	})
}

// apiServiceAvailable reports the APIService's Available condition ("" when unknown).
func (c *cluster) apiServiceAvailable(ctx context.Context) (status, reason string) {
	dyn, err := dynamic.NewForConfig(restConfig(c.d.bundle, c.d.client, c.vipURL(), 5*time.Second))
	if err != nil {
		return "", err.Error()
	}
	u, err := dyn.Resource(apiServiceGVR).Get(ctx, apiServiceName, metav1.GetOptions{})
	if err != nil {
		return "", err.Error()
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, ci := range conds {
		if m, ok := ci.(map[string]any); ok && m["type"] == "Available" {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			return s, r
		}
	}
	return "", "no Available condition"
}

// createBackendPod makes a pod no scheduler takes (so kwok leaves it alone) whose IP is the
// client's, where the HTTP backend listens, and a Service without selector with Endpoints
// naming it: the targets of pods/proxy and services/proxy.
func (c *cluster) createBackendPod(ctx context.Context) error {
	cs := c.cp
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: backendPod}, Spec: corev1.PodSpec{SchedulerName: "drill-none",
		Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: backendPort}}}}}}
	if err := createRetrying(ctx, func() error {
		_, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	ip := c.d.client.Addr.String()
	if err := createRetrying(ctx, func() error {
		p, err := cs.CoreV1().Pods("default").Get(ctx, backendPod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		_, err = cs.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: backendPod}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(backendPort)}}}}
	if err := createRetrying(ctx, func() error {
		_, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	eps := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: backendPod}, Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: ip, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: backendPod}}},
		Ports:     []corev1.EndpointPort{{Name: "http", Port: backendPort}},
	}}}
	return createRetrying(ctx, func() error {
		_, err := cs.CoreV1().Endpoints("default").Create(ctx, eps, metav1.CreateOptions{})
		return err
	})
}

// kubectl runs kubectl in the client's namespace against the VIP and returns its stdout; an
// error carries its stderr.
func (c *cluster) kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := c.kubectlCmd(ctx, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, lastLines(errOut.String(), 3))
	}
	return out.String(), nil
}

func (c *cluster) kubectlCmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=/run/netns/" + c.d.client.NS, "--", "kubectl",
		"--kubeconfig=" + c.ext.kubectlKC, "--cache-dir=" + filepath.Join(c.dir, "kubectl-cache")}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return cmd.Process.Kill() }
	return cmd
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// kubectlStream is a running kubectl whose output arrives line by line.
type kubectlStream struct {
	cmd    *exec.Cmd
	lines  chan string
	errOut bytes.Buffer
	done   chan struct{}
}

func (c *cluster) kubectlStart(ctx context.Context, args ...string) (*kubectlStream, error) {
	s := &kubectlStream{cmd: c.kubectlCmd(ctx, args...), lines: make(chan string, 1000), done: make(chan struct{})}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.cmd.Stderr = &syncWriter{w: &s.errOut}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case s.lines <- sc.Text():
			default: // nobody reads that much
			}
		}
		_ = s.cmd.Wait()
	}()
	return s, nil
}

// next returns the next line of output, or an error if none comes within d.
func (s *kubectlStream) next(d time.Duration) (string, error) {
	select {
	case l := <-s.lines:
		return l, nil
	case <-s.done:
		select {
		case l := <-s.lines:
			return l, nil
		default:
		}
		return "", fmt.Errorf("kubectl exited: %v: %s", s.cmd.ProcessState, lastLines(s.stderr(), 3))
	case <-time.After(d):
		return "", fmt.Errorf("no output within %v: %s", d, lastLines(s.stderr(), 3))
	}
}

func (s *kubectlStream) stderr() string {
	if w, ok := s.cmd.Stderr.(*syncWriter); ok {
		w.mu.Lock()
		defer w.mu.Unlock()
	}
	return s.errOut.String()
}

// stop kills kubectl (the process the drill started, by its PID) and waits for it.
func (s *kubectlStream) stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
	}
	<-s.done
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// appendLog appends a line to the container log kwok serves.
func (c *cluster) appendLog(i int, text string) error {
	f, err := os.OpenFile(c.ext.logFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(criLine(i, text))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// proxyCheck is one path of issue 22's proof: run uses it with the name of a running pod.
type proxyCheck struct {
	path string
	run  func(ctx context.Context, pod string) error
}

// setUpProxyPaths starts what the checks use: the backends, the backend pod, and
// sample-apiserver registered through an APIService. An error here fails the aggregated
// check (and leaves the flunder watch out) but not the stack.
func (c *cluster) setUpProxyPaths(ctx context.Context) (sampleErr error, err error) {
	kc, err := c.kubeconfig("kubectl", c.vipURL(), "drill-kubectl", []string{"system:masters"})
	if err != nil {
		return nil, err
	}
	c.ext.kubectlKC = kc
	if err := c.startBackends(); err != nil {
		return nil, err
	}
	if err := c.createBackendPod(ctx); err != nil {
		return nil, fmt.Errorf("backend pod: %w", err)
	}
	if err := c.startSampleAPIServer(ctx); err != nil {
		return err, nil
	}
	if err := c.registerSample(ctx); err != nil {
		return fmt.Errorf("register sample-apiserver: %w", err), nil
	}
	return nil, nil
}

// checkProxyPaths uses every proxy path through the VIP, each retried for up to a minute,
// and returns a result per path.
func (c *cluster) checkProxyPaths(ctx context.Context) []pathResult {
	sampleErr, err := c.setUpProxyPaths(ctx)
	if err != nil {
		return []pathResult{{Path: "setup", Error: err.Error(), Attempts: 1}}
	}
	checks := []proxyCheck{
		{"aggregated API (APIService, flunders create + list)", func(ctx context.Context, _ string) error { return c.checkAggregatedAPI(ctx, sampleErr) }},
		{"pods/log (follow)", c.checkPodLog},
		{"pods/exec", c.checkPodExec},
		{"pods/exec (stdin)", c.checkPodExecStdin},
		{"pods/attach", c.checkPodAttach},
		{"pods/portforward (bytes both ways)", c.checkPortForward},
		{"pods/proxy", func(ctx context.Context, _ string) error {
			return c.rawGet(ctx, fmt.Sprintf("/api/v1/namespaces/default/pods/%s:%d/proxy/pod?x=1", backendPod, backendPort), backendPod+" GET /pod?x=1")
		}},
		{"nodes/proxy", func(ctx context.Context, _ string) error {
			return c.rawGet(ctx, "/api/v1/nodes/drill-node-0/proxy/healthz", "ok")
		}},
		{"services/proxy", func(ctx context.Context, _ string) error {
			return c.rawGet(ctx, "/api/v1/namespaces/default/services/"+backendPod+":http/proxy/svc", backendPod+" GET /svc")
		}},
	}
	pod := c.runningPodName(ctx)
	var out []pathResult
	for _, ch := range checks {
		r := pathResult{Path: ch.path}
		start := time.Now()
		var last error
		_ = poll(ctx, time.Minute, func() bool {
			r.Attempts++
			actx, cancel := context.WithTimeout(ctx, 45*time.Second)
			defer cancel()
			if pod == "" {
				pod = c.runningPodName(ctx)
			}
			last = ch.run(actx, pod)
			return last == nil
		})
		r.Seconds = seconds(time.Since(start))
		r.OK = last == nil
		if last != nil {
			r.Error = last.Error()
		}
		c.d.progress("%s proxy path %s: %s", c.spec.Name, ch.path, map[bool]string{true: "ok", false: "FAILED: " + r.Error}[r.OK])
		out = append(out, r)
		if ch.path == checks[0].path && r.OK {
			c.ext.flunders = true
		}
	}
	return out
}

// checkAggregatedAPI creates a flunder through the VIP and lists it, once the APIService
// is available (sampleErr: sample-apiserver did not start).
func (c *cluster) checkAggregatedAPI(ctx context.Context, sampleErr error) error {
	if sampleErr != nil {
		return sampleErr
	}
	// The aggregator checks a new APIService at once; wait for its verdict.
	var s, r string
	if err := poll(ctx, 30*time.Second, func() bool { s, r = c.apiServiceAvailable(ctx); return s == "True" }); err != nil {
		return fmt.Errorf("APIService %s Available=%s (%s): %w", apiServiceName, s, r, err)
	}
	name := fmt.Sprintf("through-the-vip-%d", time.Now().UnixNano()%1e6)
	if _, err := c.kubectl(ctx, fmt.Sprintf(`{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"name":%q,"namespace":%q}}`, name, wardleNS), "create", "-f", "-"); err != nil {
		return err
	}
	out, err := c.kubectl(ctx, "", "get", "flunders", "-n", wardleNS, "-o", "name")
	if err != nil {
		return err
	}
	if !strings.Contains(out, "flunder.wardle.example.com/"+name) {
		return fmt.Errorf("kubectl get flunders does not list %s: %q", name, out)
	}
	return nil
}

// checkPodLog follows the pod's log and sees a line appended meanwhile.
func (c *cluster) checkPodLog(ctx context.Context, pod string) error {
	s, err := c.kubectlStart(ctx, "logs", "-f", pod)
	if err != nil {
		return err
	}
	defer s.stop()
	if err := s.expect("first line", 20*time.Second); err != nil {
		return err
	}
	want := fmt.Sprintf("appended while following %d", time.Now().UnixNano())
	if err := c.appendLog(3, want); err != nil {
		return err
	}
	return s.expect(want, 20*time.Second)
}

// checkPodExec runs a command in the pod.
func (c *cluster) checkPodExec(ctx context.Context, pod string) error {
	out, err := c.kubectl(ctx, "", "exec", pod, "--", "sh", "-c", "echo $KWOK_EXEC")
	if err != nil {
		return err
	}
	if out != "through-the-vip\n" {
		return fmt.Errorf("kubectl exec printed %q, want %q", out, "through-the-vip\n")
	}
	return nil
}

// checkPodExecStdin runs a command in the pod that reads its stdin.
func (c *cluster) checkPodExecStdin(ctx context.Context, pod string) error {
	// head: kwok's local exec does not close the command's stdin at the stream's end.
	out, err := c.kubectl(ctx, "stdin goes through\nnot this one\n", "exec", "-i", pod, "--", "sh", "-c", "head -n 1 | tr a-z A-Z")
	if err != nil {
		return err
	}
	if out != "STDIN GOES THROUGH\n" {
		return fmt.Errorf("kubectl exec -i printed %q, want %q", out, "STDIN GOES THROUGH\n")
	}
	return nil
}

// checkPodAttach attaches to the pod and sees a line appended meanwhile.
func (c *cluster) checkPodAttach(ctx context.Context, pod string) error {
	s, err := c.kubectlStart(ctx, "attach", pod)
	if err != nil {
		return err
	}
	defer s.stop()
	// kwok attaches to the file from its end: append until a line arrives.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		want := fmt.Sprintf("attached line %d", i)
		if err := c.appendLog(10+i, want); err != nil {
			return err
		}
		if err := s.expect("attached line ", 300*time.Millisecond); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return err
		}
	}
}

// checkPortForward forwards a local port to the pod's echo port and sends 64 KiB through.
func (c *cluster) checkPortForward(ctx context.Context, pod string) error {
	s, err := c.kubectlStart(ctx, "port-forward", "pod/"+pod, ":80")
	if err != nil {
		return err
	}
	defer s.stop()
	re := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 80`)
	var port string
	for port == "" {
		l, err := s.next(20 * time.Second)
		if err != nil {
			return err
		}
		if m := re.FindStringSubmatch(l); m != nil {
			port = m[1]
		}
	}
	conn, err := c.d.client.DialContext(ctx, "tcp", "127.0.0.1:"+port)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	msg := make([]byte, 64<<10)
	_, _ = rand.Read(msg)
	werr := make(chan error, 1)
	go func() { _, err := conn.Write(msg); werr <- err }()
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, got); err != nil {
		return fmt.Errorf("read back through port-forward: %w", err)
	}
	if err := <-werr; err != nil {
		return fmt.Errorf("write through port-forward: %w", err)
	}
	if !bytes.Equal(got, msg) {
		return errors.New("port-forward echoed other bytes than were sent")
	}
	return nil
}

// expect reads lines until one contains want.
func (s *kubectlStream) expect(want string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		l, err := s.next(time.Until(deadline))
		if err != nil {
			return fmt.Errorf("waiting for %q: %w", want, err)
		}
		if strings.Contains(l, want) {
			return nil
		}
	}
}

// rawGet is kubectl get --raw path, whose output must be want.
func (c *cluster) rawGet(ctx context.Context, path, want string) error {
	out, err := c.kubectl(ctx, "", "get", "--raw", path)
	if err != nil {
		return err
	}
	if out != want {
		return fmt.Errorf("GET %s: %q, want %q", path, out, want)
	}
	return nil
}

// runningPodName is a Running pod of the drill's Deployment, "" if there is none.
func (c *cluster) runningPodName(ctx context.Context) string {
	l, err := c.cp.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + cpDeployment})
	if err != nil {
		return ""
	}
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			return p.Name
		}
	}
	return ""
}

// startFlunderInformer runs a client-go dynamic informer on flunders through the VIP
// (HTTP/2, one connection, as a controller's) that records every flunder added, and the
// connection-per-request client the scenarios' flunder writer uses.
func (c *cluster) startFlunderInformer(ctx context.Context) error {
	cfg := restConfig(c.d.bundle, c.d.client, c.vipURL(), 0)
	cfg.WarningHandler = rest.NoWarnings{} // flunders v1alpha1 are "deprecated"
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	wcfg, err := connPerRequestConfig(c.d.bundle, c.d.client, c.vipURL())
	if err != nil {
		return err
	}
	wcfg.WarningHandler = rest.NoWarnings{}
	if c.ext.dyn, err = dynamic.NewForConfig(wcfg); err != nil {
		return err
	}
	ictx, cancel := context.WithCancel(ctx)
	c.ext.stopInformer = cancel
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, wardleNS, nil)
	inf := f.ForResource(flunderGVR).Informer()
	clk := c.d.clk
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			c.ext.mu.Lock()
			c.ext.watch = append(c.ext.watch, watchEvent{Name: u.GetName(), At: clk.now()})
			c.ext.mu.Unlock()
		}
	}}); err != nil {
		return err
	}
	go inf.Run(ictx.Done())
	if err := poll(ctx, 30*time.Second, inf.HasSynced); err != nil {
		return fmt.Errorf("flunder informer did not sync through the VIP: %w", err)
	}
	return nil
}

// flunderWriter creates numbered flunders through dyn until ctx ends, one at a time with the
// client's 1 s timeout, at most one every interval, recording each. The request the end of
// ctx cuts off is not recorded.
func flunderWriter(ctx context.Context, clk clock, dyn dynamic.Interface, run string, interval time.Duration, rec func(request)) {
	res := dyn.Resource(flunderGVR).Namespace(wardleNS)
	for i := 1; ctx.Err() == nil; i++ {
		q := request{Op: opCreate, Name: fmt.Sprintf("%s-f-%06d", run, i)}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
			"metadata": map[string]any{"name": q.Name, "namespace": wardleNS}}}
		q.Start = clk.now()
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		_, err := res.Create(rctx, u, metav1.CreateOptions{})
		cancel()
		q.End = clk.now()
		if ctx.Err() != nil && err != nil {
			return
		}
		q.OK = err == nil
		if err != nil {
			q.Err = err.Error()
		}
		rec(q)
		if wait := interval - (q.End - q.Start); wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
	}
}

// flunderEvents returns the flunder informer's events for objects of run.
func (x *extensions) flunderEvents(run string) []watchEvent {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []watchEvent
	for _, e := range x.watch {
		if strings.HasPrefix(e.Name, run+"-f-") {
			out = append(out, e)
		}
	}
	return out
}

// stop ends everything --proxy-paths started for the stack.
func (x *extensions) stop() {
	if x == nil {
		return
	}
	if x.stopInformer != nil {
		x.stopInformer()
	}
	if x.sample != nil {
		x.sample.Signal(syscall.SIGKILL)
		<-x.sample.Done()
	}
	for _, s := range x.servers {
		_ = s.Close()
	}
	for _, l := range x.listeners {
		_ = l.Close()
	}
	if x.etcd != nil {
		x.etcd.Close()
	}
}

// writeKubeletClientCert issues the apiservers' kubelet client certificate from the drill's
// CA (kwok's node server asks for none, but the apiservers present it as they would to a
// kubelet).
func (d *drill) writeKubeletClientCert() error {
	certPEM, keyPEM, err := d.bundle.IssueClient("kube-apiserver-kubelet-client", []string{"kubeadm:cluster-admins"}, 24*time.Hour)
	if err != nil {
		return fmt.Errorf("kubelet client certificate: %w", err)
	}
	d.kubeletClientCert = filepath.Join(d.dir, "pki", "apiserver-kubelet-client.crt")
	d.kubeletClientKey = filepath.Join(d.dir, "pki", "apiserver-kubelet-client.key")
	if err := os.WriteFile(d.kubeletClientCert, certPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(d.kubeletClientKey, keyPEM, 0o600)
}

// proxyPathFailures are the drill's hard failures among the proxy-path checks.
func proxyPathFailures(paths map[string][]pathResult) []string {
	var out []string
	for _, stack := range allStacks {
		for _, r := range paths[stack] {
			if !r.OK {
				out = append(out, fmt.Sprintf("%s proxy path %s: %s", stack, r.Path, r.Error))
			}
		}
	}
	return out
}
