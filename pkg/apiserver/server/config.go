package server

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/audit"
	"github.com/hacp/hacp/pkg/apiserver/authz"
	"github.com/hacp/hacp/pkg/apiserver/encryption"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/registry/core"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	"github.com/hacp/hacp/pkg/config"
)

// Config is the apiserver's configuration; yaml keys equal the flag names.
type Config struct {
	BindAddress     string        `yaml:"bind-address"`
	SecurePort      int           `yaml:"secure-port"`
	DataDir         string        `yaml:"data-dir"`
	CertDir         string        `yaml:"cert-dir"`
	TLSSANs         []string      `yaml:"tls-san"`
	TLSCertFile     string        `yaml:"tls-cert-file"`
	TLSKeyFile      string        `yaml:"tls-private-key-file"`
	ClientCAFile    string        `yaml:"client-ca-file"`
	Kubeconfig      string        `yaml:"write-kubeconfig"`
	AdvertiseURL    string        `yaml:"advertise-url"`
	ShutdownDelay   time.Duration `yaml:"shutdown-delay"`
	ShutdownTimeout time.Duration `yaml:"shutdown-timeout"`
	LogLevel        string        `yaml:"log-level"`

	EtcdServers  []string `yaml:"etcd-servers"`
	EtcdCAFile   string   `yaml:"etcd-cafile"`
	EtcdCertFile string   `yaml:"etcd-certfile"`
	EtcdKeyFile  string   `yaml:"etcd-keyfile"`
	EtcdPrefix   string   `yaml:"etcd-prefix"`
	// StorageMediaType is how objects are written to etcd (kube-apiserver's flag).
	StorageMediaType string `yaml:"storage-media-type"`
	// EncryptionProviderConfig is an EncryptionConfiguration file (kube-apiserver's flag):
	// which resources are encrypted at rest, by which providers and keys.
	EncryptionProviderConfig string `yaml:"encryption-provider-config"`

	EtcdName                    string        `yaml:"etcd-name"`
	EtcdListenClientURL         string        `yaml:"etcd-listen-client-url"`
	EtcdListenPeerURL           string        `yaml:"etcd-listen-peer-urls"`
	EtcdInitialAdvertisePeerURL string        `yaml:"etcd-initial-advertise-peer-urls"`
	EtcdInitialCluster          string        `yaml:"etcd-initial-cluster"`
	EtcdInitialClusterState     string        `yaml:"etcd-initial-cluster-state"`
	EtcdPeerCertFile            string        `yaml:"etcd-peer-cert-file"`
	EtcdPeerKeyFile             string        `yaml:"etcd-peer-key-file"`
	EtcdPeerTrustedCAFile       string        `yaml:"etcd-peer-trusted-ca-file"`
	EtcdPeerClientCertAuth      bool          `yaml:"etcd-peer-client-cert-auth"`
	EtcdUnsafeNoFsync           bool          `yaml:"etcd-unsafe-no-fsync"`
	EtcdAutoCompactionRetention string        `yaml:"etcd-auto-compaction-retention"`
	EtcdHeartbeatInterval       time.Duration `yaml:"etcd-heartbeat-interval"`
	EtcdElectionTimeout         time.Duration `yaml:"etcd-election-timeout"`
	// EtcdSnapshotCatchUpEntries: the applied Raft entries the embedded member keeps in
	// memory for a lagging follower (etcd's --snapshot-catchup-entries; 0: etcd's 5000).
	EtcdSnapshotCatchUpEntries uint64        `yaml:"etcd-snapshot-catchup-entries"`
	WatchBookmarkInterval      time.Duration `yaml:"watch-bookmark-interval"`
	EtcdCompactionInterval     time.Duration `yaml:"etcd-compaction-interval"`
	// The embedded member's client URL TLS (etcd's --cert-file, --key-file, --trusted-ca-file);
	// generated under cert-dir when not given (see certs.EnsureEtcd).
	EtcdMemberCertFile string `yaml:"etcd-cert-file"`
	EtcdMemberKeyFile  string `yaml:"etcd-key-file"`
	EtcdTrustedCAFile  string `yaml:"etcd-trusted-ca-file"`
	// EtcdAllowInsecureClient lets etcd-listen-client-url be plain http://.
	EtcdAllowInsecureClient bool `yaml:"etcd-allow-insecure-client"`
	// The watch cache (kube-apiserver's flags).
	WatchCache            bool     `yaml:"watch-cache"`
	DefaultWatchCacheSize int      `yaml:"default-watch-cache-size"`
	WatchCacheSizes       []string `yaml:"watch-cache-sizes"`

	MaxRequestsInflight         int `yaml:"max-requests-inflight"`
	MaxMutatingRequestsInflight int `yaml:"max-mutating-requests-inflight"`
	// EnablePriorityAndFairness: API Priority and Fairness divides the two limits' sum among
	// the priority levels instead of the max-in-flight limits (kube-apiserver's flag).
	EnablePriorityAndFairness bool          `yaml:"enable-priority-and-fairness"`
	RequestTimeout            time.Duration `yaml:"request-timeout"`
	MetricsBindAddress        string        `yaml:"metrics-bind-address"`
	Profiling                 bool          `yaml:"profiling"`

	DefaultNotReadyTolerationSeconds    int64 `yaml:"default-not-ready-toleration-seconds"`
	DefaultUnreachableTolerationSeconds int64 `yaml:"default-unreachable-toleration-seconds"`
	ContentionProfiling                 bool  `yaml:"contention-profiling"`

	AdvertiseAddress      string `yaml:"advertise-address"`
	ServiceClusterIPRange string `yaml:"service-cluster-ip-range"`
	ServiceNodePortRange  string `yaml:"service-node-port-range"`
	// Authentication (pkg/apiserver/authn).
	AnonymousAuth                    bool          `yaml:"anonymous-auth"`
	TokenAuthFile                    string        `yaml:"token-auth-file"`
	ServiceAccountSigningKeyFile     string        `yaml:"service-account-signing-key-file"`
	ServiceAccountKeyFiles           []string      `yaml:"service-account-key-file"`
	ServiceAccountIssuers            []string      `yaml:"service-account-issuer"`
	ServiceAccountJWKSURI            string        `yaml:"service-account-jwks-uri"`
	ServiceAccountMaxTokenExpiration time.Duration `yaml:"service-account-max-token-expiration"`
	APIAudiences                     []string      `yaml:"api-audiences"`
	AuthorizationMode                string        `yaml:"authorization-mode"`
	// Request-header (front-proxy) authentication and the proxy's own client certificate.
	RequestHeaderClientCAFile       string   `yaml:"requestheader-client-ca-file"`
	RequestHeaderAllowedNames       []string `yaml:"requestheader-allowed-names"`
	RequestHeaderUsernameHeaders    []string `yaml:"requestheader-username-headers"`
	RequestHeaderGroupHeaders       []string `yaml:"requestheader-group-headers"`
	RequestHeaderExtraHeadersPrefix []string `yaml:"requestheader-extra-headers-prefix"`
	ProxyClientCertFile             string   `yaml:"proxy-client-cert-file"`
	ProxyClientKeyFile              string   `yaml:"proxy-client-key-file"`
	// Admission (pkg/apiserver/admission).
	EnableAdmissionPlugins  []string `yaml:"enable-admission-plugins"`
	DisableAdmissionPlugins []string `yaml:"disable-admission-plugins"`
	// AdmissionControlConfigFile is an AdmissionConfiguration; hacp reads PodSecurity's.
	AdmissionControlConfigFile string `yaml:"admission-control-config-file"`
	// Audit (pkg/apiserver/audit).
	AuditConfig `yaml:",inline"`
	// Kubelets, for the proxy-type subresources (pkg/apiserver/proxy).
	KubeletConfig `yaml:",inline"`
}

// The embedded etcd's Raft timing: half etcd's defaults, for masters on one LAN; a lone
// member left at the defaults uses the lone ones (see Server.startEtcd).
const (
	defaultEtcdHeartbeat = 50 * time.Millisecond
	defaultEtcdElection  = 500 * time.Millisecond
	loneEtcdHeartbeat    = 20 * time.Millisecond
	loneEtcdElection     = 100 * time.Millisecond
	// defaultEtcdCatchUpEntries is a fifth of etcd's 5000, which etcd sizes for half a
	// second at its peak of 10000 writes/s: a control plane writes hundreds a second at
	// most, and 1000 entries still cover seconds of a follower's lag. Each entry held is
	// a write's bytes (a Pod, a Node status) in every member's heap.
	defaultEtcdCatchUpEntries = 1000
)

// DefaultConfig is what `apiserver` runs with when nothing is set.
func DefaultConfig() *Config {
	return &Config{
		BindAddress:                         "127.0.0.1",
		SecurePort:                          6443,
		DataDir:                             "_data",
		ShutdownDelay:                       time.Second,
		ShutdownTimeout:                     30 * time.Second,
		LogLevel:                            "info",
		EtcdPrefix:                          "/registry",
		StorageMediaType:                    registry.StorageProtobuf,
		EtcdName:                            "default",
		EtcdListenClientURL:                 "https://127.0.0.1:2379",
		EtcdListenPeerURL:                   "http://127.0.0.1:2380",
		EtcdInitialClusterState:             "new",
		EtcdAutoCompactionRetention:         "5m",
		EtcdHeartbeatInterval:               defaultEtcdHeartbeat,
		EtcdElectionTimeout:                 defaultEtcdElection,
		EtcdSnapshotCatchUpEntries:          defaultEtcdCatchUpEntries,
		WatchBookmarkInterval:               time.Minute,
		EtcdCompactionInterval:              5 * time.Minute,
		WatchCache:                          true,
		DefaultWatchCacheSize:               storage.DefaultHistoryCapacity,
		MaxRequestsInflight:                 400,
		MaxMutatingRequestsInflight:         200,
		EnablePriorityAndFairness:           true,
		RequestTimeout:                      time.Minute,
		ServiceClusterIPRange:               core.DefaultServiceClusterIPRange,
		ServiceNodePortRange:                core.DefaultServiceNodePortRange,
		AnonymousAuth:                       true,
		Profiling:                           true,
		DefaultNotReadyTolerationSeconds:    300,
		DefaultUnreachableTolerationSeconds: 300,
		ServiceAccountIssuers:               []string{DefaultServiceAccountIssuer},
		AuthorizationMode:                   "Node,RBAC",
		AuditConfig: AuditConfig{AuditLogFormat: "json", AuditLogMode: "blocking", AuditWebhookMode: audit.ModeBatch,
			AuditWebhookBatchBufferSize: audit.DefaultWebhookBatchBufferSize, AuditWebhookBatchMaxSize: audit.DefaultWebhookBatchMaxSize,
			AuditWebhookBatchMaxWait: audit.DefaultWebhookBatchMaxWait, AuditWebhookInitialBackoff: audit.DefaultWebhookInitialBackoff,
			AuditLogVersion: audit.Version, AuditWebhookVersion: audit.Version, AuditLogBatchBufferSize: audit.DefaultLogBatchBufferSize,
			AuditLogTruncateMaxEventSize: audit.DefaultTruncateMaxEventSize, AuditLogTruncateMaxBatchSize: audit.DefaultTruncateMaxBatchSize,
			AuditWebhookTruncateMaxEventSize: audit.DefaultTruncateMaxEventSize, AuditWebhookTruncateMaxBatchSize: audit.DefaultTruncateMaxBatchSize,
			AuditWebhookBatchThrottleEnable: true, AuditWebhookBatchThrottleQPS: audit.DefaultWebhookThrottleQPS, AuditWebhookBatchThrottleBurst: audit.DefaultWebhookThrottleBurst},
		KubeletConfig: defaultKubeletConfig(),
	}
}

// AddFlags binds every setting to a flag of the same name as its yaml key.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.BindAddress, "bind-address", c.BindAddress, "IP `address` to serve HTTPS on")
	fs.IntVar(&c.SecurePort, "secure-port", c.SecurePort, "HTTPS `port` (0 picks a free one)")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "`directory` for etcd data (data-dir/etcd), generated certificates (data-dir/pki) and admin.kubeconfig")
	fs.StringVar(&c.CertDir, "cert-dir", c.CertDir, "`directory` for the generated CA, serving and admin certificates (default data-dir/pki)")
	config.StringList(fs, &c.TLSSANs, "tls-san", "extra IP or DNS subject alternative `name` for the serving certificate (repeatable; 127.0.0.1 and localhost are always in)")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", c.TLSCertFile, "serving certificate `file` (instead of the generated one; needs --tls-private-key-file)")
	fs.StringVar(&c.TLSKeyFile, "tls-private-key-file", c.TLSKeyFile, "serving key `file`")
	fs.StringVar(&c.ClientCAFile, "client-ca-file", c.ClientCAFile, "CA bundle `file` for client certificates (instead of the generated CA)")
	fs.StringVar(&c.Kubeconfig, "write-kubeconfig", c.Kubeconfig, "write an admin kubeconfig to this `file` (default data-dir/admin.kubeconfig; \"-\" to skip)")
	fs.StringVar(&c.AdvertiseURL, "advertise-url", c.AdvertiseURL, "server `URL` written into the kubeconfig (default https://bind-address:port)")
	fs.DurationVar(&c.ShutdownDelay, "shutdown-delay", c.ShutdownDelay, "on SIGTERM, fail /readyz and /healthz for this `duration` before closing the listener")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long in-flight requests may take to finish on shutdown")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")

	config.StringList(fs, &c.EtcdServers, "etcd-servers", "external etcd client `URL` (repeatable); without it an embedded etcd member runs in this process")
	fs.StringVar(&c.EtcdCAFile, "etcd-cafile", c.EtcdCAFile, "CA `file` the apiserver trusts for etcd's serving certificate: of --etcd-servers, or of the embedded member with --etcd-cert-file (default there: --etcd-trusted-ca-file)")
	fs.StringVar(&c.EtcdCertFile, "etcd-certfile", c.EtcdCertFile, "client certificate `file` the apiserver presents to etcd: to --etcd-servers, or to the embedded member with --etcd-cert-file (default: the generated cert-dir/apiserver-etcd-client.crt)")
	fs.StringVar(&c.EtcdKeyFile, "etcd-keyfile", c.EtcdKeyFile, "key `file` of --etcd-certfile")
	fs.StringVar(&c.EtcdPrefix, "etcd-prefix", c.EtcdPrefix, "key `prefix` of every object in etcd")
	fs.StringVar(&c.StorageMediaType, "storage-media-type", c.StorageMediaType, "media `type` objects are written to etcd in: "+strings.Join(registry.StorageMediaTypes, ", ")+" (kube-apiserver's flag; protobuf is what kube-apiserver writes). Values in any of them are always read, so the setting can change on a running cluster")
	fs.StringVar(&c.EncryptionProviderConfig, "encryption-provider-config", c.EncryptionProviderConfig, "EncryptionConfiguration `file` (apiserver.config.k8s.io/v1, kube-apiserver's format and flag): the providers (identity, aescbc, aesgcm, secretbox, KMS v2) and keys that encrypt each resource's values in etcd; the first provider writes, all read")

	fs.StringVar(&c.EtcdName, "etcd-name", c.EtcdName, "embedded etcd member `name`")
	fs.StringVar(&c.EtcdListenClientURL, "etcd-listen-client-url", c.EtcdListenClientURL, "embedded etcd client `URL` (keep it on 127.0.0.1; etcdctl uses it): https with client certificates required; http:// only with --etcd-allow-insecure-client")
	fs.StringVar(&c.EtcdListenPeerURL, "etcd-listen-peer-urls", c.EtcdListenPeerURL, "embedded etcd peer `URL` to listen on")
	fs.StringVar(&c.EtcdInitialAdvertisePeerURL, "etcd-initial-advertise-peer-urls", c.EtcdInitialAdvertisePeerURL, "peer `URL` other members use (default: --etcd-listen-peer-urls)")
	fs.StringVar(&c.EtcdInitialCluster, "etcd-initial-cluster", c.EtcdInitialCluster, "`name=peerURL,...` of every member when bootstrapping a cluster (default: this member alone)")
	fs.StringVar(&c.EtcdInitialClusterState, "etcd-initial-cluster-state", c.EtcdInitialClusterState, "new or existing")
	fs.StringVar(&c.EtcdPeerCertFile, "etcd-peer-cert-file", c.EtcdPeerCertFile, "peer TLS certificate `file`")
	fs.StringVar(&c.EtcdPeerKeyFile, "etcd-peer-key-file", c.EtcdPeerKeyFile, "peer TLS key `file`")
	fs.StringVar(&c.EtcdPeerTrustedCAFile, "etcd-peer-trusted-ca-file", c.EtcdPeerTrustedCAFile, "peer TLS CA `file`")
	fs.BoolVar(&c.EtcdPeerClientCertAuth, "etcd-peer-client-cert-auth", c.EtcdPeerClientCertAuth, "require peer client certificates")
	fs.StringVar(&c.EtcdMemberCertFile, "etcd-cert-file", c.EtcdMemberCertFile, "embedded etcd member's serving certificate `file` for its client URL (etcd's --cert-file; default: generated cert-dir/etcd/server.crt). With it give --etcd-key-file, --etcd-trusted-ca-file, --etcd-certfile and --etcd-keyfile")
	fs.StringVar(&c.EtcdMemberKeyFile, "etcd-key-file", c.EtcdMemberKeyFile, "key `file` of --etcd-cert-file (etcd's --key-file)")
	fs.StringVar(&c.EtcdTrustedCAFile, "etcd-trusted-ca-file", c.EtcdTrustedCAFile, "CA `file` every client of the embedded member's client URL must present a certificate of (etcd's --trusted-ca-file with --client-cert-auth; default: generated cert-dir/etcd/ca.crt)")
	fs.BoolVar(&c.EtcdAllowInsecureClient, "etcd-allow-insecure-client", c.EtcdAllowInsecureClient, "allow a plain http:// --etcd-listen-client-url. Don't: without TLS and client certificates any process on the machine reads and writes every object in etcd, Secrets included, past authentication, RBAC and audit")
	fs.BoolVar(&c.EtcdUnsafeNoFsync, "etcd-unsafe-no-fsync", c.EtcdUnsafeNoFsync, "disable fsync in the embedded etcd (tests and benchmarks only: loses data on power loss)")
	fs.DurationVar(&c.EtcdHeartbeatInterval, "etcd-heartbeat-interval", c.EtcdHeartbeatInterval, "embedded etcd Raft heartbeat `interval` (etcd's --heartbeat-interval; half etcd's default, for masters on one LAN)")
	fs.DurationVar(&c.EtcdElectionTimeout, "etcd-election-timeout", c.EtcdElectionTimeout, "embedded etcd Raft election `timeout`, at least 5 heartbeats (etcd's --election-timeout; half etcd's default, for masters on one LAN); a leader that dies with its master costs about this much write time. A lone member (no --etcd-initial-cluster) left at the default timing ticks every 20ms with a 100ms timeout instead: it has no peer to disturb, and restarts elect it within 0.1s. It also bounds one attempt of an etcd write, which is retried (exactly once in effect) when it runs out or the leader changes")
	fs.Uint64Var(&c.EtcdSnapshotCatchUpEntries, "etcd-snapshot-catchup-entries", c.EtcdSnapshotCatchUpEntries, "applied Raft `entries` the embedded etcd member keeps in memory for a lagging follower (etcd's --snapshot-catchup-entries; 0: etcd's default, 5000); a follower further behind, such as a member back from a restart, gets the whole database as a snapshot instead")
	fs.StringVar(&c.EtcdAutoCompactionRetention, "etcd-auto-compaction-retention", c.EtcdAutoCompactionRetention, "embedded etcd periodic compaction retention (e.g. 5m; 0 disables)")
	fs.DurationVar(&c.EtcdCompactionInterval, "etcd-compaction-interval", c.EtcdCompactionInterval, "with --etcd-servers, compact etcd's history this often (kube-apiserver's flag and default), in turns with the other apiservers on that etcd; 0 disables (an embedded member compacts itself: --etcd-auto-compaction-retention)")
	fs.BoolVar(&c.WatchCache, "watch-cache", c.WatchCache, "serve lists, watches and gets that allow it from a watch cache per resource, fed by one etcd watch each (kube-apiserver's flag); false reads etcd for every request")
	fs.IntVar(&c.DefaultWatchCacheSize, "default-watch-cache-size", c.DefaultWatchCacheSize, "events each watch cache keeps for watches that start at an older resourceVersion (older ones get 410 Expired); events older than 5 minutes are dropped too")
	config.StringList(fs, &c.WatchCacheSizes, "watch-cache-sizes", "`resource[.group]#size` of one resource's watch cache history, e.g. pods#5000 (comma-separated or repeatable; size 0 turns that resource's cache off)")
	fs.DurationVar(&c.WatchBookmarkInterval, "watch-bookmark-interval", c.WatchBookmarkInterval, "how often watches that allow bookmarks get one")
	fs.IntVar(&c.MaxRequestsInflight, "max-requests-inflight", c.MaxRequestsInflight, "read-only requests served at once before 429 (0 = no limit; watches not counted)")
	fs.IntVar(&c.MaxMutatingRequestsInflight, "max-mutating-requests-inflight", c.MaxMutatingRequestsInflight, "mutating requests served at once before 429 (0 = no limit)")
	fs.BoolVar(&c.EnablePriorityAndFairness, "enable-priority-and-fairness", c.EnablePriorityAndFairness, "API Priority and Fairness: requests are classified by the FlowSchemas and queued fairly at their PriorityLevelConfiguration's share of --max-requests-inflight + --max-mutating-requests-inflight seats (kube-apiserver's flag; false: the two max-in-flight limits apply; with both limits 0 nothing is limited)")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "longest time a non-watch request may take before 504")
	fs.StringVar(&c.AdvertiseAddress, "advertise-address", c.AdvertiseAddress, "IP `address` the kubernetes Service's endpoints list for this apiserver (default: --bind-address, or the first non-loopback IPv4 address when that is 0.0.0.0)")
	fs.StringVar(&c.ServiceClusterIPRange, "service-cluster-ip-range", c.ServiceClusterIPRange, "`CIDR` Service ClusterIPs are given from (the first address goes to the kubernetes Service)")
	fs.StringVar(&c.ServiceNodePortRange, "service-node-port-range", c.ServiceNodePortRange, "`range` of NodePorts, first-last")

	fs.BoolVar(&c.AnonymousAuth, "anonymous-auth", c.AnonymousAuth, "requests without credentials are user system:anonymous (group system:unauthenticated); when false they get 401. Bad credentials are 401 either way")
	fs.StringVar(&c.TokenAuthFile, "token-auth-file", c.TokenAuthFile, "static bearer tokens: CSV `file` of token,user,uid[,\"group1,group2\"] lines")
	fs.StringVar(&c.ServiceAccountSigningKeyFile, "service-account-signing-key-file", c.ServiceAccountSigningKeyFile, "PEM RSA or ECDSA private key `file` that signs ServiceAccount tokens (TokenRequest); default with generated certificates: cert-dir/sa.key")
	config.StringList(fs, &c.ServiceAccountKeyFiles, "service-account-key-file", "PEM `file` of public keys (or certificates, or private keys) that verify ServiceAccount tokens (repeatable: list the old and the new key to rotate); default: the signing key")
	config.StringList(fs, &c.ServiceAccountIssuers, "service-account-issuer", "ServiceAccount token issuer (`iss`; repeatable: the first issues, all are accepted)")
	fs.StringVar(&c.ServiceAccountJWKSURI, "service-account-jwks-uri", c.ServiceAccountJWKSURI, "jwks_uri `URL` in /.well-known/openid-configuration (default: the issuer's host with /openid/v1/jwks)")
	fs.DurationVar(&c.ServiceAccountMaxTokenExpiration, "service-account-max-token-expiration", c.ServiceAccountMaxTokenExpiration, "longest `duration` of a TokenRequest token (0: what the request asks; else 1h to 2^32s)")
	config.StringList(fs, &c.APIAudiences, "api-audiences", "`audience`s a bearer token must be for (repeatable; default: the issuers)")
	fs.Int64Var(&c.DefaultNotReadyTolerationSeconds, "default-not-ready-toleration-seconds", c.DefaultNotReadyTolerationSeconds, "`seconds` a pod tolerates the node.kubernetes.io/not-ready:NoExecute taint when it says nothing of it (DefaultTolerationSeconds admission)")
	fs.Int64Var(&c.DefaultUnreachableTolerationSeconds, "default-unreachable-toleration-seconds", c.DefaultUnreachableTolerationSeconds, "`seconds` a pod tolerates the node.kubernetes.io/unreachable:NoExecute taint when it says nothing of it (DefaultTolerationSeconds admission)")
	fs.BoolVar(&c.Profiling, "profiling", c.Profiling, "serve Go's profiles under /debug/pprof/ on the secure port, to users allowed the non-resource URL (cluster-admin), as kube-apiserver")
	fs.BoolVar(&c.ContentionProfiling, "contention-profiling", c.ContentionProfiling, "with --profiling, also record block and mutex contention (costs CPU)")
	fs.StringVar(&c.MetricsBindAddress, "metrics-bind-address", c.MetricsBindAddress, "also serve Prometheus /metrics over plain HTTP, without authentication, on this `host:port` (off when empty; the secure port always serves /metrics to users RBAC allows, e.g. group system:monitoring)")
	fs.StringVar(&c.RequestHeaderClientCAFile, "requestheader-client-ca-file", c.RequestHeaderClientCAFile, "CA bundle `file` of front proxies: a client certificate from it (with an allowed name) authenticates as the user its X-Remote-* headers name (default with generated certificates: cert-dir/front-proxy-ca.crt)")
	config.StringList(fs, &c.RequestHeaderAllowedNames, "requestheader-allowed-names", "common `name` a front proxy's certificate must have (repeatable; empty: any from the CA; default with generated certificates: front-proxy-client)")
	config.StringList(fs, &c.RequestHeaderUsernameHeaders, "requestheader-username-headers", "`header` with the user's name (repeatable, first non-empty wins; default X-Remote-User)")
	config.StringList(fs, &c.RequestHeaderGroupHeaders, "requestheader-group-headers", "`header` with the user's groups (repeatable; default X-Remote-Group)")
	config.StringList(fs, &c.RequestHeaderExtraHeadersPrefix, "requestheader-extra-headers-prefix", "`prefix` of headers with the user's extra attributes (repeatable; default X-Remote-Extra-)")
	fs.StringVar(&c.ProxyClientCertFile, "proxy-client-cert-file", c.ProxyClientCertFile, "client certificate `file` the apiserver presents when it proxies to extension apiservers (default with generated certificates: cert-dir/front-proxy-client.crt)")
	fs.StringVar(&c.ProxyClientKeyFile, "proxy-client-key-file", c.ProxyClientKeyFile, "key `file` of --proxy-client-cert-file")
	c.AuditConfig.addFlags(fs)
	c.KubeletConfig.addFlags(fs)
	fs.StringVar(&c.AuthorizationMode, "authorization-mode", c.AuthorizationMode, "comma-separated `modes` asked in order after system:masters: Node, RBAC, AlwaysAllow, AlwaysDeny")
	config.StringList(fs, &c.EnableAdmissionPlugins, "enable-admission-plugins", "admission `plugins` to run besides the default ones (comma-separated or repeatable; they run in upstream's fixed order). Default on: "+strings.Join(DefaultAdmissionPlugins(), ", ")+". Also: "+strings.Join(OptionalAdmissionPlugins(), ", "))
	config.StringList(fs, &c.DisableAdmissionPlugins, "disable-admission-plugins", "admission `plugins` to turn off, even default ones (comma-separated or repeatable)")
	fs.StringVar(&c.AdmissionControlConfigFile, "admission-control-config-file", c.AdmissionControlConfigFile, "AdmissionConfiguration `file` (apiserver.config.k8s.io/v1) with plugins' configurations; hacp reads PodSecurity's (pod-security.admission.config.k8s.io/v1: default levels and exemptions)")
}

// Validate checks the settings; errors name the key.
func (c *Config) Validate() error {
	var errs []error
	errs = append(errs, c.validateListener()...)
	errs = append(errs, c.validateEtcd()...)
	errs = append(errs, c.validateServing()...)
	errs = append(errs, c.validateResources()...)
	errs = append(errs, c.validateAuthn()...)
	errs = append(errs, c.AuditConfig.validate()...)
	errs = append(errs, c.KubeletConfig.validate()...)
	return errors.Join(errs...)
}

// validateListener checks the secure listener's address, port and certificate, and the
// data directory.
func (c *Config) validateListener() []error {
	var errs []error
	if net.ParseIP(c.BindAddress) == nil {
		errs = append(errs, config.FieldErrorf("bind-address", "%q is not an IP address", c.BindAddress))
	}
	if c.SecurePort < 0 || c.SecurePort > 65535 {
		errs = append(errs, config.FieldErrorf("secure-port", "%d is out of range 0-65535", c.SecurePort))
	}
	if c.DataDir == "" {
		errs = append(errs, config.FieldErrorf("data-dir", "must not be empty"))
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		errs = append(errs, config.FieldErrorf("tls-cert-file", "tls-cert-file and tls-private-key-file go together"))
	}
	return errs
}

// validateEtcd checks the etcd settings: the servers or the embedded member's URLs, its
// client TLS and timing, the compaction, the storage format, encryption at rest and the
// key prefix.
func (c *Config) validateEtcd() []error {
	var errs []error
	for key, v := range map[string]string{"etcd-listen-client-url": c.EtcdListenClientURL, "etcd-listen-peer-urls": c.EtcdListenPeerURL, "etcd-initial-advertise-peer-urls": c.EtcdInitialAdvertisePeerURL} {
		if v == "" && key == "etcd-initial-advertise-peer-urls" {
			continue
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, config.FieldErrorf(key, "%q is not an http(s) URL", v))
		}
	}
	errs = append(errs, c.validateEtcdClientTLS()...)
	if c.EtcdInitialClusterState != "new" && c.EtcdInitialClusterState != "existing" {
		errs = append(errs, config.FieldErrorf("etcd-initial-cluster-state", "must be new or existing, not %q", c.EtcdInitialClusterState))
	}
	if c.EtcdHeartbeatInterval < time.Millisecond {
		errs = append(errs, config.FieldErrorf("etcd-heartbeat-interval", "must be at least 1ms, not %v", c.EtcdHeartbeatInterval))
	} else if c.EtcdElectionTimeout < 5*c.EtcdHeartbeatInterval || c.EtcdElectionTimeout > 50*time.Second {
		errs = append(errs, config.FieldErrorf("etcd-election-timeout", "must be at least 5 heartbeat intervals (%v) and at most 50s, not %v", 5*c.EtcdHeartbeatInterval, c.EtcdElectionTimeout))
	}
	if c.EtcdCompactionInterval < 0 {
		errs = append(errs, config.FieldErrorf("etcd-compaction-interval", "must not be negative, not %v", c.EtcdCompactionInterval))
	}
	if err := registry.CheckStorageMediaType(c.StorageMediaType); c.StorageMediaType != "" && err != nil {
		errs = append(errs, config.FieldErrorf("storage-media-type", "%v", err))
	}
	if c.EncryptionProviderConfig != "" {
		if _, err := encryption.Load(c.EncryptionProviderConfig); err != nil {
			errs = append(errs, config.FieldErrorf("encryption-provider-config", "%v", err))
		}
	}
	if c.EtcdPrefix == "" || c.EtcdPrefix[0] != '/' {
		errs = append(errs, config.FieldErrorf("etcd-prefix", "must start with /"))
	}
	return errs
}

// validateServing checks logging, shutdown, the in-flight limits, the metrics listener
// and the advertised address.
func (c *Config) validateServing() []error {
	var errs []error
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, config.FieldErrorf("log-level", "must be debug, info, warn or error, not %q", c.LogLevel))
	}
	if c.ShutdownDelay < 0 || c.ShutdownTimeout < 0 {
		errs = append(errs, config.FieldErrorf("shutdown-delay", "durations must not be negative"))
	}
	if c.MaxRequestsInflight < 0 || c.MaxMutatingRequestsInflight < 0 {
		errs = append(errs, config.FieldErrorf("max-requests-inflight", "must not be negative"))
	}
	if c.MetricsBindAddress != "" {
		if _, _, err := net.SplitHostPort(c.MetricsBindAddress); err != nil {
			errs = append(errs, config.FieldErrorf("metrics-bind-address", "%q is not host:port", c.MetricsBindAddress))
		}
	}
	if c.AdvertiseAddress != "" {
		if ip := net.ParseIP(c.AdvertiseAddress); ip == nil || ip.IsUnspecified() {
			errs = append(errs, config.FieldErrorf("advertise-address", "%q is not a usable IP address", c.AdvertiseAddress))
		}
	}
	return errs
}

// validateResources checks what the served resources depend on: the Service IP and node
// port ranges, the authorization modes, the admission plugins and the watch cache.
func (c *Config) validateResources() []error {
	var errs []error
	if _, err := core.ParseServiceCIDR(c.ServiceClusterIPRange); err != nil {
		errs = append(errs, config.FieldErrorf("service-cluster-ip-range", "%v", err))
	}
	if _, _, err := core.ParseNodePortRange(c.ServiceNodePortRange); err != nil {
		errs = append(errs, config.FieldErrorf("service-node-port-range", "%v", err))
	}
	if _, err := authz.ParseModes(c.AuthorizationMode); err != nil {
		errs = append(errs, config.FieldErrorf("authorization-mode", "%v", err))
	}
	if _, err := AdmissionPlugins(c.EnableAdmissionPlugins, c.DisableAdmissionPlugins); err != nil {
		errs = append(errs, config.FieldErrorf("enable-admission-plugins", "%v", err))
	}
	if c.AdmissionControlConfigFile != "" {
		if _, err := loadPodSecurityConfig(c.AdmissionControlConfigFile); err != nil {
			errs = append(errs, config.FieldErrorf("admission-control-config-file", "%v", err))
		}
	}
	if c.DefaultWatchCacheSize < 0 {
		errs = append(errs, config.FieldErrorf("default-watch-cache-size", "must not be negative"))
	}
	if _, err := ParseWatchCacheSizes(c.WatchCacheSizes); err != nil {
		errs = append(errs, config.FieldErrorf("watch-cache-sizes", "%v", err))
	}
	if c.WatchBookmarkInterval <= 0 {
		errs = append(errs, config.FieldErrorf("watch-bookmark-interval", "must be positive"))
	}
	return errs
}

// defaultWatchCacheSizes are kube-apiserver's (DefaultWatchCacheSizes): Events, written by
// every component and read rarely, have no watch cache (both groups' Events are the one
// "events" store here). --watch-cache-sizes overrides them ("events#100" turns it on).
var defaultWatchCacheSizes = map[string]int{"events": 0}

// ParseWatchCacheSizes reads --watch-cache-sizes: resource[.group]#size items, each also
// possibly a comma-separated list, over the defaults (no cache for events).
func ParseWatchCacheSizes(items []string) (map[string]int, error) {
	out := maps.Clone(defaultWatchCacheSizes)
	for _, item := range items {
		for _, f := range strings.Split(item, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			name, size, ok := strings.Cut(f, "#")
			n, err := strconv.Atoi(size)
			if !ok || name == "" || err != nil || n < 0 {
				return nil, fmt.Errorf("%q is not resource[.group]#size", f)
			}
			out[strings.ToLower(name)] = n
		}
	}
	return out, nil
}
