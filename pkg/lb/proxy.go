// Package lb is lbproxy's engine: a TCP proxy that spreads client connections over
// health-checked backends (round-robin or least-connections, with weights), retries a failed
// connect on another backend, and closes the sessions of a backend that goes DOWN.
//
// A session has no goroutine while it is idle: the proxy's own epoll instance says when a
// connection has bytes, and a worker then moves them with splice(2), so they never enter
// user space, until the connection would block again.
package lb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hacp/hacp/pkg/health"
)

// Proxy accepts client connections and forwards each to one backend.
type Proxy struct {
	cfg     *Config
	log     *slog.Logger
	pool    *pool
	dialer  *net.Dialer
	workers *workers

	ln       *net.TCPListener
	statusLn net.Listener

	runCtx   context.Context // set by Run; checkers of backends added by Reload use it
	poller   *poller         // set by Run
	slots    chan struct{}   // one per client connection held, under --maxconn; nil for no limit
	sessions sync.WaitGroup  // client connections accepted and not yet closed
	nActive  atomic.Int64
	accepted atomic.Uint64
	refused  atomic.Uint64
	retried  atomic.Uint64
	noFiles  atomic.Uint64 // accepts and connects that failed for want of a file descriptor
}

// New builds a proxy from a validated config. It does not open sockets yet.
func New(cfg *Config, log *slog.Logger) (*Proxy, error) {
	if log == nil {
		log = slog.Default()
	}
	specs, err := cfg.BackendSpecs()
	if err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, errors.New("lb: no backends")
	}
	p := &Proxy{
		cfg:     cfg,
		log:     log,
		dialer:  dialer(cfg),
		workers: newWorkers(10 * time.Second),
		pool: &pool{
			leastconn: cfg.Balance == "leastconn",
			maxConn:   cfg.BackendMaxConn,
			maxQueue:  cfg.MaxQueue,
			slowStart: cfg.SlowStart,
		},
	}
	for _, s := range specs {
		b, err := p.newBackend(s)
		if err != nil {
			return nil, err
		}
		p.pool.backends = append(p.pool.backends, b)
	}
	return p, nil
}

func (p *Proxy) newBackend(s BackendSpec) (*backend, error) {
	b := &backend{addr: s.Addr, weight: s.Weight, sessions: map[*session]struct{}{}}
	hc := health.Config{
		URL:          checkURL(p.cfg, s.Addr),
		Interval:     p.cfg.CheckInterval,
		FastInterval: p.cfg.CheckFastInterval,
		Timeout:      p.cfg.CheckTimeout,
		Rise:         p.cfg.Rise,
		Fall:         p.cfg.Fall,
		CAFile:       p.cfg.CheckCA,
		Insecure:     p.cfg.CheckInsecure,
		ServerName:   p.cfg.CheckServerName,
	}
	c, err := health.New(hc, func(up bool, reason error) { p.onHealth(b, up, reason) })
	if err != nil {
		return nil, fmt.Errorf("lb: backend %s: %w", s.Addr, err)
	}
	b.checker = c
	return b, nil
}

func checkURL(cfg *Config, addr string) string {
	if cfg.CheckMode == "tcp" {
		return "tcp://" + addr
	}
	u := url.URL{Scheme: cfg.CheckMode, Host: addr, Path: cfg.CheckPath}
	return u.String()
}

func (p *Proxy) onHealth(b *backend, up bool, reason error) {
	state := "DOWN"
	if up {
		state = "UP"
	}
	attrs := []any{"backend", b.addr, "state", state}
	if reason != nil {
		attrs = append(attrs, "reason", reason.Error())
	}
	sessions := p.pool.setUp(b, up)
	var se *health.StatusError
	if !up && len(sessions) > 0 && p.cfg.DownSessionGrace > 0 && errors.As(reason, &se) {
		// The backend answered: it is alive, maybe draining. Its sessions may finish what
		// is in flight; those still open after the grace are closed, unless it is UP again.
		attrs = append(attrs, "open_sessions", len(sessions), "close_after", p.cfg.DownSessionGrace.String())
		p.log.Warn("backend state changed", attrs...)
		time.AfterFunc(p.cfg.DownSessionGrace, func() {
			if p.pool.isUp(b) {
				return
			}
			for _, s := range sessions {
				s.close(false)
			}
		})
		return
	}
	start := time.Now()
	for _, s := range sessions {
		s.close(false)
	}
	if !up {
		attrs = append(attrs, "closed_sessions", len(sessions), "closing_took", time.Since(start).Round(time.Microsecond))
	}
	p.log.Warn("backend state changed", attrs...)
}

// Listen opens the client listener; Run calls it when it was not called before. It is
// separate so that a program can report "address already in use" before anything starts.
func (p *Proxy) Listen() error {
	if p.ln != nil {
		return nil
	}
	// Keepalive and TCP_USER_TIMEOUT are set once on the listening socket: accepted
	// sockets inherit them, which saves four system calls per client connection.
	ka := keepAlive(p.cfg.TCPKeepAlive)
	var terr error // see handover.go; not fatal
	lc := net.ListenConfig{
		KeepAlive: -1,
		Control: func(network, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = setSocketOptions(int(fd), ka, p.cfg.TCPUserTimeout)
				terr = setTransparent(int(fd), network)
			})
			return errors.Join(err, serr)
		},
	}
	ln, err := lc.Listen(context.Background(), "tcp", p.cfg.Listen)
	if err != nil {
		return fmt.Errorf("lb: listen on %s: %w", p.cfg.Listen, err)
	}
	if terr != nil {
		p.log.Warn("listener not transparent", "err", terr.Error())
	}
	p.ln = ln.(*net.TCPListener)
	if p.cfg.StatusAddr != "" {
		sl, err := net.Listen("tcp", p.cfg.StatusAddr)
		if err != nil {
			p.ln.Close()
			p.ln = nil
			return fmt.Errorf("lb: status listener on %s: %w", p.cfg.StatusAddr, err)
		}
		p.statusLn = sl
	}
	return nil
}

// Addr is the client listener's address, once Listen succeeded.
func (p *Proxy) Addr() net.Addr { return p.ln.Addr() }

// StatusAddr is the status listener's address, or nil.
func (p *Proxy) StatusAddr() net.Addr {
	if p.statusLn == nil {
		return nil
	}
	return p.statusLn.Addr()
}

// Run checks the backends, accepts connections until ctx is done, then drains: it stops
// accepting, waits up to the drain timeout for open sessions to end, and closes the rest.
func (p *Proxy) Run(ctx context.Context) error {
	if err := p.Listen(); err != nil {
		return err
	}
	p.pool.mu.Lock()
	p.runCtx = ctx
	backends := append([]*backend(nil), p.pool.backends...)
	p.pool.mu.Unlock()
	for _, b := range backends {
		p.startChecker(ctx, b)
	}
	p.waitFirstChecks(backends)

	var statusSrv *http.Server
	if p.statusLn != nil {
		statusSrv = &http.Server{Handler: p.StatusHandler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = statusSrv.Serve(p.statusLn) }()
	}
	p.log.Info("lbproxy listening", "addr", p.ln.Addr().String(), "backends", len(backends), "balance", p.cfg.Balance)
	if limit := openFileLimit(); p.cfg.MaxConn > 0 && limit > 0 && limit < uint64(2*p.cfg.MaxConn+fdReserve) {
		p.log.Warn("the open-file limit is below what --maxconn needs (two descriptors a connection); clients beyond it wait in the listen backlog",
			"open_file_limit", limit, "maxconn", p.cfg.MaxConn, "want", 2*p.cfg.MaxConn+fdReserve)
	}

	pl, err := newPoller()
	if err != nil {
		return err
	}
	p.poller = pl
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		if err := pl.run(p.workers.run); err != nil {
			p.log.Error("poller failed; idle sessions will not move", "err", err)
		}
	}()
	if p.cfg.MaxConn > 0 {
		p.slots = make(chan struct{}, p.cfg.MaxConn)
	}

	sweepDone := make(chan struct{})
	go func() {
		defer close(sweepDone)
		p.sweepIdle(ctx)
	}()
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		p.acceptLoop(ctx)
	}()
	<-ctx.Done()
	p.ln.Close()
	<-acceptDone
	p.drain()
	<-sweepDone
	pl.close()
	<-pollDone
	p.pool.mu.Lock()
	for _, b := range p.pool.backends {
		if b.stop != nil {
			b.stop()
		}
	}
	p.pool.mu.Unlock()
	if statusSrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = statusSrv.Shutdown(sctx)
		cancel()
	}
	return nil
}

func (p *Proxy) startChecker(ctx context.Context, b *backend) {
	cctx, cancel := context.WithCancel(ctx)
	b.stop = cancel
	go b.checker.Run(cctx)
}

// waitFirstChecks lets every backend's first probe finish (bounded by the check timeout)
// so that the first clients are not refused only because no probe has answered yet.
func (p *Proxy) waitFirstChecks(backends []*backend) {
	deadline := time.Now().Add(p.cfg.CheckTimeout + 100*time.Millisecond)
	for time.Now().Before(deadline) {
		done := true
		for _, b := range backends {
			if !b.checker.Status().Checked {
				done = false
			}
		}
		if done {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (p *Proxy) acceptLoop(ctx context.Context) {
	var delay time.Duration
	var failed int // accepts failed for want of a file descriptor, in a row
	for {
		if p.slots != nil {
			select {
			case p.slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
		c, err := p.ln.AcceptTCP()
		if err != nil {
			if p.slots != nil {
				<-p.slots
			}
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Back off as net/http does; the client waits in the listen backlog.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			if outOfFiles(err) {
				p.noFiles.Add(1)
				if failed == 0 {
					p.log.Error("out of file descriptors: new clients wait in the listen backlog until sessions end; raise the open-file limit (LimitNOFILE) or lower --maxconn",
						"err", err, "sessions", p.nActive.Load(), "open_file_limit", openFileLimit())
				}
				failed++
			} else {
				p.log.Error("accept failed", "err", err, "retry_in", delay)
			}
			time.Sleep(delay)
			continue
		}
		if failed > 0 {
			p.log.Warn("accepting again after running out of file descriptors", "failed_accepts", failed)
			failed = 0
		}
		delay = 0
		p.accepted.Add(1)
		p.sessions.Add(1)
		p.workers.run(func() { p.handle(ctx, c) })
	}
}

// endConn gives back what an accepted client connection held: its --maxconn slot and its
// place in the drain's count.
func (p *Proxy) endConn() {
	if p.slots != nil {
		<-p.slots
	}
	p.sessions.Done()
}

// endSession is the end of a session that handle set up: the backend forgets it and its
// slot is free.
func (p *Proxy) endSession(s *session) {
	p.pool.removeSession(s.b, s)
	p.pool.release(s.b)
	p.nActive.Add(-1)
	p.endConn()
}

// outOfFiles reports whether err says this process or the system has no file
// descriptor left.
func outOfFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// fdReserve is the file descriptors lbproxy needs besides two a connection: listeners,
// health checks, splice pipes, the runtime's own.
const fdReserve = 256

// openFileLimit is the process's soft RLIMIT_NOFILE, or 0 when unknown.
func openFileLimit() uint64 {
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	return l.Cur
}

// sweepIdle closes sessions silent for longer than their idle timeout, looking every
// eighth of the shorter timeout (50 ms to 30 s): one ticker for all sessions, rather than
// a timer each.
func (p *Proxy) sweepIdle(ctx context.Context) {
	shortest := p.cfg.ClientIdleTimeout
	if shortest <= 0 || (p.cfg.ServerIdleTimeout > 0 && p.cfg.ServerIdleTimeout < shortest) {
		shortest = p.cfg.ServerIdleTimeout
	}
	if shortest <= 0 {
		return
	}
	tick := time.NewTicker(min(max(shortest/8, 50*time.Millisecond), 30*time.Second))
	defer tick.Stop()
	var idle []*session
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			idle = idle[:0]
			p.pool.mu.Lock()
			for _, b := range p.pool.backends {
				for s := range b.sessions {
					if s.tooIdle(now) {
						idle = append(idle, s)
					}
				}
			}
			p.pool.mu.Unlock()
			for _, s := range idle {
				s.close(false)
			}
			clear(idle)
		}
	}
}

// drain waits for sessions to end, up to the drain timeout, then closes the rest.
func (p *Proxy) drain() {
	done := make(chan struct{})
	go func() {
		p.sessions.Wait()
		close(done)
	}()
	n := p.nActive.Load()
	if n > 0 {
		p.log.Info("draining", "sessions", n, "timeout", p.cfg.DrainTimeout)
	}
	t := time.NewTimer(p.cfg.DrainTimeout)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	p.pool.mu.Lock()
	p.pool.closing = true // sessions about to start are closed by addSession
	var rest []*session
	for _, b := range p.pool.backends {
		for s := range b.sessions {
			rest = append(rest, s)
		}
	}
	p.pool.mu.Unlock()
	p.log.Warn("drain timeout: closing sessions", "sessions", len(rest))
	for _, s := range rest {
		s.close(false)
	}
	<-done
}

// refuse closes a client connection with a reset, so the client fails at once.
func (p *Proxy) refuse(c *net.TCPConn, why error) {
	p.refused.Add(1)
	p.log.Debug("refused client", "client", c.RemoteAddr(), "err", why)
	_ = c.SetLinger(0)
	c.Close()
}

// handle connects client to a backend and starts the session, which runs on without it.
func (p *Proxy) handle(ctx context.Context, client *net.TCPConn) {
	server, b, err := p.connect(ctx)
	if err != nil {
		p.refuse(client, err)
		p.endConn()
		return
	}
	b.connTotal.Add(1)
	p.nActive.Add(1)
	s, err := newSession(p, b, client, server)
	if err != nil {
		p.log.Error("session failed to start", "err", err)
		server.Close()
		p.refuse(client, err)
		p.nActive.Add(-1)
		p.pool.release(b)
		p.endConn()
		return
	}
	if !p.pool.addSession(b, s) {
		s.close(false) // b went DOWN between the connect and now
		return
	}
	s.start()
}

// connect reaches a backend: it picks one, and when the connect fails it marks that backend
// DOWN and tries another, up to the configured retries.
func (p *Proxy) connect(ctx context.Context) (*net.TCPConn, *backend, error) {
	var tried map[*backend]bool // allocated on the first failure
	var lastErr error
	for attempt := 0; attempt <= p.cfg.Retries; attempt++ {
		b, err := p.pool.acquire(ctx, tried, p.cfg.QueueTimeout)
		if err != nil {
			if lastErr != nil {
				return nil, nil, fmt.Errorf("%w (after %v)", err, lastErr)
			}
			return nil, nil, err
		}
		if attempt > 0 {
			p.retried.Add(1)
		}
		// Not ctx: the dial's timeout context then needs no registration with a
		// cancellable parent, and the connect timeout bounds the dial at shutdown anyway.
		conn, err := p.dialer.DialContext(context.Background(), "tcp", b.addr)
		if err == nil {
			return conn.(*net.TCPConn), b, nil
		}
		p.pool.release(b)
		if tried == nil {
			tried = map[*backend]bool{}
		}
		tried[b] = true
		lastErr = err
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if outOfFiles(err) {
			// Another backend would fail the same way.
			p.noFiles.Add(1)
			return nil, nil, err
		}
		b.connFailures.Add(1)
		p.log.Warn("connect to backend failed", "backend", b.addr, "attempt", attempt+1, "err", err)
		if backendFault(err) {
			b.checker.ReportFailure(fmt.Errorf("connect: %w", err))
		}
	}
	return nil, nil, lastErr
}

// setSocketOptions sets TCP keepalive and TCP_USER_TIMEOUT (when positive) on fd.
func setSocketOptions(fd int, ka net.KeepAliveConfig, userTimeout time.Duration) error {
	var errs []error
	set := func(level, opt, v int) {
		if err := unix.SetsockoptInt(fd, level, opt, v); err != nil {
			errs = append(errs, err)
		}
	}
	if ka.Enable {
		set(unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)
		set(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, int(ka.Idle.Seconds()))
		set(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, int(ka.Interval.Seconds()))
		set(unix.IPPROTO_TCP, unix.TCP_KEEPCNT, ka.Count)
	}
	if userTimeout > 0 {
		set(unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(userTimeout.Milliseconds()))
	}
	if len(errs) > 0 {
		return fmt.Errorf("lb: socket options: %w", errors.Join(errs...))
	}
	return nil
}

// backendFault reports whether a failed connect says something about the backend (it
// refused, timed out or is unreachable), as opposed to this host running out of file
// descriptors or local ports, which must not mark a healthy backend DOWN.
func backendFault(err error) bool {
	switch {
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE),
		errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.ENOBUFS),
		errors.Is(err, syscall.ENOMEM):
		return false
	}
	return true
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// Reload replaces the backend list: backends that stay keep their health state and
// sessions (their weight may change), new ones start DOWN until their first check, and
// removed ones take no new connections while their established sessions run to their end.
// It is what SIGHUP does. Other settings are not reloaded.
func (p *Proxy) Reload(specs []BackendSpec) error {
	if len(specs) == 0 {
		return errors.New("lb: reload: no backends")
	}
	p.pool.mu.Lock()
	byAddr := map[string]*backend{}
	for _, b := range p.pool.backends {
		byAddr[b.addr] = b
	}
	p.pool.mu.Unlock()

	// Build new backends outside the lock: health.New reads the CA file.
	want := map[string]bool{}
	var added []*backend
	for _, s := range specs {
		want[s.Addr] = true
		if b, ok := byAddr[s.Addr]; ok && !b.removed {
			continue
		}
		b, err := p.newBackend(s)
		if err != nil {
			return err
		}
		added = append(added, b)
	}

	p.pool.mu.Lock()
	weights := map[string]int{}
	for _, s := range specs {
		weights[s.Addr] = s.Weight
	}
	var stopped []*backend
	for _, b := range p.pool.backends {
		if b.removed {
			continue
		}
		if want[b.addr] {
			b.weight = weights[b.addr]
			continue
		}
		b.removed = true
		stopped = append(stopped, b)
	}
	for _, b := range added {
		b.weight = weights[b.addr]
		p.pool.backends = append(p.pool.backends, b)
	}
	p.pool.pruneLocked()
	ctx := p.runCtx
	p.pool.mu.Unlock()

	for _, b := range stopped {
		if b.stop != nil {
			b.stop()
		}
		p.log.Info("backend removed", "backend", b.addr)
	}
	for _, b := range added {
		if ctx != nil {
			p.startChecker(ctx, b)
		}
		p.log.Info("backend added", "backend", b.addr, "weight", b.weight)
	}
	return nil
}
