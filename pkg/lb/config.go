package lb

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hacp/hacp/internal/statustls"
	"github.com/hacp/hacp/pkg/config"
)

// Config is lbproxy's configuration. Its yaml keys are the flag names.
type Config struct {
	Listen   string   `yaml:"listen"`
	Backends []string `yaml:"backend"`
	Balance  string   `yaml:"balance"`

	CheckMode         string        `yaml:"check-mode"`
	CheckPath         string        `yaml:"check-path"`
	CheckCA           string        `yaml:"check-ca"`
	CheckCert         string        `yaml:"check-cert"`
	CheckKey          string        `yaml:"check-key"`
	CheckInsecure     bool          `yaml:"check-insecure"`
	CheckServerName   string        `yaml:"check-server-name"`
	CheckInterval     time.Duration `yaml:"check-interval"`
	CheckFastInterval time.Duration `yaml:"check-fast-interval"`
	CheckTimeout      time.Duration `yaml:"check-timeout"`
	Rise              int           `yaml:"rise"`
	Fall              int           `yaml:"fall"`

	ConnectTimeout    time.Duration `yaml:"connect-timeout"`
	Retries           int           `yaml:"retries"`
	ClientIdleTimeout time.Duration `yaml:"client-idle-timeout"`
	ServerIdleTimeout time.Duration `yaml:"server-idle-timeout"`
	TCPUserTimeout    time.Duration `yaml:"tcp-user-timeout"`
	TCPKeepAlive      time.Duration `yaml:"tcp-keepalive"`

	MaxConn        int           `yaml:"maxconn"`
	BackendMaxConn int           `yaml:"backend-maxconn"`
	MaxQueue       int           `yaml:"max-queue"`
	QueueTimeout   time.Duration `yaml:"queue-timeout"`
	SlowStart      time.Duration `yaml:"slow-start"`
	DrainTimeout   time.Duration `yaml:"drain-timeout"`
	// DownSessionGrace delays closing the sessions of a backend marked DOWN by a check
	// that it answered with the wrong status (alive, e.g. draining); see AddFlags.
	DownSessionGrace time.Duration `yaml:"down-session-grace"`

	// The connection-table sync with the other masters' lbproxies (conntable.go).
	SyncListen    string        `yaml:"sync-listen"`
	SyncPeers     []string      `yaml:"sync-peer"`
	SyncInterval  time.Duration `yaml:"sync-interval"`
	SyncHeartbeat time.Duration `yaml:"sync-heartbeat"`

	StatusAddr string `yaml:"status-addr"`
	// StatusTLS is the second, TLS status listener (client certificates required).
	StatusTLS statustls.Config `yaml:",inline"`
	LogLevel  string           `yaml:"log-level"`
}

// DefaultConfig returns the defaults: round-robin over backends checked with an HTTPS GET of
// /healthz every 2 s (500 ms while a backend changes state), rise 2, fall 2, a LAN-sized
// connect timeout of 300 ms and idle timeouts of 10 minutes, far above client-go's 30 s
// HTTP/2 ping, so long watches survive.
func DefaultConfig() *Config {
	return &Config{
		Listen:            ":8443",
		Balance:           "roundrobin",
		CheckMode:         "https",
		CheckPath:         "/healthz",
		CheckInterval:     2 * time.Second,
		CheckFastInterval: 500 * time.Millisecond,
		CheckTimeout:      1 * time.Second,
		Rise:              2,
		Fall:              2,
		ConnectTimeout:    300 * time.Millisecond,
		Retries:           2,
		ClientIdleTimeout: 10 * time.Minute,
		ServerIdleTimeout: 10 * time.Minute,
		TCPKeepAlive:      15 * time.Second,
		MaxConn:           20000,
		BackendMaxConn:    0,
		MaxQueue:          1000,
		QueueTimeout:      5 * time.Second,
		SlowStart:         0,
		DrainTimeout:      30 * time.Second,
		SyncInterval:      time.Second,
		SyncHeartbeat:     100 * time.Millisecond,
		LogLevel:          "info",
	}
}

// AddFlags binds every setting to a flag of the same name as its yaml key.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", c.Listen, "`address` to accept client connections on, host:port; an empty host means every address (IPv4 and IPv6)")
	config.StringList(fs, &c.Backends, "backend", "upstream `server`: \"host:port\", optionally followed by \" weight=N\" (1-256, default 1); repeat the flag (or separate with commas) for each master; IPv6 as [addr]:port")
	fs.StringVar(&c.Balance, "balance", c.Balance, "balancing `algorithm`: roundrobin (smooth weighted rotation) or leastconn (fewest active connections per unit of weight)")
	fs.StringVar(&c.CheckMode, "check-mode", c.CheckMode, "active health check `mode`: https (GET check-path, expect 200, like haproxy's httpchk + check-ssl), http, or tcp (connect only)")
	fs.StringVar(&c.CheckPath, "check-path", c.CheckPath, "`path` requested by https and http checks")
	fs.StringVar(&c.CheckCA, "check-ca", c.CheckCA, "PEM `file` of the CA that signed the backends' serving certificates, for https checks; empty means the system roots")
	fs.StringVar(&c.CheckCert, "check-cert", c.CheckCert, "PEM `file` of a client certificate that https checks present (with check-key); read again when it changes, like check-ca")
	fs.StringVar(&c.CheckKey, "check-key", c.CheckKey, "PEM `file` of check-cert's private key")
	fs.BoolVar(&c.CheckInsecure, "check-insecure", c.CheckInsecure, "do not verify the backends' certificates in https checks")
	fs.StringVar(&c.CheckServerName, "check-server-name", c.CheckServerName, "`name` to verify in the backends' certificates instead of their address")
	fs.DurationVar(&c.CheckInterval, "check-interval", c.CheckInterval, "time between checks of a backend whose state is settled")
	fs.DurationVar(&c.CheckFastInterval, "check-fast-interval", c.CheckFastInterval, "time between checks while a backend is changing state (after a failure, or rising)")
	fs.DurationVar(&c.CheckTimeout, "check-timeout", c.CheckTimeout, "timeout of one check, connect to response headers")
	fs.IntVar(&c.Rise, "rise", c.Rise, "consecutive successful checks that bring a DOWN backend UP")
	fs.IntVar(&c.Fall, "fall", c.Fall, "consecutive failed checks that take an UP backend DOWN (a refused or timed-out client connect takes it DOWN at once)")
	fs.DurationVar(&c.ConnectTimeout, "connect-timeout", c.ConnectTimeout, "timeout of a connect to a backend; on refusal, or on timeout while the backend sent nothing on its other sessions, the backend is marked DOWN; either way the client connection is retried on another one. Sized for a LAN: a value below 1 s means one lost SYN marks a backend DOWN until rise checks pass")
	fs.IntVar(&c.Retries, "retries", c.Retries, "further backends tried, each a different one, after a failed connect before the client connection is closed")
	fs.DurationVar(&c.ClientIdleTimeout, "client-idle-timeout", c.ClientIdleTimeout, "close a connection when the client has sent nothing and received nothing for this long (0: never)")
	fs.DurationVar(&c.ServerIdleTimeout, "server-idle-timeout", c.ServerIdleTimeout, "close a connection when the backend has sent nothing and received nothing for this long (0: never)")
	fs.DurationVar(&c.TCPUserTimeout, "tcp-user-timeout", c.TCPUserTimeout, "TCP_USER_TIMEOUT on both sides: close a connection whose sent data stays unacknowledged this long (0: kernel default)")
	fs.DurationVar(&c.TCPKeepAlive, "tcp-keepalive", c.TCPKeepAlive, "idle time before TCP keepalive probes on both sides, then probes every third of it, 3 probes (0: keepalive off)")
	fs.IntVar(&c.MaxConn, "maxconn", c.MaxConn, "most client connections at once; further ones wait in the kernel's accept backlog (0: no limit)")
	fs.IntVar(&c.BackendMaxConn, "backend-maxconn", c.BackendMaxConn, "most connections at once to one backend; when every UP backend is full, new ones wait in a queue (0: no limit)")
	fs.IntVar(&c.MaxQueue, "max-queue", c.MaxQueue, "most client connections waiting for a backend slot; more are refused")
	fs.DurationVar(&c.QueueTimeout, "queue-timeout", c.QueueTimeout, "longest wait in the queue for a backend slot before the client connection is closed")
	fs.DurationVar(&c.SlowStart, "slow-start", c.SlowStart, "after a backend comes UP, ramp its weight from 5% to full over this time (0: full weight at once)")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", c.DrainTimeout, "on SIGTERM stop accepting and wait this long for open connections to end, then close them")
	fs.DurationVar(&c.DownSessionGrace, "down-session-grace", c.DownSessionGrace, "when a backend goes DOWN because its check got an answer with the wrong status (the server is alive: e.g. an apiserver failing /healthz during its --shutdown-delay), close its open connections this `long` later instead of at once, so that requests in flight finish; a backend that cannot be reached has its connections closed at once (0: always at once)")
	fs.StringVar(&c.SyncListen, "sync-listen", c.SyncListen, "UDP `address` (this master's own ip:port, not the VIP) on which to exchange connection tables with the other masters' lbproxies, so that the one whose host takes the VIP over from a crashed or cut-off master makes that master's clients reset their connections at once; empty: off")
	config.StringList(fs, &c.SyncPeers, "sync-peer", "UDP `address` (ip:port) of another master's lbproxy --sync-listen; repeat (or separate with commas) for each; datagrams from any other source are dropped")
	fs.DurationVar(&c.SyncInterval, "sync-interval", c.SyncInterval, "time between two sends of the whole connection table to each peer; a peer forgets a closed connection two intervals later, and knows a new one at most this much later")
	fs.DurationVar(&c.SyncHeartbeat, "sync-heartbeat", c.SyncHeartbeat, "time between heartbeats to each peer; a peer silent for three heartbeats when this host takes over one of the addresses its clients used counts as dead, and its connections on that address are reset")
	fs.StringVar(&c.StatusAddr, "status-addr", c.StatusAddr, "`address` serving /status (JSON per backend) and /metrics (Prometheus); empty: off")
	c.StatusTLS.AddFlags(fs)
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log `level`: debug, info, warn or error")
}

// Validate checks every value and returns one config.FieldError per problem.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, config.FieldErrorf(key, format, args...))
	}
	c.validateFrontAndBackends(bad)
	c.validateChecks(bad)
	c.validateTimeouts(bad)
	c.validateLimits(bad)
	c.validateSync(bad)
	if c.StatusAddr != "" {
		if _, _, err := net.SplitHostPort(c.StatusAddr); err != nil {
			bad("status-addr", "want host:port, got %q", c.StatusAddr)
		}
	}
	errs = append(errs, c.StatusTLS.Validate())
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("log-level", "want debug, info, warn or error, got %q", c.LogLevel)
	}
	return errors.Join(errs...)
}

// validateFrontAndBackends checks the listen address and the backends (each once).
func (c *Config) validateFrontAndBackends(bad func(key, format string, args ...any)) {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		bad("listen", "want host:port, got %q", c.Listen)
	}
	if len(c.Backends) == 0 {
		bad("backend", "no backends: give at least one host:port")
	}
	seen := map[string]bool{}
	for i, s := range c.Backends {
		b, err := ParseBackend(s)
		key := fmt.Sprintf("backend.%d", i)
		if len(c.Backends) == 1 {
			key = "backend"
		}
		switch {
		case err != nil:
			bad(key, "%v", err)
		case seen[b.Addr]:
			bad(key, "backend %s listed twice", b.Addr)
		}
		seen[b.Addr] = true
	}
}

// validateChecks checks the balance algorithm and the health check's mode, path and CA.
func (c *Config) validateChecks(bad func(key, format string, args ...any)) {
	if c.Balance != "roundrobin" && c.Balance != "leastconn" {
		bad("balance", "want roundrobin or leastconn, got %q", c.Balance)
	}
	switch c.CheckMode {
	case "https", "http", "tcp":
	default:
		bad("check-mode", "want https, http or tcp, got %q", c.CheckMode)
	}
	if c.CheckMode != "tcp" && !strings.HasPrefix(c.CheckPath, "/") {
		bad("check-path", "want an absolute path such as /healthz, got %q", c.CheckPath)
	}
	if c.CheckCA != "" {
		if data, err := os.ReadFile(c.CheckCA); err != nil {
			bad("check-ca", "cannot read CA file: %v", unwrapPathError(err))
		} else if !strings.Contains(string(data), "-----BEGIN CERTIFICATE-----") {
			bad("check-ca", "%s holds no PEM certificate", c.CheckCA)
		}
	}
	if (c.CheckCert == "") != (c.CheckKey == "") {
		bad("check-cert", "check-cert and check-key go together")
	} else if c.CheckCert != "" {
		if _, err := tls.LoadX509KeyPair(c.CheckCert, c.CheckKey); err != nil {
			bad("check-cert", "load client certificate and key: %v", unwrapPathError(err))
		}
	}
}

// validateTimeouts checks the intervals and timeouts.
func (c *Config) validateTimeouts(bad func(key, format string, args ...any)) {
	positive := func(key string, d time.Duration) {
		if d <= 0 {
			bad(key, "must be positive, got %v", d)
		}
	}
	nonNegative := func(key string, d time.Duration) {
		if d < 0 {
			bad(key, "must not be negative, got %v", d)
		}
	}
	positive("check-interval", c.CheckInterval)
	positive("check-fast-interval", c.CheckFastInterval)
	positive("check-timeout", c.CheckTimeout)
	positive("connect-timeout", c.ConnectTimeout)
	positive("queue-timeout", c.QueueTimeout)
	nonNegative("client-idle-timeout", c.ClientIdleTimeout)
	nonNegative("server-idle-timeout", c.ServerIdleTimeout)
	nonNegative("tcp-user-timeout", c.TCPUserTimeout)
	nonNegative("tcp-keepalive", c.TCPKeepAlive)
	nonNegative("slow-start", c.SlowStart)
	nonNegative("drain-timeout", c.DrainTimeout)
	nonNegative("down-session-grace", c.DownSessionGrace)
	if c.TCPUserTimeout > 0 && c.TCPUserTimeout < time.Millisecond {
		bad("tcp-user-timeout", "must be at least 1ms, got %v", c.TCPUserTimeout)
	}
}

// validateLimits checks rise and fall, retries and the connection and queue limits.
func (c *Config) validateLimits(bad func(key, format string, args ...any)) {
	if c.Rise < 1 {
		bad("rise", "must be at least 1, got %d", c.Rise)
	}
	if c.Fall < 1 {
		bad("fall", "must be at least 1, got %d", c.Fall)
	}
	if c.Retries < 0 {
		bad("retries", "must not be negative, got %d", c.Retries)
	}
	if c.MaxConn < 0 {
		bad("maxconn", "must not be negative, got %d", c.MaxConn)
	}
	if c.BackendMaxConn < 0 {
		bad("backend-maxconn", "must not be negative, got %d", c.BackendMaxConn)
	}
	if c.MaxQueue < 0 {
		bad("max-queue", "must not be negative, got %d", c.MaxQueue)
	}
}

// validateSync checks the settings of the state sync between the masters' lbproxies.
func (c *Config) validateSync(bad func(key, format string, args ...any)) {
	if c.SyncListen != "" {
		if ap, err := netip.ParseAddrPort(c.SyncListen); err != nil && !strings.HasPrefix(c.SyncListen, ":") {
			bad("sync-listen", "want ip:port (this master's own address), got %q", c.SyncListen)
		} else if err == nil && ap.Port() == 0 {
			bad("sync-listen", "want a port, got %q", c.SyncListen)
		}
		if len(c.SyncPeers) == 0 {
			bad("sync-peer", "sync-listen is set but no sync-peer is: give the other masters' sync-listen addresses")
		}
	} else if len(c.SyncPeers) > 0 {
		bad("sync-peer", "sync-listen is not set: give this master's own ip:port as sync-listen too")
	}
	for i, v := range c.SyncPeers {
		key := fmt.Sprintf("sync-peer.%d", i)
		if len(c.SyncPeers) == 1 {
			key = "sync-peer"
		}
		if ap, err := netip.ParseAddrPort(v); err != nil || ap.Port() == 0 || ap.Addr().Zone() != "" {
			bad(key, "want ip:port (an address, not a name; IPv6 as [addr]:port), got %q", v)
		}
	}
	if c.SyncInterval <= 0 {
		bad("sync-interval", "must be positive, got %v", c.SyncInterval)
	}
	if c.SyncHeartbeat <= 0 {
		bad("sync-heartbeat", "must be positive, got %v", c.SyncHeartbeat)
	} else if c.SyncInterval > 0 && c.SyncHeartbeat > c.SyncInterval {
		bad("sync-heartbeat", "must not be longer than sync-interval (%v), got %v", c.SyncInterval, c.SyncHeartbeat)
	}
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// BackendSpec is one parsed --backend value.
type BackendSpec struct {
	Addr   string // host:port, as given
	Weight int    // 1-256
}

// ParseBackend parses "host:port" optionally followed by " weight=N".
func ParseBackend(s string) (BackendSpec, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return BackendSpec{}, errors.New("empty backend")
	}
	b := BackendSpec{Addr: fields[0], Weight: 1}
	host, port, err := net.SplitHostPort(b.Addr)
	if err != nil {
		return b, fmt.Errorf("backend %q: want host:port (IPv6 as [addr]:port)", b.Addr)
	}
	if host == "" {
		return b, fmt.Errorf("backend %q: missing host", b.Addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return b, fmt.Errorf("backend %q: port must be 1-65535", b.Addr)
	}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k != "weight" {
			return b, fmt.Errorf("backend %q: unknown option %q (want weight=N)", b.Addr, f)
		}
		w, err := strconv.Atoi(v)
		if err != nil || w < 1 || w > 256 {
			return b, fmt.Errorf("backend %q: weight must be 1-256, got %q", b.Addr, v)
		}
		b.Weight = w
	}
	return b, nil
}

// BackendSpecs parses every backend of c; call it after Validate.
func (c *Config) BackendSpecs() ([]BackendSpec, error) {
	out := make([]BackendSpec, 0, len(c.Backends))
	for _, s := range c.Backends {
		b, err := ParseBackend(s)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}
