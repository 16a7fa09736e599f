package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/certs"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The upstream control plane on the drill's masters (--control-plane): each master runs
// kube-controller-manager and kube-scheduler 1.33 against its own apiserver, as kubeadm's
// static pods do, with kubeadm's leader-election timings; kwok on the client plays three
// nodes through the VIP. kill-master then measures when another master's controller-manager
// and scheduler hold their Leases, and how long a scale-up made after the fault takes.

const (
	cpDeployment = "drill-web"
	cpNodes      = 3
)

// upstreamBinaries finds (building once, cached under _output/upstream) the programs.
func (d *drill) upstreamBinaries(ctx context.Context) error {
	names := []string{"kube-controller-manager", "kube-scheduler", upstream.Kwok}
	if d.opts.proxyPaths {
		names = append(names, upstream.SampleAPIServer)
	}
	for _, name := range names {
		d.progress("upstream %s: building or found in %s", name, upstream.Root())
		path, err := upstream.Build(ctx, upstream.Root(), name)
		if err != nil {
			return fmt.Errorf("upstream %s: %w", name, err)
		}
		d.bin[name] = path
	}
	stages, err := upstream.KwokStages(ctx, upstream.Root())
	if err != nil {
		return err
	}
	d.bin["kwok-stages"] = stages
	return nil
}

// withControlPlane says whether this stack runs the upstream control plane.
func (c *cluster) withControlPlane() bool { return c.d.opts.controlPlane && !c.spec.BGP }

// kubeconfig writes a kubeconfig for a client certificate of user (in groups) to server.
func (c *cluster) kubeconfig(name, server, user string, groups []string) (string, error) {
	path := filepath.Join(c.dir, name+".kubeconfig")
	return path, certs.WriteClientKubeconfig(path, server, c.d.bundle, user, groups, 24*time.Hour)
}

// startUpstreamOn starts kube-controller-manager and kube-scheduler on m against m's own
// apiserver; they are m's processes, so a crash of m kills them.
func (c *cluster) startUpstreamOn(m *host) error {
	local := apiURL(m)
	kcmKC, err := c.kubeconfig(m.Name+"-kcm", local, "system:kube-controller-manager", nil)
	if err != nil {
		return err
	}
	schedKC, err := c.kubeconfig(m.Name+"-sched", local, "system:kube-scheduler", nil)
	if err != nil {
		return err
	}
	b := c.d.bundle
	// kubeadm's defaults: lease 15s, renew deadline 10s, retry 2s.
	if _, err := m.start(c.d.bin["kube-controller-manager"], upstream.ControllerManagerArgs(kcmKC, b.ServiceAccountKey, b.CACert, b.CAKey)...); err != nil {
		return err
	}
	_, err = m.start(c.d.bin["kube-scheduler"], upstream.SchedulerArgs(schedKC)...)
	return err
}

// startKwok starts kwok on the client host against the VIP, registers its nodes and runs a
// deployment of three pods, and waits until they are Running.
func (c *cluster) startKwok(ctx context.Context) error {
	d := c.d
	kc, err := c.kubeconfig("kwok", c.vipURL(), "kwok", []string{"system:masters"})
	if err != nil {
		return err
	}
	args := []string{"--kubeconfig=" + kc, "--config=" + d.bin["kwok-stages"],
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--cidr=10.77.160.0/20", "--node-ip=10.77.159.1"}
	if c.withProxyPaths() {
		// The nodes' address is the client's, where kwok's node server (the kubelets'
		// stand-in) listens: the masters' apiservers reach it over the bridge.
		node, err := c.kwokNodeArgs()
		if err != nil {
			return err
		}
		args = append(args[:len(args)-1], append([]string{"--node-ip=" + d.client.Addr.String()}, node...)...)
	}
	p, err := d.client.start(d.bin[upstream.Kwok], args...)
	if err != nil {
		return err
	}
	c.kwok = p
	cs := c.cp
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")}
	for i := range cpNodes {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("drill-node-%d", i),
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}, Labels: map[string]string{"type": "kwok"}},
			Status: corev1.NodeStatus{Allocatable: res, Capacity: res}}
		if err := createRetrying(ctx, func() error { _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); return err }); err != nil {
			return fmt.Errorf("create node: %w", err)
		}
	}
	dep := upstream.Deployment(cpDeployment, 3)
	if err := createRetrying(ctx, func() error {
		_, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("create deployment: %w", err)
	}
	if err := poll(ctx, 3*time.Minute, func() bool { return c.runningPods(ctx) == 3 }); err != nil {
		return fmt.Errorf("%s: the controller-manager, scheduler and kwok did not run 3 pods: %w%s", c.spec.Name, err, c.procTails())
	}
	d.progress("%s: kube-controller-manager and kube-scheduler on m1..m3, kwok's %d nodes run %s's 3 pods", c.spec.Name, cpNodes, cpDeployment)
	return nil
}

// runningPods counts the deployment's pods that are Running and Ready.
func (c *cluster) runningPods(ctx context.Context) int {
	l, err := c.cp.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + cpDeployment})
	if err != nil {
		return -1
	}
	n := 0
	for _, p := range l.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

// leases returns the holders of the controller-manager's and the scheduler's Leases.
func (c *cluster) leases(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	for _, name := range []string{"kube-controller-manager", "kube-scheduler"} {
		l, err := c.cp.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if l.Spec.HolderIdentity != nil {
			out[name] = *l.Spec.HolderIdentity
		}
	}
	return out, nil
}

// controlPlaneAfterFault measures, after kill-master, when the Leases held before the fault
// (by m1's controller-manager or scheduler, or another's) had a holder again, from the
// Leases' acquireTime, and how long a scale-up to six pods made now takes to be Running.
func (c *cluster) controlPlaneAfterFault(ctx context.Context, before map[string]string, faultAt time.Time, m *metrics) error {
	d := c.d
	for name, holder := range before {
		var took time.Duration
		err := poll(ctx, 90*time.Second, func() bool {
			l, err := c.cp.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
			if err != nil || l.Spec.HolderIdentity == nil || l.Spec.AcquireTime == nil || l.Spec.RenewTime == nil {
				return false
			}
			if *l.Spec.HolderIdentity == holder {
				// Still renewed a whole lease duration after the fault: a survivor held it
				// and it never lapsed.
				took = 0
				return l.Spec.RenewTime.After(faultAt.Add(15 * time.Second))
			}
			took = l.Spec.AcquireTime.Sub(faultAt)
			return true
		})
		if err != nil {
			return fmt.Errorf("%s: Lease %s not taken over after the fault: %w%s", c.spec.Name, name, err, c.procTails())
		}
		v := seconds(took)
		switch name {
		case "kube-controller-manager":
			m.CMLeaseTakeoverS = &v
		default:
			m.SchedLeaseTakeoverS = &v
		}
	}
	start := time.Now()
	patch := []byte(`{"spec":{"replicas":6}}`)
	if err := poll(ctx, 30*time.Second, func() bool {
		_, err := c.cp.AppsV1().Deployments("default").Patch(ctx, cpDeployment, types.MergePatchType, patch, metav1.PatchOptions{})
		return err == nil
	}); err != nil {
		return fmt.Errorf("%s: scale-up through the VIP: %w", c.spec.Name, err)
	}
	if err := poll(ctx, 2*time.Minute, func() bool { return c.runningPods(ctx) == 6 }); err != nil {
		return fmt.Errorf("%s: the scale-up made after the fault did not complete (%d Running): %w%s", c.spec.Name, c.runningPods(ctx), err, c.procTails())
	}
	v := seconds(time.Since(start))
	m.ScaleUpAfterFaultS = &v
	d.progress("%s kill-master: controller-manager Lease back after %.3fs, scheduler's after %.3fs; scale 3→6 Running in %.3fs",
		c.spec.Name, *m.CMLeaseTakeoverS, *m.SchedLeaseTakeoverS, v)
	return nil
}

// startUpstream starts the controller-manager and scheduler on m1 first and waits until they
// hold their Leases (so that kill-master, which crashes m1, kills the leaders), then on the
// other masters, then kwok.
func (c *cluster) startUpstream(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(restConfig(c.d.bundle, c.d.client, c.vipURL(), 10*time.Second))
	if err != nil {
		return err
	}
	c.cp = cs
	for i, m := range c.d.masters {
		if err := c.startUpstreamOn(m); err != nil {
			return err
		}
		if i == 0 {
			if err := poll(ctx, 2*time.Minute, func() bool {
				h, err := c.leases(ctx)
				return err == nil && len(h) == 2
			}); err != nil {
				return fmt.Errorf("%s: m1's controller-manager and scheduler took no Lease: %w%s", c.spec.Name, err, c.procTails())
			}
		}
	}
	return c.startKwok(ctx)
}

// createRetrying calls create until it succeeds or finds the object there, for up to 30 s:
// one request through the VIP may meet a reset (a balancer giving up on a backend under
// load), and the setup is not what the drill measures.
func createRetrying(ctx context.Context, create func() error) error {
	var last error
	if err := poll(ctx, 30*time.Second, func() bool {
		last = create()
		return last == nil || apierrors.IsAlreadyExists(last)
	}); err != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return nil
}
