package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// quotaWithStatus creates a ResourceQuota and sets its status as kube-controller-manager's
// resourcequota controller does (hard from spec, used counted: here zero or omitted).
func quotaWithStatus(t *testing.T, cs kubernetes.Interface, ns, name string, hard corev1.ResourceList, used corev1.ResourceList) {
	t.Helper()
	ctx := context.Background()
	q, err := cs.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
	if _, err := cs.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func quotaPod(name, cpu, mem string) *corev1.Pod {
	c := corev1.Container{Name: "c", Image: "busybox"}
	if cpu != "" {
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	if mem != "" {
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

func wantForbiddenMessage(t *testing.T, err error, want string) {
	t.Helper()
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("got %v, want 403 %q", err, want)
	}
}

func wantUsed(t *testing.T, cs kubernetes.Interface, ns, name string, want map[corev1.ResourceName]string) {
	t.Helper()
	q, err := cs.CoreV1().ResourceQuotas(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		got, ok := q.Status.Used[k]
		if !ok || got.Cmp(resource.MustParse(v)) != 0 {
			t.Errorf("quota %s status.used[%s] = %v, want %s (used: %v)", name, k, got.String(), v, q.Status.Used)
		}
	}
}

// TestResourceQuota runs the ResourceQuota plugin (on by default) through client-go: pods and
// their compute resources, object counts, refusals with upstream's messages, status.used
// written before the object is stored, dry runs not charged, a quota whose usage is not
// known yet, and concurrent creates never exceeding the quota.
func TestResourceQuota(t *testing.T) {
	s := servertest.New(t, nil)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	const ns = "quota"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventuallyOK(t, "default service account", func() error {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	hard := corev1.ResourceList{
		corev1.ResourcePods: resource.MustParse("2"), corev1.ResourceConfigMaps: resource.MustParse("2"),
		corev1.ResourceRequestsCPU: resource.MustParse("1"), corev1.ResourceLimitsMemory: resource.MustParse("1Gi"),
	}
	zero := corev1.ResourceList{}
	for k := range hard {
		zero[k] = resource.MustParse("0")
	}
	quotaWithStatus(t, cs, ns, "q", hard, zero)

	// The plugin's cache follows a watch: a dry run shows when it has the quota's status.
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	eventuallyOK(t, "quota in the plugin's cache", func() error {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, quotaPod("bare", "", ""), dry)
		if err == nil {
			return fmt.Errorf("a pod without requests was admitted")
		}
		wantForbiddenMessage(t, err, `pods "bare" is forbidden: failed quota: q: must specify limits.memory for: c; must specify requests.cpu for: c`)
		return nil
	})
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, quotaPod("dry", "400m", "256Mi"), dry); err != nil {
		t.Fatal(err)
	}
	wantUsed(t, cs, ns, "q", map[corev1.ResourceName]string{"pods": "0", "requests.cpu": "0"})

	if _, err := cs.CoreV1().Pods(ns).Create(ctx, quotaPod("p1", "400m", "256Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantUsed(t, cs, ns, "q", map[corev1.ResourceName]string{"pods": "1", "requests.cpu": "400m", "limits.memory": "256Mi", "configmaps": "0"})
	_, err := cs.CoreV1().Pods(ns).Create(ctx, quotaPod("p2", "700m", "256Mi"), metav1.CreateOptions{})
	wantForbiddenMessage(t, err, `pods "p2" is forbidden: exceeded quota: q, requested: requests.cpu=700m, used: requests.cpu=400m, limited: requests.cpu=1`)
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, quotaPod("p2", "600m", "256Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, quotaPod("p3", "0", "1Mi"), metav1.CreateOptions{})
	wantForbiddenMessage(t, err, `pods "p3" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`)
	wantUsed(t, cs, ns, "q", map[corev1.ResourceName]string{"pods": "2", "requests.cpu": "1", "limits.memory": "512Mi"})

	for _, name := range []string{"c1", "c2"} {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c3"}}, metav1.CreateOptions{})
	wantForbiddenMessage(t, err, `configmaps "c3" is forbidden: exceeded quota: q, requested: configmaps=1, used: configmaps=2, limited: configmaps=2`)
	// Updates do not count objects again; nothing the quota does not track is charged.
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"k": "v"}
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantUsed(t, cs, ns, "q", map[corev1.ResourceName]string{"pods": "2", "configmaps": "2"})

	t.Run("status unknown", func(t *testing.T) {
		// status.hard set, status.used not computed yet.
		quotaWithStatus(t, cs, ns, "fresh", corev1.ResourceList{corev1.ResourceSecrets: resource.MustParse("5")}, nil)
		i := 0
		eventuallyOK(t, "quota in the plugin's cache", func() error {
			i++
			name := fmt.Sprintf("s-unknown-%d", i)
			_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, dry)
			if err == nil {
				return fmt.Errorf("admitted")
			}
			wantForbiddenMessage(t, err, `secrets "`+name+`" is forbidden: status unknown for quota: fresh, resources: secrets`)
			return nil
		})
	})

	t.Run("concurrent creates", func(t *testing.T) {
		const ns2 = "quota-race"
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns2}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		quotaWithStatus(t, cs, ns2, "count", corev1.ResourceList{"count/configmaps": resource.MustParse("5")},
			corev1.ResourceList{"count/configmaps": resource.MustParse("0")})
		i := 0
		eventuallyOK(t, "quota in the plugin's cache", func() error {
			i++
			q, err := cs.CoreV1().ResourceQuotas(ns2).Get(ctx, "count", metav1.GetOptions{})
			if err != nil {
				return err
			}
			before := q.Status.Used["count/configmaps"]
			// A dry run is never charged, so there is no way to see the cache; charge one
			// real object and look for its charge.
			if _, err := cs.CoreV1().ConfigMaps(ns2).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("probe-%d", i)}}, metav1.CreateOptions{}); err != nil {
				return err
			}
			q, err = cs.CoreV1().ResourceQuotas(ns2).Get(ctx, "count", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if after := q.Status.Used["count/configmaps"]; after.Cmp(before) <= 0 {
				return fmt.Errorf("not charged")
			}
			return nil
		})
		q, err := cs.CoreV1().ResourceQuotas(ns2).Get(ctx, "count", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		used := q.Status.Used["count/configmaps"]
		left := 5 - int(used.Value())
		var wg sync.WaitGroup
		var mu sync.Mutex
		created, refused := 0, 0
		for n := range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := cs.CoreV1().ConfigMaps(ns2).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("race-%d", n)}}, metav1.CreateOptions{})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					created++
				case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota: count, requested: count/configmaps=1, used: count/configmaps=5, limited: count/configmaps=5"):
					refused++
				default:
					t.Errorf("create race-%d: %v", n, err)
				}
			}()
		}
		wg.Wait()
		if created != left || refused != 10-left {
			t.Fatalf("created %d and refused %d of 10 with %d left in the quota", created, refused, left)
		}
		wantUsed(t, cs, ns2, "count", map[corev1.ResourceName]string{"count/configmaps": "5"})
	})
}
