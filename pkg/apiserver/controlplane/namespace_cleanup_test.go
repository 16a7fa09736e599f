package controlplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// sample returns a valid object of every namespaced built-in kind, by resource.
func sample(resource, name string) runtime.Object {
	om := metav1.ObjectMeta{Name: name}
	switch resource {
	case "pods":
		return &corev1.Pod{ObjectMeta: om, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}
	case "services":
		return &corev1.Service{ObjectMeta: om, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	case "endpoints":
		//lint:ignore SA1019 the registry serves v1 Endpoints, as kube-apiserver still does
		return &corev1.Endpoints{ObjectMeta: om}
	case "configmaps":
		return &corev1.ConfigMap{ObjectMeta: om}
	case "secrets":
		return &corev1.Secret{ObjectMeta: om}
	case "serviceaccounts":
		return &corev1.ServiceAccount{ObjectMeta: om}
	case "events":
		return &corev1.Event{ObjectMeta: om}
	case "leases":
		return &coordinationv1.Lease{ObjectMeta: om}
	case "deployments":
		return deployment(name)
	case "roles":
		return &rbacv1.Role{ObjectMeta: om}
	case "rolebindings":
		return &rbacv1.RoleBinding{ObjectMeta: om, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}}
	}
	if obj := workloadSample(resource, name); obj != nil {
		return obj
	}
	return sampleNonWorkload(resource, om)
}

// twoRegistries starts two apiservers' registries on one etcd; stopA ends the first one (its
// apiserver dies).
func twoRegistries(t *testing.T) (stopA func(), b *controlplane.Registry, c *clientv3.Client) {
	t.Helper()
	c = etcdtest.Client(t)
	start := func() (*controlplane.Registry, func()) {
		r := controlplane.New(c, controlplane.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		stop := func() { cancel(); r.Wait() }
		t.Cleanup(stop)
		if err := r.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return r, stop
	}
	_, stopA = start()
	b, _ = start()
	return stopA, b, c
}

func waitGone(t *testing.T, s *registry.Store, ns, name string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		_, err := s.Get(context.Background(), ns, name, &metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s/%s still there: %v", s.Names().Plural, ns, name, err)
		}
		time.Sleep(50 * time.Millisecond) // poll
	}
}

// TestNamespaceCleanupByAnyApiserver: a namespace marked terminating by an apiserver that
// died at once is emptied of every namespaced kind and removed by another live apiserver.
func TestNamespaceCleanupByAnyApiserver(t *testing.T) {
	stopA, b, c := twoRegistries(t)
	ctx := context.Background()
	nss := store(b, "", "namespaces")
	if _, err := nss.Create(ctx, "", "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var stores []*registry.Store
	for _, res := range b.Resources {
		st := res.Store
		if !st.Names().Namespaced || st.Definition().StorageOf != nil {
			continue // (another version's view of objects created here)
		}
		obj := sample(st.Names().Plural, "x")
		if obj == nil {
			t.Errorf("no sample %s: add one so namespace cleanup is tested for it", st.Names().Plural)
			continue
		}
		if st.Names().Plural == "configmaps" {
			obj.(*corev1.ConfigMap).Finalizers = []string{"example.com/keep"}
		}
		if _, err := st.Create(ctx, "team", "", obj, &metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", st.Names().Plural, err)
		}
		stores = append(stores, st)
	}

	// Apiserver a marks the namespace terminating and dies before it does anything else.
	stopA()
	nsStore := storage.New(c, storage.Config{Prefix: "/registry", Codec: namespaceCodec(t), NewFunc: func() runtime.Object { return &corev1.Namespace{} }})
	err := nsStore.GuaranteedUpdate(ctx, "namespaces/team", &corev1.Namespace{}, false, nil, func(cur runtime.Object) (runtime.Object, error) {
		ns := cur.(*corev1.Namespace)
		now := metav1.Now()
		ns.DeletionTimestamp = &now
		ns.Status.Phase = corev1.NamespaceTerminating
		return ns, nil
	})
	if err != nil {
		t.Fatal(err)
	}

	waitGone(t, nss, "", "team")
	for _, st := range stores {
		if _, err := st.Get(ctx, "team", "x", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s left in the removed namespace: %v", st.Names().Plural, err)
		}
	}
}

// TestNamespaceCleanupWaitsForTheLockHolder: while another apiserver holds a terminating
// namespace's cleanup lock, this one leaves the namespace alone (it tries the lock, finds it
// taken and backs off); when the holder dies, it takes over and finishes.
func TestNamespaceCleanupWaitsForTheLockHolder(t *testing.T) {
	_, b, c := twoRegistries(t)
	ctx := context.Background()
	nss := store(b, "", "namespaces")
	cms := store(b, "", "configmaps")
	if _, err := nss.Create(ctx, "", "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "held"}}, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, "held", "", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The other apiserver, alive and at work: it holds the lock.
	holder, err := concurrency.NewSession(c, concurrency.WithTTL(60))
	if err != nil {
		t.Fatal(err)
	}
	lockPrefix := "/registry/hacp.io/namespace-cleanup/held"
	if err := concurrency.NewMutex(holder, lockPrefix).Lock(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	attempts := c.Watch(wctx, lockPrefix+"/", clientv3.WithPrefix())

	nsStore := storage.New(c, storage.Config{Prefix: "/registry", Codec: namespaceCodec(t), NewFunc: func() runtime.Object { return &corev1.Namespace{} }})
	err = nsStore.GuaranteedUpdate(ctx, "namespaces/held", &corev1.Namespace{}, false, nil, func(cur runtime.Object) (runtime.Object, error) {
		ns := cur.(*corev1.Namespace)
		now := metav1.Now()
		ns.DeletionTimestamp = &now
		ns.Status.Phase = corev1.NamespaceTerminating
		return ns, nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// b tries the lock: its key comes and goes.
	for backedOff := false; !backedOff; {
		select {
		case resp := <-attempts:
			if err := resp.Err(); err != nil {
				t.Fatal(err)
			}
			for _, ev := range resp.Events {
				backedOff = backedOff || ev.Type == clientv3.EventTypeDelete
			}
		case <-time.After(time.Minute):
			t.Fatal("the live apiserver never tried the lock")
		}
	}
	if _, err := cms.Get(ctx, "held", "x", &metav1.GetOptions{}); err != nil {
		t.Fatalf("content removed while another apiserver held the lock: %v", err)
	}
	if _, err := nss.Get(ctx, "", "held", &metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace removed while another apiserver held the lock: %v", err)
	}

	// The holder dies: its lease goes (revoked here rather than waiting for it to run out).
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, nss, "", "held")
	if _, err := cms.Get(ctx, "held", "x", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("content left: %v", err)
	}
}

// namespaceCodec is the registry's storage codec for namespaces, for writing beside it.
func namespaceCodec(t *testing.T) storage.Codec {
	t.Helper()
	for _, k := range controlplane.Kinds() {
		if k.Plural == "namespaces" {
			c, err := registry.StorageCodec("", k)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	t.Fatal("no namespaces kind")
	return nil
}
