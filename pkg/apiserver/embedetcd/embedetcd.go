// Package embedetcd runs a real etcd member inside the apiserver process
// (go.etcd.io/etcd/server/v3/embed), alone or as one member of a cluster.
package embedetcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc"
	"go.etcd.io/etcd/server/v3/proxy/grpcproxy/adapter"
	"go.uber.org/zap"
)

// Config describes one embedded etcd member.
type Config struct {
	Name                    string        // member name
	DataDir                 string        // where the member keeps its WAL and snapshot
	ClientURL               string        // e.g. https://127.0.0.1:2379 (kept on loopback for etcdctl); https needs CertFile
	CertFile                string        // client URL TLS: the member's serving certificate (etcd's --cert-file)
	KeyFile                 string        // its key (etcd's --key-file)
	TrustedCAFile           string        // client certificates are required and must chain to this CA (etcd's --trusted-ca-file, --client-cert-auth)
	ClientTLS               *tls.Config   // what Client and LocalClient present and trust on an https client URL
	PeerURL                 string        // listen peer URL, e.g. http://10.0.0.1:2380
	AdvertisePeerURL        string        // peer URL other members use; PeerURL if empty
	InitialCluster          string        // name=peerURL,... ; empty means just this member
	InitialClusterState     string        // "new" or "existing"
	PeerCertFile            string        // peer TLS (optional)
	PeerKeyFile             string        //
	PeerTrustedCAFile       string        //
	PeerClientCertAuth      bool          //
	UnsafeNoFsync           bool          // tests and benchmarks only
	ProgressNotifyInterval  time.Duration // etcd watch progress notifications
	StartTimeout            time.Duration // how long to wait for the member to be ready
	LogLevel                string        // etcd's zap level; "error" by default
	AutoCompactionRetention string        // periodic compaction retention ("0" = off)
	HeartbeatInterval       time.Duration // Raft heartbeat; etcd's default (100ms) when zero
	ElectionTimeout         time.Duration // Raft election timeout; etcd's default (1s) when zero
	// SnapshotCatchUpEntries is how many applied Raft entries the member keeps in memory for
	// a lagging follower (etcd's --snapshot-catchup-entries); etcd's default (5000) when
	// zero. A follower further behind gets the whole database as a snapshot instead.
	SnapshotCatchUpEntries uint64
}

// Server is a running embedded member.
type Server struct {
	etcd      *embed.Etcd
	clientURL string
	clientTLS *tls.Config
	closeOnce sync.Once
}

// Start starts the member and waits until it has joined (or formed) its cluster.
func Start(cfg Config) (*Server, error) {
	ec := embed.NewConfig()
	if cfg.Name != "" {
		ec.Name = cfg.Name
	}
	ec.Dir = cfg.DataDir
	lvl := cfg.LogLevel
	if lvl == "" {
		lvl = "error"
	}
	if lvl == "off" {
		ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		lvl = "error"
	}
	ec.LogLevel = lvl
	cu, err := url.Parse(cfg.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("etcd: client url %q: %w", cfg.ClientURL, err)
	}
	pu, err := url.Parse(cfg.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("etcd: peer url %q: %w", cfg.PeerURL, err)
	}
	if err := clientTLS(ec, cu, cfg); err != nil {
		return nil, err
	}
	ec.ListenClientUrls = []url.URL{*cu}
	ec.AdvertiseClientUrls = []url.URL{*cu}
	ec.ListenPeerUrls = []url.URL{*pu}
	ec.AdvertisePeerUrls = []url.URL{*pu}
	if cfg.AdvertisePeerURL != "" {
		apu, err := url.Parse(cfg.AdvertisePeerURL)
		if err != nil {
			return nil, fmt.Errorf("etcd: advertise peer url %q: %w", cfg.AdvertisePeerURL, err)
		}
		ec.AdvertisePeerUrls = []url.URL{*apu}
	}
	if cfg.InitialCluster != "" {
		ec.InitialCluster = cfg.InitialCluster
	} else {
		ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	}
	if cfg.InitialClusterState != "" {
		ec.ClusterState = cfg.InitialClusterState
	}
	ec.PeerTLSInfo.CertFile = cfg.PeerCertFile
	ec.PeerTLSInfo.KeyFile = cfg.PeerKeyFile
	ec.PeerTLSInfo.TrustedCAFile = cfg.PeerTrustedCAFile
	ec.PeerTLSInfo.ClientCertAuth = cfg.PeerClientCertAuth
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	if cfg.ProgressNotifyInterval > 0 {
		ec.WatchProgressNotifyInterval = cfg.ProgressNotifyInterval
	}
	if cfg.HeartbeatInterval > 0 {
		ec.TickMs = uint(cfg.HeartbeatInterval.Milliseconds())
	}
	if cfg.ElectionTimeout > 0 {
		ec.ElectionMs = uint(cfg.ElectionTimeout.Milliseconds())
	}
	if cfg.SnapshotCatchUpEntries > 0 {
		ec.SnapshotCatchUpEntries = cfg.SnapshotCatchUpEntries
	}
	if cfg.AutoCompactionRetention != "" {
		ec.AutoCompactionMode = embed.CompactorModePeriodic
		ec.AutoCompactionRetention = cfg.AutoCompactionRetention
	}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("etcd: start member %q in %s: %w", ec.Name, cfg.DataDir, err)
	}
	timeout := cfg.StartTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd: member %q failed: %w", ec.Name, err)
	case <-time.After(timeout):
		e.Server.Stop()
		e.Close()
		return nil, fmt.Errorf("etcd: member %q not ready after %s (is a quorum of %s reachable?)", ec.Name, timeout, ec.InitialCluster)
	}
	return &Server{etcd: e, clientURL: dialURL(cu.Scheme, e.Clients[0].Addr()), clientTLS: cfg.ClientTLS}, nil
}

// clientTLS sets the client URL's TLS in ec: an https URL serves cfg's certificate and, with
// a TrustedCAFile, requires client certificates of that CA; an http URL takes no TLS files.
func clientTLS(ec *embed.Config, cu *url.URL, cfg Config) error {
	switch cu.Scheme {
	case "https":
		if cfg.CertFile == "" || cfg.KeyFile == "" {
			return fmt.Errorf("etcd: client url %s needs a serving certificate and key", cfg.ClientURL)
		}
	case "http":
		if cfg.CertFile != "" || cfg.TrustedCAFile != "" {
			return fmt.Errorf("etcd: client url %s is plain HTTP but TLS files are given; use https", cfg.ClientURL)
		}
		return nil
	default:
		return fmt.Errorf("etcd: client url %q is not http(s)", cfg.ClientURL)
	}
	ec.ClientTLSInfo.CertFile = cfg.CertFile
	ec.ClientTLSInfo.KeyFile = cfg.KeyFile
	ec.ClientTLSInfo.TrustedCAFile = cfg.TrustedCAFile
	ec.ClientTLSInfo.ClientCertAuth = cfg.TrustedCAFile != ""
	return nil
}

// dialURL is the URL to reach a listener at addr: a wildcard address is dialled on loopback,
// a name the member's certificate always holds.
func dialURL(scheme string, addr net.Addr) string {
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		return scheme + "://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ta.Port))
	}
	return scheme + "://" + addr.String()
}

// SnapshotCatchUpEntries is the number of applied Raft entries the running member keeps in
// memory for lagging followers, as etcd took it.
func (s *Server) SnapshotCatchUpEntries() uint64 { return s.etcd.Server.Cfg.SnapshotCatchUpEntries }

// ClientURL is the URL clients (and etcdctl) use to reach this member.
func (s *Server) ClientURL() string { return s.clientURL }

// Err reports fatal errors of the running member.
func (s *Server) Err() <-chan error { return s.etcd.Err() }

// Close stops the member; closing twice is harmless.
func (s *Server) Close() { s.closeOnce.Do(s.etcd.Close) }

// Client returns a new client connected to this member only.
func (s *Server) Client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   []string{s.clientURL},
		DialTimeout: 5 * time.Second,
		TLS:         s.clientTLS,
		Logger:      zap.NewNop(),
	})
}

// FreeLocalURL returns http://127.0.0.1:PORT for a port that was free a moment ago.
// It prefers ports below the kernel's ephemeral range: a port bound with :0 and
// closed again is soon handed to some outgoing connection, and the member that
// meant to listen on it then fails with "address already in use".
func FreeLocalURL() (string, error) {
	lo := ephemeralLow()
	for range 20 {
		port := lo/2 + rand.IntN(lo/2)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		l.Close()
		return "http://" + l.Addr().String(), nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "http://" + l.Addr().String(), nil
}

// FreeLocalHTTPSURL is FreeLocalURL with the https scheme, for a client URL with TLS.
func FreeLocalHTTPSURL() (string, error) {
	u, err := FreeLocalURL()
	if err != nil {
		return "", err
	}
	return "https://" + strings.TrimPrefix(u, "http://"), nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768 if unknown).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo >= 2048 {
				return lo
			}
		}
	}
	return 32768
}

// IsAddrInUse reports whether err is a listener's "address already in use",
// which callers that picked ports with FreeLocalURL retry with fresh ports.
func IsAddrInUse(err error) bool {
	return err != nil && strings.Contains(err.Error(), "address already in use")
}

// StartLocal starts a single loopback member in dir on free ports, retrying
// a few times if a picked port was taken in between. Used by tests and benchmarks.
func StartLocal(dir string, noFsync bool) (*Server, error) {
	var last error
	for range 5 {
		cu, err := FreeLocalURL()
		if err != nil {
			return nil, err
		}
		pu, err := FreeLocalURL()
		if err != nil {
			return nil, err
		}
		s, err := Start(Config{Name: "default", DataDir: dir, ClientURL: cu, PeerURL: pu, UnsafeNoFsync: noFsync, LogLevel: "off", StartTimeout: 30 * time.Second})
		if err == nil {
			return s, nil
		}
		last = err
		if !IsAddrInUse(err) {
			return nil, err
		}
	}
	return nil, last
}

// Healthy reports whether the member at c can serve a linearizable read,
// which needs a quorum of the cluster.
func Healthy(ctx context.Context, c *clientv3.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := c.Get(ctx, "health")
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("etcd: no quorum or unreachable: %w", err)
		}
		return fmt.Errorf("etcd: %w", err)
	}
	return nil
}

// LocalClient returns a client for the process that embeds this member. Its KV requests are
// function calls into the member, with no gRPC, socket or goroutine hops on the way: on a
// 2-core machine that halves the cost of a put. Watches, leases and maintenance still go over
// the client URL, so that a watch that asks for a leader (clientv3.WithRequireLeader) is still
// ended when this member loses its leader, which only etcd's gRPC interceptors do.
func (s *Server) LocalClient() (*clientv3.Client, error) {
	c, err := s.Client()
	if err != nil {
		return nil, err
	}
	c.KV = clientv3.NewKVFromKVClient(adapter.KvServerToKvClient(v3rpc.NewQuotaKVServer(s.etcd.Server)), c)
	return c, nil
}
