// Package health is the active health checker shared by lbproxy (one per backend) and vipd
// (the local apiserver): an HTTP(S) GET or a TCP connect every interval, with a timeout, and
// rise/fall hysteresis so that one lost probe does not flap the state.
package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"

	"github.com/hacp/hacp/internal/certreload"
)

// Config says what to probe and how often.
type Config struct {
	// URL is "https://host:port/path", "http://host:port/path" or "tcp://host:port".
	URL string
	// Interval between probes while the state is settled.
	Interval time.Duration
	// FastInterval between probes while the state is changing (some, but not yet rise or
	// fall, probes disagree with it), like haproxy's fastinter. Zero means Interval.
	FastInterval time.Duration
	// Timeout of one probe, connect to response headers.
	Timeout time.Duration
	// Rise is the number of consecutive successes that turn an unhealthy target healthy.
	Rise int
	// Fall is the number of consecutive failures that turn a healthy target unhealthy.
	Fall int
	// ExpectStatus is the HTTP status a healthy target answers; 200 when zero.
	ExpectStatus int
	// CAFile verifies the target's certificate; empty means the system roots.
	CAFile string
	// Insecure skips certificate verification.
	Insecure bool
	// ServerName overrides the name verified in the target's certificate.
	ServerName string
	// ClientCert and ClientKey, when set, are presented to the target.
	ClientCert, ClientKey string
	// TLS, when set, replaces CAFile, Insecure, ServerName, ClientCert and ClientKey: a
	// ClientTLS shared by several checkers, reloaded by its owner. Without it the checker
	// loads the files itself and reads them again every TLSReloadInterval.
	TLS *ClientTLS
	// TLSReloadInterval is how often a checker that loaded its own files looks at them
	// again, before a probe; 0 means certreload.DefaultInterval.
	TLSReloadInterval time.Duration
	// Log receives what reloading the files says; slog.Default() when nil.
	Log *slog.Logger
	// InitiallyHealthy is the state before the first probe. The first probe's result then
	// sets the state directly, without waiting for rise or fall probes.
	InitiallyHealthy bool
}

// Status is a snapshot of a checker.
type Status struct {
	Healthy   bool      `json:"healthy"`
	Checked   bool      `json:"checked"` // at least one probe finished
	Streak    int       `json:"streak"`  // consecutive probes that disagree with Healthy
	Checks    uint64    `json:"checks"`
	Failures  uint64    `json:"failures"`
	LastCheck time.Time `json:"lastCheck"`
	LastError string    `json:"lastError,omitempty"`
	Since     time.Time `json:"since"` // when Healthy last changed
}

// Checker probes one target. Its zero value is not usable; call New.
type Checker struct {
	cfg      Config
	probe    func(ctx context.Context) error
	onChange func(healthy bool, reason error)
	wake     chan struct{}

	ownTLS     *certreload.Set // the files this checker loaded itself, nil otherwise
	reloadMu   sync.Mutex
	lastReload time.Time // of ownTLS

	mu sync.Mutex
	st Status
}

// New validates cfg and returns a checker. onChange, if not nil, is called (from the
// goroutine that ran the probe) each time the state flips, with the error that caused a
// fall.
func New(cfg Config, onChange func(healthy bool, reason error)) (*Checker, error) {
	if cfg.Interval <= 0 {
		return nil, errors.New("health: interval must be positive")
	}
	if cfg.Timeout <= 0 {
		return nil, errors.New("health: timeout must be positive")
	}
	if cfg.Rise < 1 || cfg.Fall < 1 {
		return nil, errors.New("health: rise and fall must be at least 1")
	}
	if cfg.FastInterval <= 0 {
		cfg.FastInterval = cfg.Interval
	}
	if cfg.ExpectStatus == 0 {
		cfg.ExpectStatus = http.StatusOK
	}
	c := &Checker{cfg: cfg, onChange: onChange, wake: make(chan struct{}, 1)}
	c.st.Healthy = cfg.InitiallyHealthy
	c.st.Since = time.Now()
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("health: check URL %q: want scheme://host:port[/path]", cfg.URL)
	}
	switch u.Scheme {
	case "tcp":
		addr := u.Host
		c.probe = func(ctx context.Context) error {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return err
			}
			return conn.Close()
		}
	case "http", "https":
		ct := cfg.TLS
		if ct == nil {
			var err error
			if ct, err = NewClientTLS(cfg, cfg.Log); err != nil {
				return nil, err
			}
			c.ownTLS = certreload.NewSet(cfg.Log, ct.Items()...)
			c.lastReload = time.Now()
		}
		client := &http.Client{
			Transport: &http.Transport{
				DialTLSContext:    ct.dialTLS, // the CA and client pair in use at each probe
				DisableKeepAlives: true,       // every probe proves a fresh connect and handshake
				Proxy:             nil,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		target := u.String()
		c.probe = func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if resp.StatusCode != cfg.ExpectStatus {
				return &StatusError{Code: resp.StatusCode, Want: cfg.ExpectStatus}
			}
			return nil
		}
	default:
		return nil, fmt.Errorf("health: check URL %q: scheme must be https, http or tcp", cfg.URL)
	}
	return c, nil
}

// reloadOwnTLS reads the checker's own certificate files again when TLSReloadInterval has
// passed since it last did.
func (c *Checker) reloadOwnTLS() {
	if c.ownTLS == nil {
		return
	}
	every := c.cfg.TLSReloadInterval
	if every == 0 {
		every = certreload.DefaultInterval
	}
	c.reloadMu.Lock()
	defer c.reloadMu.Unlock()
	if now := time.Now(); now.Sub(c.lastReload) >= every {
		c.lastReload = now
		c.ownTLS.ReloadNow()
	}
}

// Run probes until ctx is done.
func (c *Checker) Run(ctx context.Context) {
	for {
		c.CheckNow(ctx)
		c.mu.Lock()
		wait := c.cfg.Interval
		if c.st.Streak > 0 || !c.st.Checked {
			wait = c.cfg.FastInterval
		}
		c.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-c.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// CheckNow runs one probe and records its result.
func (c *Checker) CheckNow(ctx context.Context) error {
	c.reloadOwnTLS()
	pctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	err := c.probe(pctx)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		// This host is out of file descriptors: that says nothing about the target, and
		// marking it down would close the sessions still working through it.
		return err
	}
	c.record(err, false)
	return err
}

// ReportFailure records a failure seen outside the prober, such as a refused or timed-out
// connection to the target. It marks the target unhealthy at once (haproxy's "observe
// layer4" with error-limit 1); probes must then see rise successes to bring it back. The
// prober is woken to start probing at the fast interval.
func (c *Checker) ReportFailure(err error) {
	c.record(err, true)
	c.Wake()
}

// Wake has the prober run its next probe now rather than at its interval, for a target
// suspected but not known to be down; the probe counts toward fall as any other.
func (c *Checker) Wake() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Checker) record(err error, immediate bool) {
	c.mu.Lock()
	st := &c.st
	now := time.Now()
	st.LastCheck = now
	if !immediate {
		st.Checks++
	}
	if err != nil {
		st.Failures++
		st.LastError = err.Error()
	} else {
		st.LastError = ""
	}
	ok := err == nil
	flip := false
	switch {
	case !st.Checked && !immediate, immediate && !ok:
		flip = st.Healthy != ok
		st.Streak = 0
	case ok == st.Healthy:
		st.Streak = 0
	default:
		st.Streak++
		need := c.cfg.Rise
		if st.Healthy {
			need = c.cfg.Fall
		}
		flip = st.Streak >= need
	}
	if !immediate {
		st.Checked = true
	}
	if flip {
		st.Healthy = ok
		st.Streak = 0
		st.Since = now
	}
	cb := c.onChange
	c.mu.Unlock()
	if flip && cb != nil {
		cb(ok, err)
	}
}

// Healthy reports the current state.
func (c *Checker) Healthy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.Healthy
}

// Status returns a snapshot of the checker.
func (c *Checker) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// StatusError is a failed check whose server answered, with the wrong status: it is alive
// (draining, or degraded) rather than unreachable.
type StatusError struct {
	Code, Want int
}

func (e *StatusError) Error() string { return fmt.Sprintf("status %d, want %d", e.Code, e.Want) }
