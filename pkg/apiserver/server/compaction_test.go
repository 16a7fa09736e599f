package server_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestExternalEtcdCompaction: two apiservers on one external etcd compact its history
// every --etcd-compaction-interval, through upstream's compaction key.
func TestExternalEtcdCompaction(t *testing.T) {
	etcd := etcdtest.Start(t)
	for range 2 {
		servertest.New(t, func(cfg *server.Config) {
			cfg.EtcdServers = []string{etcd.ClientURL()}
			cfg.EtcdCompactionInterval = 50 * time.Millisecond
		})
	}
	c, err := etcd.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	for deadline := time.Now().Add(time.Minute); ; {
		_, err := c.Get(ctx, "/registry/namespaces/default", clientv3.WithRev(1))
		if errors.Is(err, rpctypes.ErrCompacted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("history never compacted")
		}
		time.Sleep(20 * time.Millisecond) // poll
	}
	resp, err := c.Get(ctx, storage.CompactRevKey)
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Version < 2 {
		t.Fatalf("compaction key: %v %v", resp, err)
	}
}
