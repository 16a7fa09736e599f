// Package server wires the apiserver together: etcd (embedded or external),
// the registry, the REST endpoints, discovery and OpenAPI, client-certificate
// authentication, health checks and graceful shutdown.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hacp/hacp/internal/certreload"
	"github.com/hacp/hacp/pkg/apiserver/admission/webhook"
	"github.com/hacp/hacp/pkg/apiserver/aggregator"
	"github.com/hacp/hacp/pkg/apiserver/audit"
	"github.com/hacp/hacp/pkg/apiserver/authz"
	"github.com/hacp/hacp/pkg/apiserver/certs"
	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
	"github.com/hacp/hacp/pkg/apiserver/encryption"
	"github.com/hacp/hacp/pkg/apiserver/flowcontrol"
	"github.com/hacp/hacp/pkg/apiserver/proxy"
	"github.com/hacp/hacp/pkg/apiserver/registry/core"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Server is a running apiserver.
type Server struct {
	cfg *Config
	log *slog.Logger

	etcd     *embedetcd.Server // nil with --etcd-servers
	client   *clientv3.Client
	registry *controlplane.Registry
	authz    *authz.Authz
	// webhooks dispatches admission webhooks (nil when both webhook plugins are off).
	webhooks *webhook.Dispatcher
	// admissionPlugins are the admission plugins on, in order.
	admissionPlugins []string
	bundle           *certs.Bundle
	http             *http.Server
	listener         net.Listener
	handler          http.Handler

	authnState     *authnState
	clientCAResync time.Duration  // how often the client CA ConfigMap is checked; 0: a minute
	idleTimeout    time.Duration  // idle connections are closed after it; 0: upstream's 90 s
	background     sync.WaitGroup // goroutines that use the registry, done before etcd closes

	aggregator *aggregator.Aggregator // APIServices: local ones kept, service-backed ones proxied

	auditor      *audit.Auditor // nil without --audit-policy-file
	auditLog     *audit.LogBackend
	auditWebhook *audit.WebhookBackend

	metrics     *metrics
	metricsHTTP *http.Server
	metricsAddr string

	draining atomic.Bool
	watchMu  sync.Mutex
	stopCh   chan struct{} // closed to end the open watches
	regCtx   context.CancelFunc
	// stopMasterEndpoint takes this apiserver out of the kubernetes Service's endpoints.
	stopMasterEndpoint context.CancelFunc
	serveErr           chan error
	once               sync.Once
	started            time.Time
	connector          *proxy.Connector // serves the proxy-type subresources
	// flowControl is API Priority and Fairness (nil when off: max-in-flight limits instead).
	flowControl *flowcontrol.Controller

	// certs are the certificate files reloaded when they change.
	certs *reloadingCerts
	// certSet reloads them, one for the server's life (SIGHUP may come before Start is done).
	certSet *certreload.Set

	// encryption transforms the stored values (nil without --encryption-provider-config).
	encryption *encryption.Transformers
	// wrapStorage, set by tests before Start, wraps each built-in kind's storage.
	wrapStorage func(schema.GroupResource, storage.Interface) storage.Interface
}

// New checks cfg and prepares a server; Start brings it up.
func New(cfg *Config, log *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return &Server{cfg: cfg, log: log, stopCh: make(chan struct{}), serveErr: make(chan error, 1), metrics: newMetrics(),
		certs: &reloadingCerts{}, certSet: certreload.NewSet(log)}, nil
}

// Start starts etcd (when embedded), the registry and the HTTPS listener,
// and returns once the server accepts requests.
func (s *Server) Start(ctx context.Context) error {
	s.started = time.Now()
	if err := s.startEtcd(ctx); err != nil {
		return err
	}
	s.startupPhase("etcd")
	if err := s.startTLS(); err != nil {
		s.closeEtcd()
		return err
	}
	regCtx, cancel := context.WithCancel(context.Background())
	s.regCtx = cancel
	if err := s.startRegistry(regCtx); err != nil {
		cancel()
		s.closeEtcd()
		return err
	}
	s.startupPhase("registry")
	if err := s.startRequestChain(regCtx); err != nil {
		cancel()
		s.closeEtcd()
		return err
	}
	ln, err := s.listen()
	if err != nil {
		cancel()
		s.closeEtcd()
		s.closeAudit()
		return err
	}
	s.aggregator.Run(regCtx)
	s.background.Add(1)
	go func() { defer s.background.Done(); s.aggregator.Wait() }()
	s.background.Add(1)
	go s.keepClientCAPublished(regCtx)
	s.background.Add(1)
	go s.keepLegacyTokenTracking(regCtx)
	s.background.Add(1)
	go func() { defer s.background.Done(); s.certSet.Run(regCtx, certreload.DefaultInterval) }()
	if err := s.serveMetrics(); err != nil {
		_ = s.Shutdown()
		return err
	}
	// Every shared informer (the APIServices' was asked for with the handler) has its first
	// list before Start returns; until then /readyz fails its informer-sync check.
	if err := s.registry.Informers().WaitForSync(ctx); err != nil {
		_ = s.Shutdown()
		return err
	}
	meCtx, meCancel := context.WithCancel(regCtx)
	s.stopMasterEndpoint = meCancel
	s.registry.RunMasterEndpoint(meCtx, controlplane.MasterEndpoint{IP: s.advertiseAddress(), Port: ln.Addr().(*net.TCPAddr).Port})
	if err := s.writeKubeconfig(); err != nil {
		s.log.Warn("could not write kubeconfig", "err", err)
	}
	s.log.Info("apiserver ready", "address", "https://"+ln.Addr().String(), "took", time.Since(s.started).Round(time.Millisecond))
	return nil
}

// startupPhase logs at debug level that a phase of Start is done, and when.
func (s *Server) startupPhase(name string) {
	s.log.Debug("startup", "done", name, "at", time.Since(s.started).Round(time.Millisecond))
}

// startRegistry starts encryption at rest and the registry's stores on etcd.
func (s *Server) startRegistry(regCtx context.Context) error {
	var compaction time.Duration
	if len(s.cfg.EtcdServers) > 0 {
		compaction = s.cfg.EtcdCompactionInterval
	}
	cacheSizes, _ := ParseWatchCacheSizes(s.cfg.WatchCacheSizes) // checked by Validate
	if err := s.startEncryption(regCtx); err != nil {
		return err
	}
	s.registry = controlplane.New(s.client, controlplane.Config{Prefix: s.cfg.EtcdPrefix, BookmarkInterval: s.cfg.WatchBookmarkInterval, Logger: s.log,
		Transformers: s.encryption.For,
		WatchCache:   s.cfg.WatchCache, WatchCacheSizes: cacheSizes, DefaultWatchCacheSize: s.cfg.DefaultWatchCacheSize, WatchCacheMetrics: s.metrics.cache,
		AttemptTimeout: s.cfg.EtcdElectionTimeout, CompactionInterval: compaction, StorageMediaType: s.cfg.StorageMediaType,
		WrapStorage:   s.wrapStorage,
		ServiceRanges: core.ServiceRanges{ClusterIPRange: s.cfg.ServiceClusterIPRange, NodePortRange: s.cfg.ServiceNodePortRange}})
	return s.registry.Start(regCtx)
}

// startRequestChain starts what a request passes through before the registry: the
// connector (proxy subresources), authentication, authorization, admission and audit;
// and publishes the client CA.
func (s *Server) startRequestChain(regCtx context.Context) error {
	if err := s.setupCertReload(); err != nil {
		return err
	}
	if err := s.startConnector(); err != nil {
		return err
	}
	if err := s.setupAuthn(); err != nil {
		return err
	}
	s.startupPhase("authn")
	if err := s.startAuthz(regCtx); err != nil {
		return err
	}
	s.startupPhase("authz")
	if err := s.startAdmission(regCtx); err != nil {
		return err
	}
	s.startupPhase("admission")
	if err := s.publishClientCA(regCtx); err != nil {
		s.log.Warn("could not publish the client CA", "configmap", "kube-system/"+AuthenticationConfigMap, "err", err)
	}
	s.startupPhase("client CA")
	if err := s.startFlowControl(regCtx); err != nil {
		return err
	}
	s.startupPhase("flow control")
	return s.startAudit()
}

// listen builds the handler and serves it with TLS on the secure port.
func (s *Server) listen() (net.Listener, error) {
	h, err := s.buildHandler()
	if err != nil {
		return nil, err
	}
	s.handler = h
	if err := s.registerCertMetrics(); err != nil {
		return nil, err
	}
	s.startupPhase("handler")
	addr := net.JoinHostPort(s.cfg.BindAddress, strconv.Itoa(s.cfg.SecurePort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("apiserver: listen on %s: %w", addr, err)
	}
	tlsCfg, err := s.tlsConfig()
	if err != nil {
		ln.Close()
		return nil, err
	}
	s.listener = ln
	s.http = newSecureServer(h, tlsCfg, s.idleTimeout, s.log)
	go func() { s.serveErr <- s.http.Serve(tls.NewListener(ln, s.http.TLSConfig)) }()
	return ln, nil
}

// serveMetrics serves /metrics on the metrics address, when one is set.
func (s *Server) serveMetrics() error {
	if s.cfg.MetricsBindAddress == "" {
		return nil
	}
	ml, err := net.Listen("tcp", s.cfg.MetricsBindAddress)
	if err != nil {
		return fmt.Errorf("apiserver: metrics listener on %s: %w", s.cfg.MetricsBindAddress, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.Handler())
	s.metricsHTTP = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.metricsAddr = ml.Addr().String()
	go func() { _ = s.metricsHTTP.Serve(ml) }()
	return nil
}

// advertiseAddress is the address other apiservers and pods know this one by.
func (s *Server) advertiseAddress() string {
	if s.cfg.AdvertiseAddress != "" {
		return s.cfg.AdvertiseAddress
	}
	if ip := net.ParseIP(s.cfg.BindAddress); ip != nil && !ip.IsUnspecified() {
		return ip.String()
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	return "127.0.0.1"
}

func (s *Server) startAuthz(ctx context.Context) error {
	modes, err := authz.ParseModes(s.cfg.AuthorizationMode)
	if err != nil {
		return err
	}
	if s.authz, err = authz.New(authz.Config{Modes: modes, Registry: s.registry, Informers: s.registry.Informers(), Logger: s.log}); err != nil {
		return err
	}
	return s.authz.Start(ctx)
}

// Authz returns the authorizer.
func (s *Server) Authz() *authz.Authz { return s.authz }

// Addr is the listening address (useful with port 0).
func (s *Server) Addr() string { return s.listener.Addr().String() }

// MetricsAddr is the address /metrics is served on, or "".
func (s *Server) MetricsAddr() string { return s.metricsAddr }

// Listener is the HTTPS listener.
func (s *Server) Listener() net.Listener { return s.listener }

// URL is https://Addr.
func (s *Server) URL() string { return "https://" + s.Addr() }

// Certs returns the certificate bundle in use (nil with external certificates).
func (s *Server) Certs() *certs.Bundle { return s.bundle }

// Registry returns the resource registry.
func (s *Server) Registry() *controlplane.Registry { return s.registry }

// EtcdClient returns the client the server uses.
func (s *Server) EtcdClient() *clientv3.Client { return s.client }

// EtcdClientURL is the embedded etcd member's client URL ("" with --etcd-servers).
func (s *Server) EtcdClientURL() string {
	if s.etcd == nil {
		return ""
	}
	return s.etcd.ClientURL()
}

// Handler returns the full handler chain (tests).
func (s *Server) Handler() http.Handler { return s.handler }

// KubeconfigPath is where the admin kubeconfig is written, or "".
func (s *Server) KubeconfigPath() string {
	switch s.cfg.Kubeconfig {
	case "-":
		return ""
	case "":
		return filepath.Join(s.cfg.DataDir, "admin.kubeconfig")
	}
	return s.cfg.Kubeconfig
}

func (s *Server) writeKubeconfig() error {
	p := s.KubeconfigPath()
	if p == "" || s.bundle == nil {
		return nil
	}
	server := s.cfg.AdvertiseURL
	if server == "" {
		server = "https://" + s.listener.Addr().String()
	}
	return certs.WriteKubeconfig(p, server, s.bundle)
}

func (s *Server) startEtcd(ctx context.Context) error {
	if len(s.cfg.EtcdServers) > 0 {
		var tlsCfg *tls.Config
		if s.cfg.EtcdCertFile != "" || s.cfg.EtcdCAFile != "" {
			info := transport.TLSInfo{CertFile: s.cfg.EtcdCertFile, KeyFile: s.cfg.EtcdKeyFile, TrustedCAFile: s.cfg.EtcdCAFile}
			c, err := info.ClientConfig()
			if err != nil {
				return fmt.Errorf("apiserver: etcd client TLS: %w", err)
			}
			tlsCfg = c
		}
		c, err := clientv3.New(clientv3.Config{Endpoints: s.cfg.EtcdServers, DialTimeout: 5 * time.Second, TLS: tlsCfg, Logger: zap.NewNop()})
		if err != nil {
			return fmt.Errorf("apiserver: connect to etcd %v: %w", s.cfg.EtcdServers, err)
		}
		if err := waitForEtcd(ctx, c, tlsCfg, s.cfg.EtcdServers, etcdDialTimeout, s.log); err != nil {
			c.Close()
			return err
		}
		s.client = c
		return nil
	}
	peer := s.cfg.EtcdListenPeerURL
	heartbeat, election := s.cfg.EtcdHeartbeatInterval, s.cfg.EtcdElectionTimeout
	if s.cfg.EtcdInitialCluster == "" && heartbeat == defaultEtcdHeartbeat && election == defaultEtcdElection {
		// A lone member has no peer to disturb with a short timeout, and every restart waits
		// for one before it elects itself: up to 0.5 s of the default, ~0.1 s of this.
		heartbeat, election = loneEtcdHeartbeat, loneEtcdElection
	}
	clientTLS, err := s.embeddedEtcdTLS()
	if err != nil {
		return err
	}
	e, err := embedetcd.Start(embedetcd.Config{
		Name:                    s.cfg.EtcdName,
		DataDir:                 filepath.Join(s.cfg.DataDir, "etcd"),
		ClientURL:               s.cfg.EtcdListenClientURL,
		CertFile:                clientTLS.CertFile,
		KeyFile:                 clientTLS.KeyFile,
		TrustedCAFile:           clientTLS.TrustedCAFile,
		ClientTLS:               clientTLS.ClientTLS,
		PeerURL:                 peer,
		AdvertisePeerURL:        s.cfg.EtcdInitialAdvertisePeerURL,
		InitialCluster:          s.cfg.EtcdInitialCluster,
		InitialClusterState:     s.cfg.EtcdInitialClusterState,
		PeerCertFile:            s.cfg.EtcdPeerCertFile,
		PeerKeyFile:             s.cfg.EtcdPeerKeyFile,
		PeerTrustedCAFile:       s.cfg.EtcdPeerTrustedCAFile,
		PeerClientCertAuth:      s.cfg.EtcdPeerClientCertAuth,
		UnsafeNoFsync:           s.cfg.EtcdUnsafeNoFsync,
		AutoCompactionRetention: s.cfg.EtcdAutoCompactionRetention,
		HeartbeatInterval:       heartbeat,
		ElectionTimeout:         election,
		SnapshotCatchUpEntries:  s.cfg.EtcdSnapshotCatchUpEntries,
		LogLevel:                "off",
	})
	if err != nil {
		return err
	}
	s.etcd = e
	c, err := e.LocalClient()
	if err != nil {
		e.Close()
		return err
	}
	s.client = c
	s.log.Info("embedded etcd started", "name", s.cfg.EtcdName, "client-url", e.ClientURL(), "data-dir", filepath.Join(s.cfg.DataDir, "etcd"))
	return nil
}

func (s *Server) closeEtcd() {
	if s.client != nil {
		s.client.Close()
	}
	if s.etcd != nil {
		s.etcd.Close()
	}
	s.encryption.Close() // the KMS plugins' connections serve the storage alone
}

// startEncryption builds the value transformers of --encryption-provider-config (checked by
// Validate) and dials its KMS plugins; they live until ctx ends or closeEtcd.
func (s *Server) startEncryption(ctx context.Context) error {
	if s.cfg.EncryptionProviderConfig == "" {
		return nil
	}
	c, err := encryption.Load(s.cfg.EncryptionProviderConfig)
	if err != nil {
		return fmt.Errorf("apiserver: --encryption-provider-config: %w", err)
	}
	if s.encryption, err = encryption.Build(ctx, c, s.log); err != nil {
		return fmt.Errorf("apiserver: --encryption-provider-config %s: %w", s.cfg.EncryptionProviderConfig, err)
	}
	s.log.Info("encryption at rest on", "config", s.cfg.EncryptionProviderConfig, "resources", len(c.Resources))
	return nil
}

func (s *Server) startTLS() error {
	if s.cfg.TLSCertFile != "" {
		return nil
	}
	dir := s.certDir()
	hosts := append([]string{}, s.cfg.TLSSANs...)
	if ip := net.ParseIP(s.cfg.BindAddress); ip != nil && !ip.IsUnspecified() {
		hosts = append(hosts, s.cfg.BindAddress)
	}
	if h, err := os.Hostname(); err == nil {
		hosts = append(hosts, h)
	}
	b, err := certs.Ensure(dir, certs.Options{Hosts: hosts})
	if err != nil {
		return err
	}
	s.bundle = b
	return nil
}

func (s *Server) tlsConfig() (*tls.Config, error) {
	var cfg *tls.Config
	if s.bundle != nil && s.cfg.TLSCertFile == "" && s.cfg.ClientCAFile == "" {
		cfg = s.bundle.ServerTLSConfig()
	} else {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12, ClientAuth: tls.VerifyClientCertIfGiven, NextProtos: []string{"h2", "http/1.1"}}
		if s.cfg.TLSCertFile == "" && s.bundle != nil {
			cfg.Certificates = []tls.Certificate{s.bundle.ServingTLS}
		}
	}
	// The handshake accepts client certificates of the client CA and of front proxies;
	// authentication tells them apart (authn.Authenticator.ClientCAs, RequestHeader). The
	// serving pair (--tls-cert-file) and both CAs are the ones in use at each handshake.
	if err := s.dynamicTLS(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Shutdown drains: readiness fails first, then after ShutdownDelay the
// listener closes, watches end and in-flight requests get ShutdownTimeout to finish.
func (s *Server) Shutdown() error {
	var err error
	s.once.Do(func() {
		s.draining.Store(true)
		if s.stopMasterEndpoint != nil {
			s.stopMasterEndpoint() // out of the kubernetes Service's endpoints first, as upstream
		}
		s.log.Info("shutting down: not ready any more", "delay", s.cfg.ShutdownDelay)
		time.Sleep(s.cfg.ShutdownDelay)
		s.CloseWatches()
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		defer cancel()
		if s.http != nil {
			err = s.http.Shutdown(ctx)
		}
		if s.metricsHTTP != nil {
			_ = s.metricsHTTP.Close()
		}
		if s.regCtx != nil {
			s.regCtx()
			s.registry.Wait()
			s.background.Wait()
			if s.authz != nil {
				s.authz.Wait()
			}
		}
		s.closeEtcd()
		s.closeAudit()
		s.log.Info("apiserver stopped")
	})
	return err
}

func (s *Server) watchStop() <-chan struct{} {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	return s.stopCh
}

// CloseWatches ends every open watch cleanly; clients re-watch from the
// last resourceVersion they saw (and relist if it was compacted meanwhile).
func (s *Server) CloseWatches() {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	select {
	case <-s.stopCh:
	default:
		close(s.stopCh)
	}
	if !s.draining.Load() {
		s.stopCh = make(chan struct{})
	}
}

// Run starts the server, serves until ctx ends, then shuts down.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	return s.Serve(ctx)
}

// Serve waits for ctx to end or for the server or its embedded etcd to fail,
// then shuts down. Call it after Start.
func (s *Server) Serve(ctx context.Context) error {
	var etcdErr <-chan error
	if s.etcd != nil {
		etcdErr = s.etcd.Err()
	}
	select {
	case <-ctx.Done():
	case err := <-s.serveErr:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = s.Shutdown()
			return fmt.Errorf("apiserver: serve: %w", err)
		}
	case err := <-etcdErr:
		_ = s.Shutdown()
		return fmt.Errorf("apiserver: embedded etcd failed: %w", err)
	}
	return s.Shutdown()
}
