package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	hnetns "github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/certs"
)

// Ports and VRRP settings, as the drill's.
const (
	apiPort  = 6443
	lbPort   = 8443
	syncPort = 8444
	vrid     = 51
)

var priorities = []int{101, 100, 99}

// stack is one server running on the three masters, with its plane and control plane.
type stack struct {
	b    *bench
	name string
	dir  string
	// server: per master the processes whose CPU and memory count as the apiserver's
	// (the apiserver, and kube-apiserver's etcd).
	server map[string][]*hnetns.Proc
	kwok   *hnetns.Proc
}

func numCPU() int { return runtime.NumCPU() }

func kubeVersion() string { return upstream.KubernetesVersion }

// upstreamBinaries finds (building once under upstream.Root()) the upstream programs.
func (b *bench) upstreamBinaries(ctx context.Context) error {
	for _, name := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", upstream.Kwok} {
		path, err := upstream.Build(ctx, upstream.Root(), name)
		if err != nil {
			return fmt.Errorf("upstream %s: %w", name, err)
		}
		b.bin[name] = path
	}
	stages, err := upstream.KwokStages(ctx, upstream.Root())
	if err != nil {
		return err
	}
	b.bin["kwok-stages"] = stages
	return nil
}

func (s *stack) launch(h *hnetns.Host, prog string, args ...string) (*hnetns.Proc, error) {
	log := filepath.Join(s.dir, "logs", fmt.Sprintf("%s-%s.log", h.Name, filepath.Base(prog)))
	return h.Launch(log, prog, args...)
}

func peerURL(m *hnetns.Host) string { return fmt.Sprintf("http://%s:2380", m.Addr) }
func apiURL(m *hnetns.Host) string  { return fmt.Sprintf("https://%s:%d", m.Addr, apiPort) }
func vipURL() string                { return fmt.Sprintf("https://%s:%d", vipAddr, lbPort) }

func (s *stack) initialCluster() string {
	var initial []string
	for _, o := range s.b.masters {
		initial = append(initial, o.Name+"="+peerURL(o))
	}
	return strings.Join(initial, ",")
}

// startServer starts the server (and its etcd member) on m.
func (s *stack) startServer(m *hnetns.Host) error {
	b := s.b.bundle
	data := filepath.Join(s.dir, m.Name)
	if s.name == serverHACP {
		p, err := s.launch(m, s.b.bin["apiserver"],
			"--bind-address", "0.0.0.0", "--secure-port", fmt.Sprint(apiPort),
			"--data-dir", filepath.Join(data, "data"),
			"--tls-cert-file", b.ServingCert, "--tls-private-key-file", b.ServingKey,
			"--client-ca-file", b.CACert,
			"--service-account-signing-key-file", b.ServiceAccountKey,
			"--write-kubeconfig", "-",
			"--etcd-name", m.Name, "--etcd-initial-cluster", s.initialCluster(),
			"--etcd-initial-cluster-state", "new", "--etcd-listen-peer-urls", peerURL(m),
			"--etcd-heartbeat-interval", "50ms", "--etcd-election-timeout", "500ms")
		if err != nil {
			return err
		}
		s.server[m.Name] = []*hnetns.Proc{p}
		return nil
	}
	etcd, err := s.launch(m, s.b.bin["etcd"],
		"--name", m.Name, "--data-dir", filepath.Join(data, "etcd"),
		"--listen-peer-urls", peerURL(m), "--initial-advertise-peer-urls", peerURL(m),
		"--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
		"--initial-cluster", s.initialCluster(), "--initial-cluster-state", "new",
		"--heartbeat-interval", "50", "--election-timeout", "500", "--log-level", "warn")
	if err != nil {
		return err
	}
	kas, err := s.launch(m, s.b.bin["kube-apiserver"],
		"--etcd-servers=http://127.0.0.1:2379",
		"--bind-address=0.0.0.0", "--advertise-address="+m.Addr.String(), fmt.Sprintf("--secure-port=%d", apiPort),
		"--tls-cert-file="+b.ServingCert, "--tls-private-key-file="+b.ServingKey,
		"--client-ca-file="+b.CACert,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+b.ServiceAccountKey,
		"--service-account-signing-key-file="+b.ServiceAccountKey,
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=10.96.0.0/12",
		"--cert-dir="+filepath.Join(data, "kas-certs"))
	if err != nil {
		return err
	}
	s.server[m.Name] = []*hnetns.Proc{kas, etcd}
	return nil
}

// startPlane starts lbproxy and vipd on m, as the drill's hacp stack.
func (s *stack) startPlane(ctx context.Context, m *hnetns.Host, i int) error {
	ca := s.b.bundle.CACert
	lbArgs := []string{"--listen", fmt.Sprintf(":%d", lbPort), "--check-ca", ca, "--down-session-grace", "2s",
		"--sync-listen", fmt.Sprintf("%s:%d", m.Addr, syncPort)}
	for _, o := range s.b.masters {
		lbArgs = append(lbArgs, "--backend", fmt.Sprintf("%s:%d", o.Addr, apiPort))
		if o != m {
			lbArgs = append(lbArgs, "--sync-peer", fmt.Sprintf("%s:%d", o.Addr, syncPort))
		}
	}
	if _, err := s.launch(m, s.b.bin["lbproxy"], lbArgs...); err != nil {
		return err
	}
	if err := s.waitHealthy(ctx, m, fmt.Sprintf("https://%s:%d/healthz", m.Addr, lbPort), 30*time.Second); err != nil {
		return fmt.Errorf("lbproxy on %s: %w", m.Name, err)
	}
	_, err := s.launch(m, s.b.bin["vipd"], "--iface", m.Iface, "--vip", vipAddr+"/24", "--vrid", fmt.Sprint(vrid),
		"--priority", fmt.Sprint(priorities[i]), "--advert-interval", "100ms",
		"--check-url", fmt.Sprintf("https://127.0.0.1:%d/healthz", lbPort), "--check-ca-file", ca)
	return err
}

// startControlPlane starts kube-controller-manager and kube-scheduler on m against m's
// own apiserver, with kubeadm's leader-election timings.
func (s *stack) startControlPlane(m *hnetns.Host) error {
	local := apiURL(m)
	kc := func(name, user string) (string, error) {
		path := filepath.Join(s.dir, m.Name+"-"+name+".kubeconfig")
		return path, certs.WriteClientKubeconfig(path, local, s.b.bundle, user, nil, 24*time.Hour)
	}
	kcm, err := kc("kcm", "system:kube-controller-manager")
	if err != nil {
		return err
	}
	sched, err := kc("sched", "system:kube-scheduler")
	if err != nil {
		return err
	}
	b := s.b.bundle
	if _, err := s.launch(m, s.b.bin["kube-controller-manager"],
		upstream.ControllerManagerArgs(kcm, b.ServiceAccountKey, b.CACert, b.CAKey, "--kube-api-qps=100", "--kube-api-burst=200")...); err != nil {
		return err
	}
	_, err = s.launch(m, s.b.bin["kube-scheduler"], upstream.SchedulerArgs(sched)...)
	return err
}

// startKwok starts kwok on the client host against the VIP.
func (s *stack) startKwok() error {
	path := filepath.Join(s.dir, "kwok.kubeconfig")
	if err := certs.WriteClientKubeconfig(path, vipURL(), s.b.bundle, "kwok", []string{"system:masters"}, 24*time.Hour); err != nil {
		return err
	}
	p, err := s.launch(s.b.client, s.b.bin[upstream.Kwok], "--kubeconfig="+path, "--config="+s.b.bin["kwok-stages"],
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector="+upstream.KwokAnnotation+"=fake",
		"--cidr="+podCIDR, "--node-ip="+s.b.client.Addr.String(),
		// The kubelet's default: a Lease of 40 s, renewed every quarter of it.
		"--node-lease-duration-seconds=40")
	s.kwok = p
	return err
}

// start brings the stack up: servers, plane, control plane and kwok.
func (s *stack) start(ctx context.Context) error {
	for _, m := range s.b.masters {
		if err := s.startServer(m); err != nil {
			return err
		}
	}
	for _, m := range s.b.masters {
		if err := s.waitHealthy(ctx, m, apiURL(m)+"/readyz", 3*time.Minute); err != nil {
			return fmt.Errorf("%s on %s: %w%s", s.name, m.Name, err, s.tails())
		}
	}
	s.b.progress("%s: apiservers ready", s.name)
	for i, m := range s.b.masters {
		if err := s.startPlane(ctx, m, i); err != nil {
			return err
		}
	}
	if err := s.waitHealthy(ctx, s.b.client, vipURL()+"/healthz", time.Minute); err != nil {
		return fmt.Errorf("VIP: %w%s", err, s.tails())
	}
	for _, m := range s.b.masters {
		if err := s.startControlPlane(m); err != nil {
			return err
		}
	}
	return s.startKwok()
}

// waitHealthy polls url from inside h until it answers 200.
func (s *stack) waitHealthy(ctx context.Context, h *hnetns.Host, url string, timeout time.Duration) error {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext:     h.DialContext,
		TLSClientConfig: &tls.Config{RootCAs: s.b.bundle.CAPool, Certificates: []tls.Certificate{s.b.bundle.AdminTLS}},
	}}
	defer hc.CloseIdleConnections()
	return poll(ctx, timeout, func() bool {
		resp, err := hc.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// stop kills everything of the stack on every host and removes the VIP, so the next
// server starts on clean hosts.
func (s *stack) stop() {
	for _, h := range append([]*hnetns.Host{s.b.client}, s.b.masters...) {
		for _, p := range h.Running() {
			p.Signal(syscall.SIGKILL)
			<-p.Done()
		}
		hnetns.KillAll(h.NS)
		_ = hostExec(h, "ip", "addr", "del", vipAddr+"/24", "dev", h.Iface)
	}
}

func hostExec(h *hnetns.Host, name string, args ...string) error {
	_, err := h.Exec(name, args...)
	return err
}

// tails returns the end of every master process's log, for error messages.
func (s *stack) tails() string {
	var b strings.Builder
	for _, m := range s.b.masters {
		for _, p := range m.Procs() {
			fmt.Fprintf(&b, "\n--- %s %s (%s):\n%s", m.Name, p.Name, p.Log, p.Tail(800))
		}
	}
	return b.String()
}

// poll calls cond every 100 ms until it is true, ctx ends or timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func() bool) error {
	return hnetns.Poll(ctx, timeout, 100*time.Millisecond, cond)
}

func newStack(b *bench, name string) (*stack, error) {
	dir := filepath.Join(b.dir, name)
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	return &stack{b: b, name: name, dir: dir, server: map[string][]*hnetns.Proc{}}, nil
}
