//lint:file-ignore SA1019 services/proxy reads core/v1 Endpoints, as kube-apiserver 1.37 does

package upstream_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/internal/testenv"
	"github.com/hacp/hacp/internal/testpki"
	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/certs"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// criLine is one line of a container log in the CRI format kwok reads.
func criLine(i int, text string) string {
	return fmt.Sprintf("2026-01-01T00:00:%02d.000000000Z stdout F %s\n", i, text)
}

// echoServer accepts TCP connections on loopback and echoes what it reads.
func echoServer(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().(*net.TCPAddr).Port
}

// negotiatedLogs are the lines of kubectl's -v=4 log that say it speaks WebSocket: for exec
// and attach (v5.channel.k8s.io) and for port-forward (SPDY tunnelled in WebSocket).
// client-go made them structured log lines, remotecommand's in 1.36, portforward's in 1.37.
func negotiatedLogs(t *testing.T) (remoteCommand, portForward string) {
	t.Helper()
	minor, dispatcher := testenv.KubectlMinor(t, testenv.Kubectl(t))
	if dispatcher {
		minor = 33 // the gcloud SDK's dispatcher runs kubectl 1.33 at most
	}
	remoteCommand, portForward = "The subprotocol is v5.channel.k8s.io", "negotiated protocol: portforward.k8s.io"
	if minor >= 36 {
		remoteCommand = `"Subprotocol negotiated" protocol="v5.channel.k8s.io"`
	}
	if minor >= 37 {
		portForward = `"Negotiation complete" protocol="portforward.k8s.io"`
	}
	return remoteCommand, portForward
}

// startKwokNode starts hacp and kwok's node server for node kwok-node-0 (serving logs from
// the returned file, exec on this host, attach to that file and port-forward to an echo
// server) and waits until kwok runs pod default/app there.
func startKwokNode(t *testing.T) (*server.Server, *kubernetes.Clientset, string) {
	t.Helper()
	testenv.Kubectl(t)
	kwokBin := upstream.Binary(t, upstream.Kwok)
	stages, err := upstream.KwokStages(context.Background(), upstream.Root())
	if err != nil {
		testenv.Require(t, false, "kwok stages: "+err.Error())
	}
	dir := t.TempDir()
	ca := testpki.NewCA(t, "kubelet-ca")
	servingCert, servingKey := ca.Serving(t, "kwok")
	clientCert, clientKey := ca.Client(t, "kube-apiserver-kubelet-client")
	srv := servertest.New(t, func(c *server.Config) {
		c.KubeletClientCertificate = testpki.WriteFile(t, dir, "kubelet-client.crt", clientCert)
		c.KubeletClientKey = testpki.WriteFile(t, dir, "kubelet-client.key", clientKey)
		c.KubeletCertificateAuthority = testpki.WriteFile(t, dir, "kubelet-ca.crt", ca.PEM)
		c.KubeletPreferredAddressType = []string{"InternalIP"}
		c.ProxyAllowLoopback = true // nodes/proxy to kwok on 127.0.0.1
	})
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, srv))
	ctx, cancel := context.WithTimeout(context.Background(), cpWait)
	defer cancel()

	logFile := filepath.Join(dir, "container.log")
	if err := os.WriteFile(logFile, []byte(criLine(1, "first line")+criLine(2, "second line")), 0o644); err != nil {
		t.Fatal(err)
	}
	echoPort := echoServer(t)
	debugCfg := testpki.WriteFile(t, dir, "kwok-debug.yaml", upstream.KwokDebugConfig(logFile, echoPort, "through-hacp"))
	kwokKC := filepath.Join(dir, "kwok.kubeconfig")
	if err := certs.WriteClientKubeconfig(kwokKC, srv.URL(), srv.Certs(), "kwok", []string{"system:masters"}, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	nodePort := freePort(t)
	startProc(t, dir, "kwok", kwokBin,
		"--kubeconfig="+kwokKC,
		"--config="+stages,
		"--config="+debugCfg,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+upstream.KwokAnnotation+"=fake",
		"--cidr=10.77.128.0/20",
		"--node-ip=127.0.0.1",
		"--node-port="+nodePort,
		"--server-address=127.0.0.1:"+nodePort,
		"--tls-cert-file="+testpki.WriteFile(t, dir, "kwok.crt", servingCert),
		"--tls-private-key-file="+testpki.WriteFile(t, dir, "kwok.key", servingKey),
	)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-node-0", Annotations: map[string]string{upstream.KwokAnnotation: "fake"},
		Labels: map[string]string{"kubernetes.io/hostname": "kwok-node-0", "type": "kwok"}}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: corev1.PodSpec{NodeName: "kwok-node-0",
		Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "kwok runs the pod on a node with its kubelet endpoint", func() (bool, string) {
		n, err := cs.CoreV1().Nodes().Get(ctx, "kwok-node-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		p, err := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return n.Status.DaemonEndpoints.KubeletEndpoint.Port > 0 && p.Status.Phase == corev1.PodRunning,
			fmt.Sprintf("kubelet port %d, pod %s", n.Status.DaemonEndpoints.KubeletEndpoint.Port, p.Status.Phase)
	})
	return srv, cs, logFile
}

// TestKwokProxySubresources: kubectl logs (-f, --tail), exec (-i, and -it on a pty), attach,
// port-forward, nodes/proxy and services/proxy (also through kubectl proxy) through hacp to
// kwok's node server, which hacp finds from the Node kwok keeps (InternalIP and
// daemonEndpoints) and reaches over TLS verified with the kubelet CA, presenting its kubelet
// client certificate.
func TestKwokProxySubresources(t *testing.T) {
	// services/proxy needs an endpoint that is not loopback: the test runs in a namespace of
	// its own that has one, and no network to build kwok in, so kwok is ready first.
	upstream.Binary(t, upstream.Kwok)
	if _, err := upstream.KwokStages(context.Background(), upstream.Root()); err != nil {
		testenv.Require(t, false, "kwok stages: "+err.Error())
	}
	addr, inHost := netns.RerunInHost(t, "hkw-", "10.77.97")
	if !inHost {
		return
	}
	srv, cs, logFile := startKwokNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), cpWait)
	defer cancel()
	kubectl := func(args ...string) string {
		t.Helper()
		cctx, ccancel := context.WithTimeout(ctx, cpWait)
		defer ccancel()
		out, err := exec.CommandContext(cctx, testenv.Kubectl(t), append([]string{"--kubeconfig=" + srv.KubeconfigPath()}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	t.Run("logs", func(t *testing.T) {
		if out := kubectl("logs", "app"); out != "first line\nsecond line\n" {
			t.Fatalf("kubectl logs: %q", out)
		}
		if out := kubectl("logs", "app", "-c", "main", "--tail=1"); out != "second line\n" {
			t.Fatalf("kubectl logs --tail=1: %q", out)
		}
		if out := kubectl("logs", "app", "--timestamps", "--limit-bytes=40"); !strings.HasPrefix(out, "2026-01-01T00:00:01") || len(out) > 40 {
			t.Fatalf("kubectl logs --timestamps --limit-bytes=40: %q", out)
		}
		out, err := exec.CommandContext(ctx, testenv.Kubectl(t), "--kubeconfig="+srv.KubeconfigPath(), "logs", "app", "-c", "nope").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "container nope is not valid for pod app") {
			t.Fatalf("kubectl logs -c nope: %v %s", err, out)
		}
	})

	t.Run("logs -f", func(t *testing.T) {
		lines := startKubectlStream(t, srv.KubeconfigPath(), "logs", "-f", "app")
		for _, want := range []string{"first line", "second line"} {
			if got := lines.next(t); got != want {
				t.Fatalf("kubectl logs -f: %q, want %q", got, want)
			}
		}
		f, err := os.OpenFile(logFile, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString(criLine(3, "third line, written while following"))
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := lines.next(t); got != "third line, written while following" {
			t.Fatalf("kubectl logs -f after an append: %q", got)
		}
	})

	// kubectl (1.30 and newer) asks for WebSocket first (v5.channel.k8s.io for exec and attach, SPDY
	// tunnelled in WebSocket for port-forward), which hacp translates to SPDY for kwok, and
	// falls back to SPDY when the upgrade is refused; with its websocket gates off it
	// speaks SPDY only, which hacp passes through.
	metrics := srv.Connector().Metrics()
	v5, tunnelled := negotiatedLogs(t)
	for _, mode := range []struct {
		name      string
		env       []string
		websocket bool
	}{
		{"websocket", nil, true},
		{"spdy", []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false", "KUBECTL_PORT_FORWARD_WEBSOCKETS=false"}, false},
	} {
		// checkLog asserts from kubectl's -v=4 log which protocol it used.
		checkLog := func(t *testing.T, log, negotiated string) {
			t.Helper()
			for _, fallback := range []string{"RemoteCommand fallback", "fallback to secondary dialer"} {
				if strings.Contains(log, fallback) {
					t.Fatalf("kubectl fell back to SPDY (%q):\n%s", fallback, log)
				}
			}
			if got := strings.Contains(log, negotiated); got != mode.websocket {
				t.Fatalf("kubectl log has %q: %v, want %v:\n%s", negotiated, got, mode.websocket, log)
			}
		}
		run := func(t *testing.T, stdin string, args ...string) (string, string, error) {
			t.Helper()
			cctx, ccancel := context.WithTimeout(ctx, cpWait)
			defer ccancel()
			cmd := exec.CommandContext(cctx, testenv.Kubectl(t), append([]string{"--kubeconfig=" + srv.KubeconfigPath(), "-v=4"}, args...)...)
			cmd.Env = append(os.Environ(), mode.env...)
			cmd.Stdin = strings.NewReader(stdin)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			return stdout.String(), stderr.String(), err
		}

		t.Run("exec/"+mode.name, func(t *testing.T) {
			streamsEnded(t, srv) // the streams of earlier subtests are counted
			before := counterSum(t, metrics.Translated)
			// kwok runs the command on this host, with the environment it was configured with.
			out, log, err := run(t, "", "exec", "app", "--", "sh", "-c", "echo $KWOK_EXEC")
			if err != nil || out != "through-hacp\n" {
				t.Fatalf("kubectl exec: %v %q\n%s", err, out, log)
			}
			checkLog(t, log, v5)
			// head, not cat: kwok's local exec does not close the command's stdin when the
			// stream's ends, so the command must end by itself.
			out, log, err = run(t, "stdin goes through\nnot this one\n", "exec", "-i", "app", "--", "sh", "-c", "head -n 1 | tr a-z A-Z")
			if err != nil || out != "STDIN GOES THROUGH\n" {
				t.Fatalf("kubectl exec -i: %v %q\n%s", err, out, log)
			}
			checkLog(t, log, v5)
			out, log, err = run(t, "", "exec", "app", "--", "sh", "-c", "echo to stderr >&2; exit 3")
			// kwok reports a command's failure as an error status (a kubelet reports the exit
			// code, which kubectl then exits with): the failure comes back through hacp.
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 || !strings.Contains(log, "exit status 3") || !strings.Contains(log, "to stderr") {
				t.Fatalf("kubectl exec of exit 3: %v %q\n%s", err, out, log)
			}
			checkLog(t, log, v5)
			streamsEnded(t, srv)
			after := counterSum(t, metrics.Translated)
			if want := before + map[bool]float64{true: 3}[mode.websocket]; after != want {
				t.Fatalf("apiserver_stream_translator_requests_total went from %v to %v, want %v", before, after, want)
			}
		})

		t.Run("exec -it/"+mode.name, func(t *testing.T) {
			// kubectl on a pseudo-terminal, as a user types at it; kwok runs the shell on a
			// pty of its own and applies the sizes kubectl sends.
			cmd := exec.Command(testenv.Kubectl(t), "--kubeconfig="+srv.KubeconfigPath(), "-v=4", "exec", "-it", "app", "--", "sh")
			cmd.Env = append(os.Environ(), mode.env...)
			term, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
			if err != nil {
				t.Fatal(err)
			}
			screen := &terminalOutput{}
			readDone := make(chan struct{})
			go func() {
				defer close(readDone)
				_, _ = io.Copy(screen, term)
			}()
			waitDone := make(chan error, 1)
			go func() { waitDone <- cmd.Wait() }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				term.Close()
				<-readDone
			})
			typeUntil := func(line, want string) {
				t.Helper()
				// The shell may not read what is typed before it runs, so type again until
				// the answer shows (each answer computed, so an echo of the line is no match).
				waitUntil(t, "terminal shows "+want, func() (bool, string) {
					if strings.Contains(screen.String(), want) {
						return true, ""
					}
					if _, err := term.Write([]byte(line + "\r")); err != nil {
						return false, err.Error()
					}
					ok := screen.waitFor(want, 2*time.Second)
					return ok, screen.String()
				})
			}
			typeUntil("echo typed-$((6*7))", "typed-42")
			typeUntil("stty size", "40 100")
			if err := pty.Setsize(term, &pty.Winsize{Rows: 50, Cols: 120}); err != nil {
				t.Fatal(err)
			}
			// kubectl sends the new size on SIGWINCH; kwok resizes its pty.
			typeUntil("stty size", "50 120")
			if _, err := term.Write([]byte("exit\r")); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-waitDone:
				if err != nil {
					t.Fatalf("kubectl exec -it after exit: %v\n%s", err, screen.String())
				}
			case <-time.After(cpWait):
				t.Fatalf("kubectl exec -it did not end after exit:\n%s", screen.String())
			}
			checkLog(t, screen.String(), v5)
		})

		t.Run("port-forward/"+mode.name, func(t *testing.T) {
			streamsEnded(t, srv)
			before := counterSum(t, metrics.Tunneled)
			lines := startKubectlStreamEnv(t, mode.env, srv.KubeconfigPath(), "-v=4", "port-forward", "pod/app", ":80")
			var local string
			var log strings.Builder
			re := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 80`)
			for local == "" {
				l := lines.next(t)
				log.WriteString(l + "\n")
				if m := re.FindStringSubmatch(l); m != nil {
					local = m[1]
				}
			}
			for i := range 3 { // each connection is its own stream
				c, err := net.Dial("tcp", "127.0.0.1:"+local)
				if err != nil {
					t.Fatal(err)
				}
				msg := fmt.Sprintf("through port-forward %d\n", i)
				if _, err := c.Write([]byte(msg)); err != nil {
					t.Fatal(err)
				}
				got, err := bufio.NewReader(c).ReadString('\n')
				c.Close()
				if err != nil || got != msg {
					t.Fatalf("echo through kubectl port-forward: %q %v", got, err)
				}
			}
			for l, ok := lines.poll(t, 0); ok; l, ok = lines.poll(t, 0) {
				log.WriteString(l + "\n")
			}
			checkLog(t, log.String(), tunnelled)
			// kubectl opens one connection for all the forwarded ones.
			after := counterSum(t, metrics.Tunneled)
			if want := before + map[bool]float64{true: 1}[mode.websocket]; after != want {
				t.Fatalf("apiserver_stream_tunnel_requests_total went from %v to %v, want %v", before, after, want)
			}
		})

		t.Run("attach/"+mode.name, func(t *testing.T) {
			// kwok attaches to the log file from its end: lines appended while attached arrive.
			// kubectl says nothing when it is attached, so lines are appended until one does.
			stream := startKubectlStreamEnv(t, mode.env, srv.KubeconfigPath(), "-v=4", "attach", "app")
			f, err := os.OpenFile(logFile, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var log strings.Builder
			for i := 0; ; i++ {
				if _, err := f.WriteString(criLine(10+i%50, fmt.Sprintf("attached line %d", i))); err != nil {
					t.Fatal(err)
				}
				l, ok := stream.poll(t, 200*time.Millisecond)
				for ; ok && !strings.HasPrefix(l, "attached line "); l, ok = stream.poll(t, 0) {
					log.WriteString(l + "\n") // (kubectl also prints a hint about a command prompt)
				}
				if ok {
					break
				}
				if i > 5*60*5 {
					t.Fatal("kubectl attach saw none of the appended lines")
				}
			}
			checkLog(t, log.String(), v5)
		})
	}

	t.Run("nodes/proxy", func(t *testing.T) {
		if out := kubectl("get", "--raw", "/api/v1/nodes/kwok-node-0/proxy/healthz"); out != "ok" {
			t.Fatalf("nodes/proxy/healthz: %q", out)
		}
	})

	t.Run("services/proxy", func(t *testing.T) {
		backend := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "web %s %s", r.Method, r.URL.RequestURI())
		}), ReadHeaderTimeout: 10 * time.Second}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = backend.Serve(l) }()
		t.Cleanup(func() { _ = backend.Close() })
		// A pod no node runs (kwok ignores it), whose IP is the host's, where a relay to the
		// loopback server listens.
		relay := netns.ForwardTCP(t, addr, l.Addr().String())
		web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}
		web, err = cs.CoreV1().Pods("default").Create(ctx, web, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		web.Status.PodIP, web.Status.PodIPs = addr.String(), []corev1.PodIP{{IP: addr.String()}}
		if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, web, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
		if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eps := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: addr.String(), TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0"}}},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: int32(relay)}},
		}}}
		if _, err := cs.CoreV1().Endpoints("default").Create(ctx, eps, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if out := kubectl("get", "--raw", "/api/v1/namespaces/default/services/web:http/proxy/hello?x=1"); out != "web GET /hello?x=1" {
			t.Fatalf("services/proxy: %q", out)
		}
		// kubectl proxy: plain HTTP on loopback, the same paths.
		lines := startKubectlStream(t, srv.KubeconfigPath(), "proxy", "--port=0")
		var addr string
		re := regexp.MustCompile(`Starting to serve on (127\.0\.0\.1:\d+)`)
		for addr == "" {
			if m := re.FindStringSubmatch(lines.next(t)); m != nil {
				addr = m[1]
			}
		}
		for path, want := range map[string]string{
			"/api/v1/namespaces/default/services/http:web:80/proxy/via/kubectl-proxy": "web GET /via/kubectl-proxy",
			"/api/v1/nodes/kwok-node-0/proxy/healthz":                                 "ok",
		} {
			resp, err := http.Get("http://" + addr + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(b) != want {
				t.Fatalf("kubectl proxy %s: %d %q, want %q", path, resp.StatusCode, b, want)
			}
		}
	})
}

// kubectlRace matches what kubectl 1.32 and 1.33 log when their WebSocket reader starts before
// the streams exist and the server's first message, the empty "stream is up" one that
// kube-apiserver sends too, arrives in between (client-go 1.36 waits for the streams first).
var kubectlRace = regexp.MustCompile(`(?m)^E\d{4} [0-9:.]+ +\d+ websocket\.go:\d+\] Unknown stream id \d+, discarding message\n`)

// unexpectedStderr is kubectl's stderr without the lines of that client race.
func unexpectedStderr(s string) string { return kubectlRace.ReplaceAllString(s, "") }

// TestKwokStreamsEnd: streams through hacp to kwok leave no goroutine in the apiserver once
// their kubectl ends, whether the stream ended by itself or kubectl was killed in the middle:
// exec over WebSocket (translated to SPDY) and over SPDY, attach, port-forward (SPDY in
// WebSocket) and logs -f; nor do a WebSocket exec and a port-forward to a node agent that
// accepts connections and never answers.
func TestKwokStreamsEnd(t *testing.T) {
	srv, cs, _ := startKwokNode(t)
	kc := srv.KubeconfigPath()
	v5, _ := negotiatedLogs(t)
	spdyOnly := []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false", "KUBECTL_PORT_FORWARD_WEBSOCKETS=false"}
	// until runs kubectl -v=4 until it prints a line matching re, then kills it.
	until := func(env []string, re string, args ...string) {
		t.Helper()
		s := startKubectlStreamEnv(t, env, kc, append([]string{"-v=4"}, args...)...)
		defer s.stop()
		for l := s.next(t); !regexp.MustCompile(re).MatchString(l); l = s.next(t) {
		}
	}
	round := func(n int) {
		t.Helper()
		for range n {
			for _, env := range [][]string{nil, spdyOnly} {
				cctx, ccancel := context.WithTimeout(context.Background(), cpWait)
				cmd := exec.CommandContext(cctx, testenv.Kubectl(t), "--kubeconfig="+kc, "exec", "app", "--", "echo", "done")
				cmd.Env = append(os.Environ(), env...)
				var stdout, stderr strings.Builder
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				ccancel()
				if err != nil || stdout.String() != "done\n" || unexpectedStderr(stderr.String()) != "" {
					t.Fatalf("kubectl exec (%v): %v %q, stderr %q", env, err, stdout.String(), stderr.String())
				}
				// (kwok ends the command when its stream goes; sleep bounds it if not)
				until(env, `^sleeping$`, "exec", "app", "--", "sh", "-c", "echo sleeping; sleep 120")
				until(env, `Forwarding from 127\.0\.0\.1`, "port-forward", "pod/app", ":80")
			}
			until(nil, regexp.QuoteMeta(v5), "attach", "app")
			until(nil, `first line`, "logs", "-f", "app")
		}
		streamsEnded(t, srv)
	}
	round(1) // warm-up: pools and connections that stay are in the baseline
	base := runtime.NumGoroutine()
	round(5)
	waitUntil(t, "goroutines back", func() (bool, string) {
		n := runtime.NumGoroutine()
		return n <= base+5, fmt.Sprintf("%d goroutines, %d before the streams", n, base)
	})

	// A node agent that accepts and never answers.
	ctx, cancel := context.WithTimeout(context.Background(), cpWait)
	defer cancel()
	dead := testenv.NewSilentListener(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dead"}}
	node, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(dead.Addr().(*net.TCPAddr).Port)
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stuck"}, Spec: corev1.PodSpec{NodeName: "dead",
		Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}}}
	if pod, err = cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning // kubectl port-forward wants a running pod
	if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	base = runtime.NumGoroutine()
	for range 5 {
		for _, args := range [][]string{{"exec", "stuck", "--", "ls"}, {"port-forward", "pod/stuck", ":80"}} {
			before := dead.Accepted()
			s := startKubectlStream(t, kc, args...)
			waitUntil(t, "the dead node agent accepts", func() (bool, string) {
				n := dead.Accepted()
				return n > before, fmt.Sprintf("%d accepted", n)
			})
			s.stop()
		}
	}
	streamsEnded(t, srv)
	waitUntil(t, "goroutines back after a dead node agent", func() (bool, string) {
		n := runtime.NumGoroutine()
		return n <= base+5, fmt.Sprintf("%d goroutines, %d before", n, base)
	})
}

// kubectlStream is a kubectl that keeps running (logs -f, port-forward, proxy), its output
// read line by line.
type kubectlStream struct {
	lines chan string
	// stop kills kubectl and waits until it and the reading of its output have ended.
	stop func()
}

// startKubectlStream runs kubectl with args until the test ends (it is killed by its PID).
func startKubectlStream(t *testing.T, kubeconfig string, args ...string) *kubectlStream {
	t.Helper()
	return startKubectlStreamEnv(t, nil, kubeconfig, args...)
}

// startKubectlStreamEnv is startKubectlStream with env added to kubectl's environment.
func startKubectlStreamEnv(t *testing.T, env []string, kubeconfig string, args ...string) *kubectlStream {
	t.Helper()
	cmd := exec.Command(testenv.Kubectl(t), append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		pw.Close()
		close(done)
	}()
	s := &kubectlStream{lines: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	s.stop = sync.OnceFunc(func() {
		_ = cmd.Process.Kill()
		<-done
		for range s.lines {
		}
	})
	t.Cleanup(s.stop)
	return s
}

// next returns kubectl's next output line, failing the test when kubectl ends or says
// nothing for a while.
func (s *kubectlStream) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			t.Fatal("kubectl exited")
		}
		return l
	case <-time.After(cpWait):
		t.Fatal("kubectl said nothing")
	}
	return ""
}

// poll returns kubectl's next output line if it comes within wait.
func (s *kubectlStream) poll(t *testing.T, wait time.Duration) (string, bool) {
	t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			t.Fatal("kubectl exited")
		}
		return l, true
	case <-time.After(wait):
		return "", false
	}
}

// terminalOutput collects what a pseudo-terminal shows.
type terminalOutput struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
}

func (o *terminalOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	if o.changed != nil {
		close(o.changed)
		o.changed = nil
	}
	return len(p), nil
}

func (o *terminalOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor reports whether the output shows want within wait.
func (o *terminalOutput) waitFor(want string, wait time.Duration) bool {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		o.mu.Lock()
		if strings.Contains(o.buf.String(), want) {
			o.mu.Unlock()
			return true
		}
		if o.changed == nil {
			o.changed = make(chan struct{})
		}
		changed := o.changed
		o.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			return false
		}
	}
}

// streamsEnded waits until srv has no exec, attach or port-forward stream open.
func streamsEnded(t *testing.T, srv *server.Server) {
	t.Helper()
	waitUntil(t, "streams closed", func() (bool, string) {
		open := srv.Connector().Tracker.Open()
		return open == 0, fmt.Sprintf("%d streams open", open)
	})
}

// counterSum is the sum of a counter over all its labels.
func counterSum(t *testing.T, c *prometheus.CounterVec) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	var sum float64
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		sum += d.GetCounter().GetValue()
	}
	return sum
}

// waitUntil polls cond until it holds, failing with its last word after cpWait.
func waitUntil(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(cpWait); ; {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, cpWait, last)
		}
		time.Sleep(100 * time.Millisecond) // poll
	}
}
