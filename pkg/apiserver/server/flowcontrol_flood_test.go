package server_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// metricSum sums the values of the /metrics samples whose line starts with prefix.
func metricSum(e *httpEnv, prefix string) float64 {
	_, b := e.do(e.admin, "GET", "/metrics", "", nil, nil)
	sum := 0.0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// TestFlowControlLeaseRenewalsDuringListFlood is issue 39's scenario with API Priority and
// Fairness on (the bootstrap configuration, on a server of 30 seats): a service account
// floods the server with cluster-wide lists from 48 goroutines, which queue in
// workload-low, while a node (system:node:n1) renews its Lease through system-node-high:
// every renewal completes within 10 s, and the flood was queued (a metric says so).
func TestFlowControlLeaseRenewalsDuringListFlood(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) { c.MaxRequestsInflight, c.MaxMutatingRequestsInflight = 20, 10 })
	e := newHTTPEnv(t, s)
	rc := servertest.RestConfig(t, s)
	admin := kubernetes.NewForConfigOrDie(rc)
	ctx := context.Background()
	floodSetup(t, admin)
	if _, err := admin.CoordinationV1().Leases("kube-node-lease").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("n1")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	floodCfg := rest.CopyConfig(rc)
	floodCfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:flood:lister",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:flood", "system:authenticated"}}
	nodeCfg := rest.CopyConfig(rc)
	nodeCfg.Impersonate = rest.ImpersonationConfig{UserName: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}
	nodeCfg.DisableCompression = true // a transport (connection) of its own, as a kubelet has
	node := kubernetes.NewForConfigOrDie(nodeCfg)

	// Requests waiting in workload-low's queues at one moment: every request of a queuing
	// level counts in request_queue_length_after_enqueue, as upstream, waiting or not.
	const queued = `apiserver_flowcontrol_current_inqueue_requests{flow_schema="service-accounts",priority_level="workload-low"}`
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var lists, tooMany atomic.Int64
	var floodErr atomic.Value
	flood := kubernetes.NewForConfigOrDie(floodCfg)
	for range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := flood.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
				switch {
				case err == nil:
					lists.Add(1)
				case apierrors.IsTooManyRequests(err):
					tooMany.Add(1)
				default:
					floodErr.Store(err)
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	eventually(t, "the flood queued in workload-low", func() bool { return metricSum(e, queued) > 0 })

	for i := range 10 {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		lease, err := node.CoordinationV1().Leases("kube-node-lease").Get(rctx, "n1", metav1.GetOptions{})
		if err == nil {
			now := metav1.NowMicro()
			lease.Spec.RenewTime = &now
			_, err = node.CoordinationV1().Leases("kube-node-lease").Update(rctx, lease, metav1.UpdateOptions{})
		}
		cancel()
		if err != nil {
			t.Fatalf("lease renewal %d during the flood: %v", i, err)
		}
	}
	if n := metricSum(e, `apiserver_flowcontrol_dispatched_requests_total{flow_schema="system-node-high",priority_level="node-high"}`); n < 20 {
		t.Errorf("node-high dispatched %v requests, want the 20 of the renewals", n)
	}
	if err, _ := floodErr.Load().(error); err != nil {
		t.Errorf("a flood list failed other than with 429: %v", err)
	}
	t.Logf("flood: %d lists, %d rejected with 429 after client-go's retries", lists.Load(), tooMany.Load())
}

// floodSetup makes 300 ConfigMaps for the flood to list (3 seats' worth each list) and lets
// the flood's service account read them cluster-wide.
func floodSetup(t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flood"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "flood-view"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "flood", Name: "lister"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	data := strings.Repeat("x", 1024)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 300; i += 8 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}, Data: map[string]string{"d": data}}
				if _, err := admin.CoreV1().ConfigMaps("flood").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
