package upstream_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/testenv"
	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/certs"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// controlPlane is hacp with the upstream kube-controller-manager and kube-scheduler (two of
// each, for the leader elections) and kwok managing fake nodes, all talking to hacp with
// their own identities, as a kubeadm control plane runs them.
type controlPlane struct {
	t          *testing.T
	dir        string
	srv        *server.Server
	cs         *kubernetes.Clientset
	admin      string // admin kubeconfig path
	kubectlBin string // the tests' kubectl (testenv.Kubectl)
	kcm        []*proc
	sched      []*proc
	kwok       *proc
}

const (
	kwokNodes = 3
	cpWait    = 3 * time.Minute // the longest a step may take on a loaded 2-core machine
)

func startControlPlane(t *testing.T) *controlPlane {
	kubectl := testenv.Kubectl(t)
	kcmBin := upstream.Binary(t, "kube-controller-manager")
	schedBin := upstream.Binary(t, "kube-scheduler")
	kwokBin := upstream.Binary(t, upstream.Kwok)

	cp := &controlPlane{t: t, kubectlBin: kubectl, dir: t.TempDir()}
	cp.srv = servertest.New(t, nil) // authorization Node,RBAC, as the default
	cp.admin = cp.srv.KubeconfigPath()
	rc := servertest.RestConfig(t, cp.srv)
	cp.cs = kubernetes.NewForConfigOrDie(rc)
	b := cp.srv.Certs()

	kcmKC := cp.kubeconfig("system:kube-controller-manager", nil)
	schedKC := cp.kubeconfig("system:kube-scheduler", nil)
	leader := []string{"--leader-elect=true", "--leader-elect-lease-duration=6s",
		"--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s"}
	for i := range 2 {
		cp.kcm = append(cp.kcm, startProc(t, cp.dir, fmt.Sprintf("kube-controller-manager-%d", i), kcmBin,
			append([]string{
				"--kubeconfig=" + kcmKC,
				"--authentication-kubeconfig=" + kcmKC,
				"--authorization-kubeconfig=" + kcmKC,
				"--bind-address=127.0.0.1",
				"--secure-port=" + freePort(t),
				"--use-service-account-credentials=true",
				"--service-account-private-key-file=" + b.ServiceAccountKey,
				"--root-ca-file=" + b.CACert,
				"--cluster-signing-cert-file=" + b.CACert,
				"--cluster-signing-key-file=" + b.CAKey,
				"--controllers=*,bootstrapsigner,tokencleaner",
				"--node-monitor-grace-period=40s",
				"--terminated-pod-gc-threshold=100",
				"--vmodule=garbagecollector=6,graph_builder=6,operations=6",
				"--v=2",
			}, leader...)...))
		cp.sched = append(cp.sched, startProc(t, cp.dir, fmt.Sprintf("kube-scheduler-%d", i), schedBin,
			append([]string{
				"--kubeconfig=" + schedKC,
				"--authentication-kubeconfig=" + schedKC,
				"--authorization-kubeconfig=" + schedKC,
				"--bind-address=127.0.0.1",
				"--secure-port=" + freePort(t),
				"--v=2",
			}, leader...)...))
	}
	// kwok plays every node's kubelet: one client for all nodes, as kwok runs in a cluster.
	kwokKC := cp.kubeconfig("kwok", []string{"system:masters"})
	stages, err := upstream.KwokStages(context.Background(), upstream.Root())
	if err != nil {
		testenv.Require(t, false, "kwok stages: "+err.Error())
	}
	cp.kwok = startProc(t, cp.dir, "kwok", kwokBin,
		"--kubeconfig="+kwokKC,
		"--config="+stages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+upstream.KwokAnnotation+"=fake",
		"--cidr=10.77.128.0/20", // pod IPs: only written into status, never dialled
		"--node-ip=10.77.127.1",
		"--node-lease-duration-seconds=40",
	)
	for i := range kwokNodes {
		cp.createNode(fmt.Sprintf("kwok-node-%d", i))
	}
	// The TaintNodesByCondition admission plugin registers every node with the not-ready
	// taint, which the node lifecycle controller lifts once kwok reports it Ready: a pod
	// scheduled before then lands only on the nodes already lifted.
	cp.waitFor("nodes Ready and untainted", func() (bool, string) {
		nodes, err := cp.cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready, tainted := 0, 0
		for _, n := range nodes.Items {
			if len(n.Spec.Taints) > 0 {
				tainted++
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == kwokNodes && tainted == 0,
			fmt.Sprintf("%d of %d nodes Ready, %d tainted", ready, kwokNodes, tainted)
	})
	return cp
}

// kubeconfig writes a kubeconfig for a client certificate of user in groups.
func (cp *controlPlane) kubeconfig(user string, groups []string) string {
	cp.t.Helper()
	path := filepath.Join(cp.dir, strings.ReplaceAll(user, ":", "-")+".kubeconfig")
	if err := certs.WriteClientKubeconfig(path, cp.srv.URL(), cp.srv.Certs(), user, groups, 24*time.Hour); err != nil {
		cp.t.Fatal(err)
	}
	return path
}

// createNode registers a node kwok manages, with room for plenty of pods.
func (cp *controlPlane) createNode(name string) {
	cp.t.Helper()
	n := upstream.KwokNode(name)
	if _, err := cp.cs.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		cp.t.Fatalf("create node %s: %v", name, err)
	}
}

// waitFor polls cond until it holds, failing the test with cond's last word after cpWait.
func (cp *controlPlane) waitFor(what string, cond func() (bool, string)) {
	cp.t.Helper()
	var last string
	for deadline := time.Now().Add(cpWait); ; {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
		if time.Now().After(deadline) {
			cp.t.Fatalf("%s: not within %v: %s", what, cpWait, last)
		}
		time.Sleep(250 * time.Millisecond) // poll
	}
}

// kubectl runs kubectl as admin and returns its output, failing the test when it fails.
func (cp *controlPlane) kubectl(args ...string) string {
	cp.t.Helper()
	out, err := cp.kubectlErr(args...)
	if err != nil {
		cp.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (cp *controlPlane) kubectlErr(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cpWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, cp.kubectlBin, append([]string{"--kubeconfig=" + cp.admin}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// pods lists the pods of ns matching selector.
func (cp *controlPlane) pods(ns, selector string) []corev1.Pod {
	cp.t.Helper()
	l, err := cp.cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		cp.t.Fatal(err)
	}
	return l.Items
}

// runningOn reports the pods that are Running and Ready, with the nodes they run on.
func runningOn(pods []corev1.Pod) (running int, nodes []string) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				running++
				if !slices.Contains(nodes, p.Spec.NodeName) {
					nodes = append(nodes, p.Spec.NodeName)
				}
			}
		}
	}
	slices.Sort(nodes)
	return running, nodes
}

// TestControlPlane runs the upstream kube-controller-manager and kube-scheduler 1.37 and kwok
// against hacp and drives them with kubectl, as a user of a kubeadm cluster would.
func TestControlPlane(t *testing.T) {
	cp := startControlPlane(t)
	// A CronJob's first Job comes at the next minute: start it now, look at the end.
	cp.kubectl("create", "cronjob", "tick", "--image=busybox:1.36", "--schedule=* * * * *", "--", "true")

	for _, s := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"Deployment", cp.testDeployment},
		{"StatefulSet", cp.testStatefulSet},
		{"DaemonSet", cp.testDaemonSet},
		{"EndpointSlices", cp.testEndpointSlices},
		{"DrainRespectsPDB", cp.testDrain},
		{"CertificateApprove", cp.testCSR},
		{"NamespaceDeletion", cp.testNamespaceDeletion},
		{"CronJob", cp.testCronJob},
		{"LeaderElection", cp.testLeaderElection},
		{"ResourceQuota", cp.testResourceQuota},
		{"NoForbidden", cp.testNoForbidden},
	} {
		if !t.Run(s.name, func(t *testing.T) { cp.t = t; s.run(t) }) {
			return // later steps build on earlier ones
		}
	}
}

// replicaSets lists the ReplicaSets of deployment app in default, newest revision last.
func (cp *controlPlane) replicaSets(app string) []appsv1.ReplicaSet {
	cp.t.Helper()
	l, err := cp.cs.AppsV1().ReplicaSets("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		cp.t.Fatal(err)
	}
	slices.SortFunc(l.Items, func(a, b appsv1.ReplicaSet) int {
		return strings.Compare(fmt.Sprintf("%09s", a.Annotations["deployment.kubernetes.io/revision"]),
			fmt.Sprintf("%09s", b.Annotations["deployment.kubernetes.io/revision"]))
	})
	return l.Items
}

// podImages counts the Running and Ready pods of app by image.
func (cp *controlPlane) podImages(app string) map[string]int {
	out := map[string]int{}
	for _, p := range cp.pods("default", "app="+app) {
		if n, _ := runningOn([]corev1.Pod{p}); n == 1 {
			out[p.Spec.Containers[0].Image]++
		}
	}
	return out
}

func (cp *controlPlane) testDeployment(t *testing.T) {
	cp.kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=3")
	cp.kubectl("rollout", "status", "deployment/web", "--timeout=3m")
	cp.waitFor("3 Running pods on 3 nodes", func() (bool, string) {
		n, nodes := runningOn(cp.pods("default", "app=web"))
		return n == 3 && len(nodes) == 3, fmt.Sprintf("%d running on %v", n, nodes)
	})

	cp.kubectl("set", "image", "deployment/web", "nginx=nginx:1.28")
	cp.kubectl("rollout", "status", "deployment/web", "--timeout=3m")
	cp.waitFor("a second ReplicaSet runs nginx:1.28", func() (bool, string) {
		rs := cp.replicaSets("web")
		imgs := cp.podImages("web")
		return len(rs) == 2 && imgs["nginx:1.28"] == 3 && len(imgs) == 1,
			fmt.Sprintf("%d ReplicaSets, pods by image %v", len(rs), imgs)
	})

	cp.kubectl("scale", "deployment/web", "--replicas=5")
	cp.kubectl("rollout", "status", "deployment/web", "--timeout=3m")
	cp.waitFor("5 pods", func() (bool, string) {
		imgs := cp.podImages("web")
		return imgs["nginx:1.28"] == 5, fmt.Sprintf("pods by image %v", imgs)
	})

	cp.kubectl("rollout", "undo", "deployment/web")
	cp.kubectl("rollout", "status", "deployment/web", "--timeout=3m")
	cp.waitFor("undo: 5 pods back on nginx:1.27", func() (bool, string) {
		imgs := cp.podImages("web")
		return imgs["nginx:1.27"] == 5 && len(imgs) == 1, fmt.Sprintf("pods by image %v", imgs)
	})
	if out := cp.kubectl("rollout", "history", "deployment/web"); !strings.Contains(out, "3 ") {
		t.Errorf("rollout history after undo lacks revision 3:\n%s", out)
	}

	cp.kubectl("delete", "deployment", "web")
	cp.waitFor("the garbage collector removes the ReplicaSets and pods", func() (bool, string) {
		rs, pods := cp.replicaSets("web"), cp.pods("default", "app=web")
		return len(rs) == 0 && len(pods) == 0, fmt.Sprintf("%d ReplicaSets, %d pods left", len(rs), len(pods))
	})
}

func (cp *controlPlane) testStatefulSet(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := cp.cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: "app=db"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cp.apply(`apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: pg, image: "postgres:17"}]
`)
	var order []string
	deadline := time.After(cpWait)
	for len(order) < 3 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("pod watch closed after %v", order)
			}
			if p, isPod := ev.Object.(*corev1.Pod); isPod && ev.Type == "ADDED" {
				order = append(order, p.Name)
			}
		case <-deadline:
			t.Fatalf("StatefulSet created only %v within %v", order, cpWait)
		}
	}
	if want := []string{"db-0", "db-1", "db-2"}; !slices.Equal(order, want) {
		t.Errorf("StatefulSet pods created in order %v, want %v", order, want)
	}
	cp.kubectl("rollout", "status", "statefulset/db", "--timeout=3m")
}

func (cp *controlPlane) testDaemonSet(t *testing.T) {
	cp.apply(`apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: a, image: "busybox:1.36"}]
`)
	cp.kubectl("rollout", "status", "daemonset/agent", "--timeout=3m")
	cp.waitFor("one agent pod per node", func() (bool, string) {
		n, nodes := runningOn(cp.pods("default", "app=agent"))
		return n == kwokNodes && len(nodes) == kwokNodes, fmt.Sprintf("%d running on %v", n, nodes)
	})
}

func (cp *controlPlane) testEndpointSlices(t *testing.T) {
	cp.kubectl("create", "deployment", "api", "--image=nginx:1.27", "--replicas=2", "--port=8080")
	cp.kubectl("expose", "deployment", "api", "--port=80", "--target-port=8080")
	cp.kubectl("rollout", "status", "deployment/api", "--timeout=3m")
	cp.waitFor("the api Service's EndpointSlice lists its pods' IPs", func() (bool, string) {
		var want []string
		for _, p := range cp.pods("default", "app=api") {
			if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
				want = append(want, p.Status.PodIP)
			}
		}
		slices.Sort(want)
		l, err := cp.cs.DiscoveryV1().EndpointSlices("default").List(context.Background(),
			metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=api"})
		if err != nil {
			return false, err.Error()
		}
		var got []string
		for _, s := range l.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					got = append(got, e.Addresses...)
				}
			}
			if len(s.Ports) != 1 || s.Ports[0].Port == nil || *s.Ports[0].Port != 8080 {
				return false, fmt.Sprintf("slice %s ports %v, want 8080", s.Name, s.Ports)
			}
		}
		slices.Sort(got)
		return len(want) == 2 && slices.Equal(got, want), fmt.Sprintf("slices list %v, pods have %v", got, want)
	})
}

func (cp *controlPlane) testDrain(t *testing.T) {
	cp.apply(`apiVersion: apps/v1
kind: Deployment
metadata: {name: guarded}
spec:
  replicas: 2
  selector: {matchLabels: {app: guarded}}
  template:
    metadata: {labels: {app: guarded}}
    spec:
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: guarded}}}
      containers: [{name: c, image: "nginx:1.27"}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: guarded}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: guarded}}
`)
	cp.kubectl("rollout", "status", "deployment/guarded", "--timeout=3m")
	cp.waitFor("the PDB allows no disruption", func() (bool, string) {
		pdb, err := cp.cs.PolicyV1().PodDisruptionBudgets("default").Get(context.Background(), "guarded", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return pdb.Status.CurrentHealthy == 2 && pdb.Status.ObservedGeneration == pdb.Generation,
			fmt.Sprintf("status %+v", pdb.Status)
	})
	var node string
	for _, p := range cp.pods("default", "app=guarded") {
		node = p.Spec.NodeName
	}
	out, err := cp.kubectlErr("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=10s")
	if err == nil || !strings.Contains(out, "disruption budget") {
		t.Fatalf("drain of %s with minAvailable=2 = %v, want it refused by the disruption budget:\n%s", node, err, out)
	}
	cp.kubectl("patch", "pdb", "guarded", "--type=merge", "-p", `{"spec":{"minAvailable":1}}`)
	cp.kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=3m")
	cp.waitFor("the drained node runs no guarded pod and 2 run elsewhere", func() (bool, string) {
		n, nodes := runningOn(cp.pods("default", "app=guarded"))
		return n == 2 && !slices.Contains(nodes, node), fmt.Sprintf("%d running on %v (drained %s)", n, nodes, node)
	})
	nd, err := cp.cs.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil || !nd.Spec.Unschedulable {
		t.Fatalf("drained node %s: unschedulable=%v, err %v", node, nd != nil && nd.Spec.Unschedulable, err)
	}
	cp.kubectl("uncordon", node)
}

func (cp *controlPlane) testCSR(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "jane", Organization: []string{"dev"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	req := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	cp.apply(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: jane}
spec:
  request: ` + req + `
  signerName: kubernetes.io/kube-apiserver-client
  expirationSeconds: 86400
  usages: [client auth]
`)
	cp.kubectl("certificate", "approve", "jane")
	var certPEM []byte
	cp.waitFor("the controller-manager signs the approved CSR", func() (bool, string) {
		csr, err := cp.cs.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "jane", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		certPEM = csr.Status.Certificate
		return len(certPEM) > 0, fmt.Sprintf("conditions %v", csr.Status.Conditions)
	})
	blk, _ := pem.Decode(certPEM)
	if blk == nil {
		t.Fatalf("status.certificate is not PEM: %q", certPEM)
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: cp.srv.Certs().CAPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("signed certificate does not verify against the cluster CA: %v", err)
	}
	if cert.Subject.CommonName != "jane" {
		t.Errorf("signed certificate is for %q, want jane", cert.Subject.CommonName)
	}
}

func (cp *controlPlane) testNamespaceDeletion(t *testing.T) {
	cp.kubectl("create", "namespace", "doomed")
	cp.kubectl("-n", "doomed", "create", "deployment", "w", "--image=nginx:1.27", "--replicas=2")
	cp.kubectl("-n", "doomed", "create", "configmap", "c", "--from-literal=k=v")
	cp.kubectl("-n", "doomed", "expose", "deployment", "w", "--port=80")
	cp.kubectl("-n", "doomed", "rollout", "status", "deployment/w", "--timeout=3m")
	cp.kubectl("delete", "namespace", "doomed", "--timeout=3m")
	if out, err := cp.kubectlErr("get", "namespace", "doomed"); err == nil || !strings.Contains(out, "NotFound") {
		t.Fatalf("namespace doomed still there after delete --wait: %v\n%s", err, out)
	}
	for _, r := range []string{"pods", "replicasets.apps", "deployments.apps", "configmaps", "services", "endpointslices.discovery.k8s.io", "serviceaccounts"} {
		if out := cp.kubectl("get", r, "-n", "doomed", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("%s left in the deleted namespace: %s", r, out)
		}
	}
}

func (cp *controlPlane) testCronJob(t *testing.T) {
	cp.waitFor("the CronJob creates a Job that completes", func() (bool, string) {
		l, err := cp.cs.BatchV1().Jobs("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, j := range l.Items {
			owned := len(j.OwnerReferences) == 1 && j.OwnerReferences[0].Kind == "CronJob" && j.OwnerReferences[0].Name == "tick"
			if owned && j.Status.Succeeded >= 1 {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d jobs, none of tick succeeded", len(l.Items))
	})
}

// leaseHolder returns the holder identity of the Lease kube-system/name and the running proc
// among ps that logged taking it (leader election logs no identity; at most one running proc
// has taken the Lease while no holder was stopped).
func (cp *controlPlane) leaseHolder(name string, ps []*proc) (holder string, p *proc) {
	lease, err := cp.cs.CoordinationV1().Leases("kube-system").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return "", nil
	}
	holder = *lease.Spec.HolderIdentity
	for _, q := range ps {
		// client-go's leader election logs it structured since 1.34 (unstructured before).
		log := string(q.tail(1 << 30))
		if q.running() && (strings.Contains(log, `"Successfully acquired lease" lock="kube-system/`+name+`"`) ||
			strings.Contains(log, "successfully acquired lease kube-system/"+name)) {
			return holder, q
		}
	}
	return holder, nil
}

func (cp *controlPlane) testLeaderElection(t *testing.T) {
	for _, le := range []struct {
		lease string
		procs []*proc
	}{{"kube-controller-manager", cp.kcm}, {"kube-scheduler", cp.sched}} {
		var holder string
		var p *proc
		cp.waitFor(le.lease+" holds its Lease", func() (bool, string) {
			holder, p = cp.leaseHolder(le.lease, le.procs)
			return p != nil, "holder " + holder
		})
		p.stop()
		cp.waitFor(le.lease+": the other instance takes the Lease", func() (bool, string) {
			h, q := cp.leaseHolder(le.lease, le.procs)
			return q != nil && q != p && h != holder, fmt.Sprintf("holder %q (was %q)", h, holder)
		})
	}
	// The new leaders work: a scale-up made after the handover completes.
	cp.kubectl("scale", "deployment/api", "--replicas=4")
	cp.kubectl("rollout", "status", "deployment/api", "--timeout=3m")
	cp.waitFor("4 api pods after the handover", func() (bool, string) {
		n, _ := runningOn(cp.pods("default", "app=api"))
		return n == 4, fmt.Sprintf("%d running", n)
	})
}

// testNoForbidden: with their own identities and --use-service-account-credentials, no
// controller or the scheduler was refused anything by hacp's RBAC, and their delegated
// authentication found all it needs.
// testResourceQuota: kube-controller-manager's resourcequota controller fills a quota's
// status, hacp's ResourceQuota admission charges pods to it and refuses one too many, and the
// controller gives the pod back when it is deleted.
func (cp *controlPlane) testResourceQuota(t *testing.T) {
	ctx := context.Background()
	const ns = "quota-cp"
	cp.kubectl("create", "namespace", ns)
	cp.waitFor("default service account", func() (bool, string) {
		_, err := cp.cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	cp.kubectl("create", "quota", "q", "--hard=pods=2", "-n", ns)
	used := func(want string) func() (bool, string) {
		return func() (bool, string) {
			q, err := cp.cs.CoreV1().ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			h, u := q.Status.Hard[corev1.ResourcePods], q.Status.Used[corev1.ResourcePods]
			return h.String() == "2" && u.String() == want, fmt.Sprintf("status %+v", q.Status)
		}
	}
	cp.waitFor("the controller sets the quota's status", used("0"))
	cp.kubectl("run", "p1", "--image=busybox:1.36", "-n", ns, "--", "sleep", "3600")
	cp.kubectl("run", "p2", "--image=busybox:1.36", "-n", ns, "--", "sleep", "3600")
	out, err := cp.kubectlErr("run", "p3", "--image=busybox:1.36", "-n", ns, "--", "sleep", "3600")
	if err == nil || !strings.Contains(out, `pods "p3" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`) {
		t.Fatalf("third pod: %v\n%s", err, out)
	}
	cp.kubectl("delete", "pod", "p1", "-n", ns, "--wait=true")
	cp.waitFor("the controller gives the deleted pod back", used("1"))
	cp.kubectl("run", "p3", "--image=busybox:1.36", "-n", ns, "--", "sleep", "3600")
	cp.kubectl("delete", "namespace", ns, "--wait=false")
}

func (cp *controlPlane) testNoForbidden(t *testing.T) {
	for _, p := range append(append([]*proc{}, cp.kcm...), cp.sched...) {
		for _, line := range strings.Split(string(p.tail(1<<30)), "\n") {
			if strings.Contains(line, "forbidden: User ") { // RBAC, not NamespaceLifecycle
				t.Errorf("%s: %s", p.name, line)
			}
			// Delegated authentication found everything it reads in
			// extension-apiserver-authentication (the request-header CA included).
			if strings.Contains(line, "missing content for CA bundle") {
				t.Errorf("%s: %s", p.name, line)
			}
		}
	}
}

// apply applies a YAML manifest with kubectl.
func (cp *controlPlane) apply(manifest string) {
	cp.t.Helper()
	path := filepath.Join(cp.dir, fmt.Sprintf("manifest-%d.yaml", time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		cp.t.Fatal(err)
	}
	cp.kubectl("apply", "-f", path)
}
