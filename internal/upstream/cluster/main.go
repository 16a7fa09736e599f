// Command cluster is `make run-cluster`: hacp's apiserver (as `make run` starts it) plus the
// upstream kube-controller-manager, kube-scheduler and kwok with a few fake nodes, so that a
// Deployment gets Running (kwok) pods on a laptop. Everything runs in the foreground; Ctrl-C
// stops all of it. The upstream programs are built into _output/upstream on first use.
//
//	go run ./internal/upstream/cluster [--apiserver bin/apiserver] [--data-dir _data] [--nodes 3] [-- apiserver flags]
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/certs"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

type options struct {
	apiserver     string   // hacp's apiserver binary
	config        string   // its --config
	dataDir       string   // its --data-dir; the other programs' files go to dataDir/cluster
	nodes         int      // kwok nodes
	kcmPort       string   // kube-controller-manager's --secure-port
	schedulerPort string   // kube-scheduler's --secure-port
	extra         []string // more apiserver flags (after --)
	wait          time.Duration
}

func main() {
	var o options
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	fs.StringVar(&o.apiserver, "apiserver", "bin/apiserver", "hacp's apiserver binary (make build)")
	fs.StringVar(&o.config, "config", "configs/apiserver.yaml", "the apiserver's --config")
	fs.StringVar(&o.dataDir, "data-dir", "_data", "the apiserver's --data-dir; logs and kubeconfigs of the other programs go to DATA-DIR/cluster")
	fs.IntVar(&o.nodes, "nodes", 3, "fake nodes kwok runs")
	fs.StringVar(&o.kcmPort, "controller-manager-port", "10257", "kube-controller-manager's --secure-port (127.0.0.1)")
	fs.StringVar(&o.schedulerPort, "scheduler-port", "10259", "kube-scheduler's --secure-port (127.0.0.1)")
	fs.DurationVar(&o.wait, "wait", 5*time.Minute, "how long each program may take to become ready")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	o.extra = fs.Args()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return // Ctrl-C before everything was up: stopped, as asked
		}
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

// run starts everything, reports on out when the cluster is ready and returns when ctx ends
// (after stopping every program) or one program exits on its own (an error).
func run(ctx context.Context, o options, out io.Writer) error {
	dir := filepath.Join(o.dataDir, "cluster")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fmt.Fprintln(out, "cluster: kube-controller-manager, kube-scheduler and kwok from", upstream.Root(),
		"(built there on first use: minutes to an hour on 2 cores)")
	bins := map[string]string{}
	for _, name := range []string{"kube-controller-manager", "kube-scheduler", upstream.Kwok} {
		p, err := upstream.Build(ctx, upstream.Root(), name)
		if err != nil {
			return fmt.Errorf("build %s: %w", name, err)
		}
		bins[name] = p
	}
	stages, err := upstream.KwokStages(ctx, upstream.Root())
	if err != nil {
		return fmt.Errorf("kwok stages: %w", err)
	}

	g := &group{dir: dir, exited: make(chan *proc, 4)}
	defer g.stop()

	admin := filepath.Join(o.dataDir, "admin.kubeconfig")
	_ = os.Remove(admin) // a kubeconfig left by an earlier run is no sign this one is up
	if err := g.start("apiserver", o.apiserver, append([]string{"--config", o.config, "--data-dir", o.dataDir}, o.extra...)...); err != nil {
		return err
	}
	cs, server, err := g.waitReady(ctx, admin, o.wait)
	if err != nil {
		return err
	}
	pki := filepath.Join(o.dataDir, "pki")
	ca, err := os.ReadFile(filepath.Join(pki, certs.CACertFile))
	if err != nil {
		return err
	}
	b := &certs.Bundle{CACert: filepath.Join(pki, certs.CACertFile), CAKey: filepath.Join(pki, certs.CAKeyFile), CAPEM: ca}
	kubeconfig := func(user string, groups ...string) (string, error) {
		path := filepath.Join(dir, strings.ReplaceAll(user, ":", "-")+".kubeconfig")
		return path, certs.WriteClientKubeconfig(path, server, b, user, groups, 365*24*time.Hour)
	}
	kcmKC, err := kubeconfig("system:kube-controller-manager")
	if err != nil {
		return err
	}
	schedKC, err := kubeconfig("system:kube-scheduler")
	if err != nil {
		return err
	}
	kwokKC, err := kubeconfig("kwok", "system:masters") // kwok plays every node's kubelet with one client
	if err != nil {
		return err
	}
	if err := g.start("kube-controller-manager", bins["kube-controller-manager"],
		"--kubeconfig="+kcmKC, "--authentication-kubeconfig="+kcmKC, "--authorization-kubeconfig="+kcmKC,
		"--bind-address=127.0.0.1", "--secure-port="+o.kcmPort,
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+filepath.Join(pki, certs.ServiceAccountKeyFile),
		"--root-ca-file="+b.CACert,
		"--cluster-signing-cert-file="+b.CACert, "--cluster-signing-key-file="+b.CAKey,
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--leader-elect=false"); err != nil {
		return err
	}
	if err := g.start("kube-scheduler", bins["kube-scheduler"],
		"--kubeconfig="+schedKC, "--authentication-kubeconfig="+schedKC, "--authorization-kubeconfig="+schedKC,
		"--bind-address=127.0.0.1", "--secure-port="+o.schedulerPort, "--leader-elect=false"); err != nil {
		return err
	}
	if err := g.start("kwok", bins[upstream.Kwok],
		"--kubeconfig="+kwokKC, "--config="+stages,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector="+upstream.KwokAnnotation+"=fake",
		"--cidr=10.77.128.0/20", // pod IPs: only written into status, never dialled
		"--node-ip=10.77.127.1"); err != nil {
		return err
	}
	for i := range o.nodes {
		if err := createNode(ctx, cs, fmt.Sprintf("kwok-node-%d", i)); err != nil {
			return err
		}
	}
	if err := g.waitNodes(ctx, cs, o.nodes, o.wait); err != nil {
		return err
	}
	fmt.Fprintf(out, `cluster: ready: hacp's apiserver on %s, kube-controller-manager, kube-scheduler and kwok with %d nodes
  logs: %s/*.log; Ctrl-C stops everything. In another shell:
  export KUBECONFIG=%s
  kubectl create deployment web --image=nginx --replicas=2
  kubectl get pods -o wide
`, server, o.nodes, dir, admin)
	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "cluster: stopping")
		return nil
	case p := <-g.exited:
		return p.failure()
	}
}

// createNode registers a node kwok manages, with room for plenty of pods; one left by an
// earlier run in the same data directory is kept.
func createNode(ctx context.Context, cs kubernetes.Interface, name string) error {
	n := upstream.KwokNode(name)
	if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	return nil
}

// group is the programs run started; stop ends them in reverse order.
type group struct {
	dir    string
	procs  []*proc
	exited chan *proc // a program that exited before stop
}

type proc struct {
	name, log string
	cmd       *exec.Cmd
	done      chan struct{}
	err       error
}

func (g *group) start(name, bin string, args ...string) error {
	log := filepath.Join(g.dir, name+".log")
	f, err := os.Create(log)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group, so that Ctrl-C reaches it only through stop (in order), and
	// killed with this program should this one die without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, log: log, cmd: cmd, done: make(chan struct{})}
	g.procs = append(g.procs, p)
	go func() {
		p.err = cmd.Wait()
		close(p.done)
		g.exited <- p
	}()
	return nil
}

// stop sends SIGTERM to every program, newest first, and waits for each (SIGKILL after 30 s).
func (g *group) stop() {
	for i := len(g.procs) - 1; i >= 0; i-- {
		p := g.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

func (p *proc) failure() error {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return fmt.Errorf("%s exited (%v); the end of %s:\n%s", p.name, p.err, p.log, b)
}

// poll calls cond until it holds, a program exits, ctx ends or limit passes.
func (g *group) poll(ctx context.Context, what string, limit time.Duration, cond func() (bool, string)) error {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, last := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %v: %s (logs in %s)", what, limit, last, g.dir)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case p := <-g.exited:
			return p.failure()
		case <-tick.C:
		}
	}
}

// waitReady waits for the apiserver's admin kubeconfig and /readyz.
func (g *group) waitReady(ctx context.Context, admin string, limit time.Duration) (*kubernetes.Clientset, string, error) {
	var cs *kubernetes.Clientset
	var server string
	err := g.poll(ctx, "apiserver ready", limit, func() (bool, string) {
		if cs == nil {
			rc, err := clientcmd.BuildConfigFromFlags("", admin)
			if err != nil {
				return false, err.Error()
			}
			if cs, err = kubernetes.NewForConfig(rc); err != nil {
				return false, err.Error()
			}
			server = rc.Host
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(rctx)
		if err != nil {
			return false, err.Error() + " " + string(body)
		}
		return true, ""
	})
	return cs, server, err
}

// waitNodes waits until n nodes are Ready and untainted: the TaintNodesByCondition admission
// plugin registers a node with the not-ready taint, which the node lifecycle controller lifts
// once kwok reports it Ready.
func (g *group) waitNodes(ctx context.Context, cs kubernetes.Interface, n int, limit time.Duration) error {
	return g.poll(ctx, "nodes Ready", limit, func() (bool, string) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
		if err != nil {
			return false, err.Error()
		}
		ready, tainted := 0, 0
		for _, nd := range nodes.Items {
			if len(nd.Spec.Taints) > 0 {
				tainted++
			}
			for _, c := range nd.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready >= n && tainted == 0, fmt.Sprintf("%d of %d nodes Ready, %d tainted", ready, n, tainted)
	})
}
