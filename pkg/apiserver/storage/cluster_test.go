package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestRandomizedWritesAcrossLeaderChanges: the randomized writes of
// TestRandomizedWritesAgainstHistory on a 3-member embedded cluster, each writer on one
// member as each apiserver is, while etcd's leadership is moved from member to member and
// one transaction in eight meets an injected fault. Attempts are bounded tightly, so real
// proposals caught in a leader change time out and are retried too.
func TestRandomizedWritesAcrossLeaderChanges(t *testing.T) {
	srvs := startCluster(t, 3)
	var clients []*clientv3.Client
	var stores []*Etcd3
	newCM := func() runtime.Object { return &corev1.ConfigMap{} }
	for _, srv := range srvs {
		t.Cleanup(srv.Close)
		c, err := srv.Client()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		f := &faultKV{KV: c.KV}
		injectFaults(f, 8)
		s := New(c, Config{Prefix: "/registry", NewFunc: newCM, AttemptTimeout: time.Second, KV: f})
		if _, err := s.Revision(context.Background()); err != nil {
			t.Fatal(err)
		}
		clients, stores = append(clients, c), append(stores, s)
	}

	// Move the leadership around while the writers write.
	stopMoving := keepMovingLeader(clients)
	all := randomWrites(t, stores, 6, 40, 3)
	moves := stopMoving()
	if t.Failed() {
		return
	}
	if moves == 0 {
		t.Fatal("the leadership never moved")
	}
	t.Logf("%d leader moves", moves)
	checkAgainstHistory(t, clients[0], all)
}

// startCluster starts an embedded etcd cluster of n members on loopback, with a short
// election timeout, and closes it when the test ends.
func startCluster(t *testing.T, n int) []*embedetcd.Server {
	t.Helper()
	var cfgs []embedetcd.Config
	cluster := ""
	for i := range n {
		client, err := embedetcd.FreeLocalURL()
		if err != nil {
			t.Fatal(err)
		}
		peer, err := embedetcd.FreeLocalURL()
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("m%d", i)
		cfgs = append(cfgs, embedetcd.Config{Name: name, DataDir: t.TempDir(), ClientURL: client, PeerURL: peer, UnsafeNoFsync: true,
			HeartbeatInterval: 50 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond, StartTimeout: 2 * time.Minute})
		if i > 0 {
			cluster += ","
		}
		cluster += name + "=" + peer
	}
	srvs := make([]*embedetcd.Server, n)
	errs := make(chan error, n)
	for i := range cfgs {
		cfgs[i].InitialCluster = cluster
		go func() {
			var err error
			srvs[i], err = embedetcd.Start(cfgs[i])
			errs <- err
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	for _, srv := range srvs {
		if srv != nil {
			t.Cleanup(srv.Close)
		}
	}
	if first != nil {
		t.Fatal(first)
	}
	return srvs
}

// keepMovingLeader moves etcd's leadership to another member every 150 ms until the returned
// stop is called, which returns how many moves succeeded.
func keepMovingLeader(clients []*clientv3.Client) (stop func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	moves := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(150 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if moveLeader(ctx, clients) {
				moves++
			}
		}
	}()
	return func() int {
		cancel()
		wg.Wait()
		return moves
	}
}

// TestReadsAcrossLeaderChanges: gets, lists and revision reads through each member's local
// KV (embedetcd.LocalClient, as the apiserver reads its own member), while etcd's leadership
// moves from member to member, all succeed: a linearizable read that meets an election is
// sent again as clientv3's gRPC interceptor would, instead of failing with "leader changed".
func TestReadsAcrossLeaderChanges(t *testing.T) {
	srvs := startCluster(t, 3)
	newCM := func() runtime.Object { return &corev1.ConfigMap{} }
	var clients []*clientv3.Client
	var stores []*Etcd3
	for _, srv := range srvs {
		c, err := srv.LocalClient()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		clients, stores = append(clients, c), append(stores, New(c, Config{Prefix: "/registry", NewFunc: newCM}))
	}
	ctx := context.Background()
	for i := range 5 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm%d", i), Namespace: "default"}}
		if err := stores[0].Create(ctx, "/configmaps/default/"+cm.Name, cm, &corev1.ConfigMap{}); err != nil {
			t.Fatal(err)
		}
	}

	stopMoving := keepMovingLeader(clients)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []error
	reads := 0
	deadline := time.Now().Add(3 * time.Second)
	for _, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(deadline); n++ {
				var err error
				switch n % 3 {
				case 0:
					err = s.Get(ctx, "/configmaps/default/cm1", GetOptions{}, &corev1.ConfigMap{})
				case 1:
					err = s.GetList(ctx, "/configmaps/default/", ListOptions{Recursive: true}, &corev1.ConfigMapList{})
				case 2:
					_, err = s.Revision(ctx)
				}
				mu.Lock()
				reads++
				if err != nil {
					failed = append(failed, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	moves := stopMoving()
	if moves == 0 {
		t.Fatal("the leadership never moved")
	}
	t.Logf("%d reads, %d leader moves", reads, moves)
	if len(failed) > 0 {
		t.Fatalf("%d of %d reads failed across %d leader moves; first: %v", len(failed), reads, moves, failed[0])
	}
}

// moveLeader asks the current leader to hand its leadership to another member.
func moveLeader(ctx context.Context, clients []*clientv3.Client) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, c := range clients {
		st, err := c.Status(ctx, c.Endpoints()[0])
		if err != nil || st.Leader != st.Header.MemberId {
			continue
		}
		members, err := c.MemberList(ctx)
		if err != nil {
			return false
		}
		var others []uint64
		for _, m := range members.Members {
			if m.ID != st.Leader {
				others = append(others, m.ID)
			}
		}
		_, err = c.MoveLeader(ctx, others[rand.IntN(len(others))])
		return err == nil
	}
	return false
}
