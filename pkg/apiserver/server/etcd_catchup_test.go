package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// TestEtcdMemberBehindCatchUpEntriesCatchesUp: what a small etcd-snapshot-catchup-entries
// costs is how a member further behind than that catches up (the leader sends it the
// database as a snapshot instead of the entries it no longer keeps): a master stopped while
// the others write 300 entries (etcd compacts its in-memory log to the last keep entries
// every 100 applied ones) is back, and serves every write, after its restart on its data dir.
func TestEtcdMemberBehindCatchUpEntriesCatchesUp(t *testing.T) {
	const keep, writes = 20, 300
	servers, cfgs := servertest.NewStackedWith(t, 3, func(c *server.Config) { c.EtcdSnapshotCatchUpEntries = keep })
	ctx := context.Background()
	if err := servers[2].Shutdown(); err != nil {
		t.Fatal(err)
	}
	c0 := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, servers[0]))
	var last *corev1.ConfigMap
	for i := range writes {
		cm, err := c0.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("behind-%d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("write %d with two of three members: %v", i, err)
		}
		last = cm
	}
	back, err := servertest.Start(cfgs[2], nil)
	if err != nil {
		t.Fatalf("restart of the member left behind: %v", err)
	}
	t.Cleanup(func() { _ = back.Shutdown() })
	c2 := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, back))
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := c2.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		n := 0
		for _, cm := range list.Items {
			if len(cm.Name) > 7 && cm.Name[:7] == "behind-" {
				n++
			}
		}
		return n == writes, nil
	})
	if err != nil {
		t.Fatalf("the restarted member does not serve the %d writes made while it was down: %v", writes, err)
	}
	got, err := c2.CoreV1().ConfigMaps("default").Get(ctx, last.Name, metav1.GetOptions{})
	if err != nil || got.ResourceVersion != last.ResourceVersion {
		t.Fatalf("last write through the restarted member: %v %v", got, err)
	}
}
