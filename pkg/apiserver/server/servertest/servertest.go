// Package servertest starts a complete apiserver with its own embedded etcd
// on loopback ports picked at runtime, for tests and benchmarks.
package servertest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config returns a config serving on 127.0.0.1:0 with data in dir.
func Config(dir string) (*server.Config, error) {
	cfg := server.DefaultConfig()
	cfg.DataDir = dir
	cfg.SecurePort = 0
	cfg.ShutdownDelay = 0
	cfg.ShutdownTimeout = 5 * time.Second
	cfg.EtcdUnsafeNoFsync = true
	cfg.EtcdAutoCompactionRetention = "0"
	var err error
	if cfg.EtcdListenClientURL, err = embedetcd.FreeLocalHTTPSURL(); err != nil {
		return nil, err
	}
	if cfg.EtcdListenPeerURL, err = embedetcd.FreeLocalURL(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Start starts a server with cfg (see Config).
func Start(cfg *server.Config, log *slog.Logger) (*server.Server, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := server.New(cfg, log)
	if err != nil {
		return nil, err
	}
	if err := s.Start(context.Background()); err != nil {
		return nil, err
	}
	return s, nil
}

// New starts a server for t and stops it when the test ends. mutate may change the config.
// A start that loses one of its picked ports to another process is retried with new ones.
func New(t testing.TB, mutate func(*server.Config)) *server.Server {
	t.Helper()
	var err error
	for range 5 {
		var cfg *server.Config
		cfg, err = Config(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if mutate != nil {
			mutate(cfg)
		}
		var s *server.Server
		s, err = Start(cfg, nil)
		if err == nil {
			t.Cleanup(func() { _ = s.Shutdown() })
			return s
		}
		if !embedetcd.IsAddrInUse(err) {
			break
		}
	}
	t.Fatal(err)
	return nil
}

// RestConfig is an admin client config for s.
func RestConfig(t testing.TB, s *server.Server) *rest.Config {
	t.Helper()
	c, err := clientcmd.BuildConfigFromFlags("", s.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	c.QPS, c.Burst = 1000, 1000
	return c
}

// NewStacked starts n servers, each with its own member of one embedded etcd cluster (the
// kubeadm stacked layout), and stops them when the test ends (Shutdown is safe to call twice).
func NewStacked(t testing.TB, n int) []*server.Server {
	t.Helper()
	servers, _ := NewStackedWith(t, n, nil)
	return servers
}

// NewStackedWith is NewStacked with mutate applied to every member's config (nil: none), and
// returns the configs too (to restart a member on its data dir with servertest.Start).
func NewStackedWith(t testing.TB, n int, mutate func(*server.Config)) ([]*server.Server, []*server.Config) {
	t.Helper()
	var cfgs []*server.Config
	var cluster string
	for i := range n {
		cfg, err := Config(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		cfg.EtcdName = fmt.Sprintf("master%d", i)
		if mutate != nil {
			mutate(cfg)
		}
		cfgs = append(cfgs, cfg)
		if i > 0 {
			cluster += ","
		}
		cluster += cfg.EtcdName + "=" + cfg.EtcdListenPeerURL
	}
	servers := make([]*server.Server, n)
	errs := make(chan error, n)
	for i, cfg := range cfgs {
		cfg.EtcdInitialCluster = cluster
		go func() {
			s, err := Start(cfg, nil)
			servers[i] = s
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			for _, s := range servers {
				if s != nil {
					_ = s.Shutdown()
				}
			}
			t.Fatal(err)
		}
	}
	for _, s := range servers {
		t.Cleanup(func() { _ = s.Shutdown() })
	}
	return servers, cfgs
}
