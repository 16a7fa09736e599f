package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// controllersServer starts an apiserver like the measured one with kube-controller-manager
// and kube-scheduler 1.33 (built once into _output/upstream) attached, and waits until the
// controllers run (a Deployment gets its ReplicaSet): the controller-manager's ~40 informers
// then watch it. It returns the server's admin kubeconfig and how to stop everything.
func controllersServer(ctx context.Context, dir string, fsync bool, binary string) (kubeconfig string, stop func()) {
	kcmBin, err := upstream.Build(ctx, upstream.Root(), "kube-controller-manager")
	must(err)
	schedBin, err := upstream.Build(ctx, upstream.Root(), "kube-scheduler")
	must(err)
	cfg, err := servertest.Config(filepath.Join(dir, "controllers"))
	must(err)
	cfg.EtcdUnsafeNoFsync = !fsync
	var stopServer func()
	if binary != "" {
		proc := startProcess(binary, cfg)
		kubeconfig = filepath.Join(cfg.DataDir, "admin.kubeconfig")
		stopServer = func() { _ = proc.Process.Signal(syscall.SIGTERM); _ = proc.Wait() }
	} else {
		s, err := servertest.Start(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		must(err)
		kubeconfig = s.KubeconfigPath()
		stopServer = func() { _ = s.Shutdown() }
	}
	pki := filepath.Join(cfg.DataDir, "pki")
	logs, err := os.Create(filepath.Join(dir, "controllers.log"))
	must(err)
	start := func(bin string, args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = logs, logs
		must(cmd.Start())
		return cmd
	}
	common := []string{"--kubeconfig=" + kubeconfig, "--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig, "--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false"}
	kcm := start(kcmBin, append(common,
		"--service-account-private-key-file="+filepath.Join(pki, "sa.key"),
		"--root-ca-file="+filepath.Join(pki, "ca.crt"))...)
	sched := start(schedBin, common...)
	stop = func() {
		for _, c := range []*exec.Cmd{kcm, sched} {
			_ = c.Process.Signal(syscall.SIGTERM)
			_ = c.Wait()
		}
		logs.Close()
		stopServer()
	}

	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	must(err)
	cs := kubernetes.NewForConfigOrDie(rc)
	one := int32(1)
	labels := map[string]string{"app": "probe"}
	_, err = cs.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}}}, metav1.CreateOptions{})
	must(err)
	for deadline := time.Now().Add(3 * time.Minute); ; {
		l, err := cs.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=probe"})
		if err == nil && len(l.Items) > 0 {
			break
		}
		if time.Now().After(deadline) {
			stop()
			must(fmt.Errorf("kube-controller-manager did not create the probe's ReplicaSet within 3m (log %s)", logs.Name()))
		}
		time.Sleep(100 * time.Millisecond) // poll
	}
	return kubeconfig, stop
}

// controllerRows compares, in the same run and alternating rounds, the create, get and list
// rows on the measured apiserver (no controllers) and on a second one that
// kube-controller-manager and kube-scheduler watch: what their informers cost every client.
// The pair's "api" side is the server with controllers, its "etcd" side the one without.
func controllerRows(ctx context.Context, plain kubernetes.Interface, ctlKubeconfig string, n int) []pair {
	rc, err := clientcmd.BuildConfigFromFlags("", ctlKubeconfig)
	must(err)
	rc.QPS, rc.Burst = 1e6, 1e6
	ctl := kubernetes.NewForConfigOrDie(rc)
	for _, c := range []kubernetes.Interface{plain, ctl} {
		_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ctl"}}, metav1.CreateOptions{})
		must(err)
	}
	var rows []pair
	for _, conc := range []int{1, 32} {
		ops := n
		if conc > 1 {
			ops = n * 4
		}
		with, without := ctl.CoreV1().ConfigMaps("ctl"), plain.CoreV1().ConfigMaps("ctl")
		create := func(c interface {
			Create(context.Context, *corev1.ConfigMap, metav1.CreateOptions) (*corev1.ConfigMap, error)
		}) func(int) error {
			return func(i int) error {
				_, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d-%05d", conc, i)}, Data: map[string]string{"key": "value"}}, metav1.CreateOptions{})
				return err
			}
		}
		rows = append(rows, measureOps("create", conc, ops, create(with), create(without)))
		get := func(c interface {
			Get(context.Context, string, metav1.GetOptions) (*corev1.ConfigMap, error)
		}) func(int) error {
			return func(i int) error {
				_, err := c.Get(ctx, fmt.Sprintf("c%d-%05d", conc, i%ops), metav1.GetOptions{})
				return err
			}
		}
		rows = append(rows, measureOps("get", conc, ops, get(with), get(without)))
		for _, rv := range []string{"0", ""} {
			list := func(c interface {
				List(context.Context, metav1.ListOptions) (*corev1.ConfigMapList, error)
			}) func(int) error {
				return func(int) error {
					_, err := c.List(ctx, metav1.ListOptions{ResourceVersion: rv, Limit: 100})
					return err
				}
			}
			name := "list rv=0"
			if rv == "" {
				name = "list rv unset"
			}
			rows = append(rows, measureOps(name, conc, ops/4, list(with), list(without)))
		}
	}
	return rows
}

// printControllerRows prints controllerRows' table.
func printControllerRows(rows []pair) {
	printSideBySide("controllers: the same requests on an apiserver kube-controller-manager and kube-scheduler 1.33 watch vs one nobody watches, same run (ratio: with/without):",
		"with", "w/o", rows)
}
