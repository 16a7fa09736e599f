package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"time"

	hnetns "github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/pkg/apiserver/certs"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// etcdClient connects to m's etcd member over its loopback client URL from inside m (hacp:
// with the client certificate its apiserver made); it returns the client and the endpoint.
func (s *stack) etcdClient(m *hnetns.Host) (*clientv3.Client, string, error) {
	cfg := clientv3.Config{
		Endpoints:   []string{"http://127.0.0.1:2379"},
		DialTimeout: 2 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return m.DialContext(ctx, "tcp", addr)
		})},
		Logger: zap.NewNop(),
	}
	if s.name == serverHACP {
		tlsCfg, err := certs.LoadEtcdClientTLS(filepath.Join(s.dir, m.Name, "data", "pki"))
		if err != nil {
			return nil, "", err
		}
		cfg.Endpoints, cfg.TLS = []string{"https://127.0.0.1:2379"}, tlsCfg
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, "", err
	}
	return cli, cfg.Endpoints[0], nil
}

// etcdStatus is m's member's status: its id, the leader it knows, its backend's size.
func (s *stack) etcdStatus(ctx context.Context, m *hnetns.Host) (*clientv3.StatusResponse, error) {
	cli, ep, err := s.etcdClient(m)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return cli.Status(ctx, ep)
}

// etcdInUse is how many bytes of m's member's backend are in use.
func (s *stack) etcdInUse(m *hnetns.Host) (int64, error) {
	st, err := s.etcdStatus(context.Background(), m)
	if err != nil {
		return 0, err
	}
	return st.DbSizeInUse, nil
}

// moveEtcdLeader makes to's member the etcd leader (a leadership transfer asked of the
// current leader) and waits until to's member says so.
func (s *stack) moveEtcdLeader(ctx context.Context, to *hnetns.Host) error {
	st, err := s.etcdStatus(ctx, to)
	if err != nil {
		return err
	}
	target := st.Header.MemberId
	if st.Leader != target {
		if err := s.askLeaderToMove(ctx, st.Leader, target); err != nil {
			return err
		}
	}
	return poll(ctx, 30*time.Second, func() bool {
		st, err := s.etcdStatus(ctx, to)
		return err == nil && st.Leader == target
	})
}

// askLeaderToMove finds the master whose member is leader and asks it to hand over to target.
func (s *stack) askLeaderToMove(ctx context.Context, leader, target uint64) error {
	for _, m := range s.b.masters {
		st, err := s.etcdStatus(ctx, m)
		if err != nil || st.Header.MemberId != leader {
			continue
		}
		cli, _, err := s.etcdClient(m)
		if err != nil {
			return err
		}
		defer cli.Close()
		mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err = cli.MoveLeader(mctx, target)
		return err
	}
	return fmt.Errorf("no master's member is the leader %x", leader)
}

// leaderToVictim makes m1, the master the storm kills, also the etcd leader, so that every
// server's storm is the same worst case: the VIP holder and the Raft leader lost at once
// (left to chance, one server's run lost its leader and the other's did not).
func (r *runState) leaderToVictim(ctx context.Context) {
	victim := r.s.b.masters[0]
	if err := r.s.moveEtcdLeader(ctx, victim); err != nil {
		r.s.b.progress("%s: etcd leader not moved to %s: %v", r.s.name, victim.Name, err)
		return
	}
	r.rep.Storm.EtcdLeaderKilled = true
}
