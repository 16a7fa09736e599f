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
	"k8s.io/apimachinery/pkg/runtime"
)

// TestRandomizedWritesAcrossLeaderChanges: the randomized writes of
// TestRandomizedWritesAgainstHistory on a 3-member embedded cluster, each writer on one
// member as each apiserver is, while etcd's leadership is moved from member to member and
// one transaction in eight meets an injected fault. Attempts are bounded tightly, so real
// proposals caught in a leader change time out and are retried too.
func TestRandomizedWritesAcrossLeaderChanges(t *testing.T) {
	const members = 3
	var cfgs []embedetcd.Config
	cluster := ""
	for i := range members {
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
	srvs := make([]*embedetcd.Server, members)
	errs := make(chan error, members)
	for i := range cfgs {
		cfgs[i].InitialCluster = cluster
		go func() {
			var err error
			srvs[i], err = embedetcd.Start(cfgs[i])
			errs <- err
		}()
	}
	for range members {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
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
	ctx, stop := context.WithCancel(context.Background())
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
	all := randomWrites(t, stores, 6, 40, 3)
	stop()
	wg.Wait()
	if t.Failed() {
		return
	}
	if moves == 0 {
		t.Fatal("the leadership never moved")
	}
	t.Logf("%d leader moves", moves)
	checkAgainstHistory(t, clients[0], all)
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
