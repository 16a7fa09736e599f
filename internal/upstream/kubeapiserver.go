package upstream

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// KubeAPIServerArgs prepares dir for a standalone kube-apiserver peer (a fresh
// ServiceAccount key pair, and a static token file giving token to an admin in
// system:masters, since AlwaysAllow turns anonymous requests away) and returns its command
// line: etcdURL, loopback port, self-signed serving certificates under dir, AlwaysAllow,
// hacp's Service range, no endpoint reconciler, and no ServiceAccount admission (no
// controller-manager creates the default accounts). Callers append what they need.
func KubeAPIServerArgs(dir, etcdURL, port, token string) ([]string, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"sa.key":     pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		"sa.pub":     pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
		"tokens.csv": fmt.Appendf(nil, "%s,admin,,\"system:masters\"\n", token),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--secure-port=" + port,
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
		"--authorization-mode=AlwaysAllow",
		"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
		"--service-cluster-ip-range=10.96.0.0/12", // hacp's range
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false",
		"--disable-admission-plugins=ServiceAccount",
	}, nil
}

// KubeAPIServerToken is the admin bearer token StartKubeAPIServer gives its peer.
const KubeAPIServerToken = "interop-token"

// KubeAPIServer is a running kube-apiserver peer (see StartKubeAPIServer).
type KubeAPIServer struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited, with its status in exitErr
	exitErr error
	// Config is an admin client of it (the static token, its self-signed certificate unchecked).
	Config *rest.Config
	// Log is the file its output goes to.
	Log string
}

// StartKubeAPIServer runs bin (a kube-apiserver) on etcdURL with the arguments of
// KubeAPIServerArgs plus extra, its files and log under dir, on a free loopback port, and
// waits up to two minutes for /readyz. On error the process is gone.
func StartKubeAPIServer(bin, etcdURL, dir string, extra ...string) (*KubeAPIServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	args, err := KubeAPIServerArgs(dir, etcdURL, port, KubeAPIServerToken)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "kube-apiserver.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, append(args, extra...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The peer dies with the test or program that started it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	k := &KubeAPIServer{cmd: cmd, done: make(chan struct{}), Log: logPath,
		Config: &rest.Config{Host: "https://127.0.0.1:" + port, TLSClientConfig: rest.TLSClientConfig{Insecure: true},
			BearerToken: KubeAPIServerToken, QPS: 1000, Burst: 1000}}
	go func() { k.exitErr = cmd.Wait(); close(k.done) }()
	if err := k.waitReady(2 * time.Minute); err != nil {
		k.Kill()
		return nil, err
	}
	return k, nil
}

// waitReady polls /readyz until it answers 200, the process exits or timeout passes.
func (k *KubeAPIServer) waitReady(timeout time.Duration) error {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer hc.CloseIdleConnections()
	for deadline := time.Now().Add(timeout); ; {
		select {
		case <-k.done:
			return fmt.Errorf("kube-apiserver exited: %v (log %s)", k.exitErr, k.Log)
		default:
		}
		var last string
		req, _ := http.NewRequest(http.MethodGet, k.Config.Host+"/readyz?verbose", nil)
		req.Header.Set("Authorization", "Bearer "+KubeAPIServerToken)
		if resp, err := hc.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, b)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready within %s (log %s): %s", timeout, k.Log, last)
		}
		time.Sleep(200 * time.Millisecond) // poll
	}
}

// Done is closed when the process has exited; Err then says how.
func (k *KubeAPIServer) Done() <-chan struct{} { return k.done }

// Err is the process's exit status once Done is closed.
func (k *KubeAPIServer) Err() error { return k.exitErr }

// Stop ends kube-apiserver with SIGTERM, as a kubelet would, and waits up to a minute for
// it; then it kills it and says so.
func (k *KubeAPIServer) Stop() error {
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
		return nil
	case <-time.After(time.Minute):
		k.Kill()
		return errors.New("kube-apiserver did not stop within 1m of SIGTERM")
	}
}

// Kill ends the process at once, if it still runs, and waits for it.
func (k *KubeAPIServer) Kill() {
	select {
	case <-k.done:
	default:
		_ = k.cmd.Process.Kill()
		<-k.done
	}
}

// LogTail is the last n bytes of the log.
func (k *KubeAPIServer) LogTail(n int) string {
	b, err := os.ReadFile(k.Log)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
