package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/hacp/hacp/internal/upstream"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// controllersServers starts two apiserver processes alike (the program binary, as the rbac
// rows do), then kube-controller-manager and kube-scheduler 1.33 (built once into
// _output/upstream) attached to the first, at nice value nice (0: as the bench and the
// apiservers; 19: they get CPU only when the others leave it, as if they ran on other
// cores), and waits until the controllers run (a Deployment gets its ReplicaSet): the
// controller-manager's ~40 informers then watch it. stopCtl stops the controllers, stop the
// apiservers.
func controllersServers(ctx context.Context, dir string, fsync bool, binary string, nice int) (with, without procServer, ctlPids []int, stopCtl, stop func()) {
	binary = apiserverBinary(binary, dir)
	with = startServer(dir, "ctl-with", fsync, binary)
	without = startServer(dir, "ctl-without", fsync, binary)
	ctlPids, stopCtl = startControllers(ctx, filepath.Join(dir, "controllers.log"), with.kubeconfig,
		filepath.Join(with.pki, "sa.key"), filepath.Join(with.pki, "ca.crt"), nice)
	return with, without, ctlPids, stopCtl, func() {
		with.stop()
		without.stop()
	}
}

// kubeControllersServers is controllersServers with kube-apiserver 1.33 for the apiservers:
// one over each of etcdWith's and etcdWithout's etcd members, with their etcd client
// certificates (under their own prefix, so that they share nothing with what else those
// members hold), the controllers attached to the first.
func kubeControllersServers(ctx context.Context, dir string, etcdWith, etcdWithout procServer, nice int) (with, without procServer, ctlPids []int, stop func()) {
	bin, err := upstream.Build(ctx, upstream.Root(), "kube-apiserver")
	must(err)
	start := func(name string, on procServer) (procServer, *cacheServer) {
		k := startKubeAPIServer(filepath.Join(dir, name), bin, on.etcdURL, append(etcdTLSArgs(on.pki), "--etcd-prefix=/bench-kube")...)
		return procServer{kubeconfig: k.kubeconfig, pid: k.cmd.Process.Pid}, k
	}
	with, kw := start("ctl-kube-with", etcdWith)
	without, ko := start("ctl-kube-without", etcdWithout)
	kdir := filepath.Dir(kw.kubeconfig) // where KubeAPIServerArgs wrote the service account key
	ctlPids, stopCtl := startControllers(ctx, filepath.Join(dir, "controllers-kube.log"), with.kubeconfig,
		filepath.Join(kdir, "sa.key"), filepath.Join(kdir, "certs", "apiserver.crt"), nice)
	return with, without, ctlPids, func() {
		stopCtl()
		for _, k := range []*cacheServer{kw, ko} {
			_ = k.cmd.Process.Signal(syscall.SIGTERM)
			_ = k.cmd.Wait()
		}
	}
}

// startControllers runs kube-controller-manager and kube-scheduler 1.33 against the apiserver
// of kubeconfig at nice value nice, logging to logPath, and waits until the controllers work
// (a Deployment gets its ReplicaSet).
func startControllers(ctx context.Context, logPath, kubeconfig, saKey, rootCA string, nice int) (pids []int, stop func()) {
	kcmBin, err := upstream.Build(ctx, upstream.Root(), "kube-controller-manager")
	must(err)
	schedBin, err := upstream.Build(ctx, upstream.Root(), "kube-scheduler")
	must(err)
	logs, err := os.Create(logPath)
	must(err)
	start := func(bin string, args ...string) *exec.Cmd {
		if nice != 0 {
			args = append([]string{"-n", strconv.Itoa(nice), bin}, args...)
			bin = "nice" // before the program starts, so that all its threads have it
		}
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = logs, logs
		must(cmd.Start())
		return cmd
	}
	common := []string{"--kubeconfig=" + kubeconfig, "--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig, "--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false"}
	kcm := start(kcmBin, append(common, "--service-account-private-key-file="+saKey, "--root-ca-file="+rootCA)...)
	sched := start(schedBin, common...)
	pids = []int{kcm.Process.Pid, sched.Process.Pid}
	stop = func() {
		for _, c := range []*exec.Cmd{kcm, sched} {
			_ = c.Process.Signal(syscall.SIGTERM)
			_ = c.Wait()
		}
		logs.Close()
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
			must(fmt.Errorf("kube-controller-manager did not create the probe's ReplicaSet within 3m (log %s)", logPath))
		}
		time.Sleep(100 * time.Millisecond) // poll
	}
	return pids, stop
}

// controllerRows compares, in the same run and alternating rounds, the create, get and list
// rows on two apiserver processes in the same state, one of which kube-controller-manager
// and kube-scheduler watch (with) and one nobody watches (without): what their informers
// cost every client, as rates and as each apiserver's own CPU time per request. ctlCPU is
// the CPU time the controllers used meanwhile.
func controllerRows(ctx context.Context, with, without procServer, ctlPids []int, n int, lists bool) (rows []cpuRow, ctlCPU time.Duration) {
	client := func(s procServer) kubernetes.Interface {
		rc, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
		must(err)
		rc.QPS, rc.Burst = 1e6, 1e6
		return kubernetes.NewForConfigOrDie(rc)
	}
	ctl, plain := client(with), client(without)
	for _, c := range []kubernetes.Interface{plain, ctl} {
		_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ctl"}}, metav1.CreateOptions{})
		must(err)
	}
	controllersCPU := func() (d time.Duration) {
		for _, pid := range ctlPids {
			d += pidCPU(pid)
		}
		return d
	}
	c0 := controllersCPU()
	measureRow := func(name string, conc, ops int, withOp, withoutOp func(int) error) cpuRow {
		return measureCPU(with.pid, without.pid, name, conc, ops, withOp, withoutOp)
	}
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
		rows = append(rows, measureRow("create", conc, ops, create(with), create(without)))
		get := func(c interface {
			Get(context.Context, string, metav1.GetOptions) (*corev1.ConfigMap, error)
		}) func(int) error {
			return func(i int) error {
				_, err := c.Get(ctx, fmt.Sprintf("c%d-%05d", conc, i%ops), metav1.GetOptions{})
				return err
			}
		}
		rows = append(rows, measureRow("get", conc, ops, get(with), get(without)))
		if !lists {
			continue
		}
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
			rows = append(rows, measureRow(name, conc, ops/4, list(with), list(without)))
		}
	}
	return rows, controllersCPU() - c0
}

// printControllerRows prints controllerRows' table, and the same rows on kube-apiserver
// when kube has any.
func printControllerRows(rows []cpuRow, ctlCPU time.Duration, kube []cpuRow, kubeCtlCPU time.Duration, nice int) {
	printCPURows("controllers: the same requests on an apiserver kube-controller-manager and kube-scheduler 1.33 watch vs one nobody watches, same run (ratio: with/without):",
		"with", "w/o", rows)
	fmt.Printf("kube-controller-manager and kube-scheduler (nice %d) used %s of CPU during these rows\n", nice, ctlCPU.Round(10*time.Millisecond))
	if len(kube) == 0 {
		return
	}
	printServerCPURows("The create and get rows on kube-apiserver 1.33, as upstream's reference: two processes, each over one of the etcd members\n"+
		"above (under a prefix of its own), the same controllers attached to the first (no list rows: its lists at rv=0 ignore the limit and\n"+
		"return every object, 20 ms each):",
		"with", "w/o", kube)
	fmt.Printf("kube-controller-manager and kube-scheduler (nice %d) used %s of CPU during these rows\n", nice, kubeCtlCPU.Round(10*time.Millisecond))
}
