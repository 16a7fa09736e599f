// Package lb is lbproxy's engine: a TCP proxy that spreads client connections over
// health-checked backends (round-robin or least-connections, with weights), retries a failed
// connect on another backend, and closes the sessions of a backend that goes DOWN.
//
// Sessions have no goroutines: a few event loops, each an epoll instance of the proxy's
// own with one goroutine, accept nothing but events for their sessions' sockets and move
// the bytes with splice(2), so they never enter user space.
package lb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hacp/hacp/internal/certreload"
	"github.com/hacp/hacp/pkg/health"
)

// Proxy accepts client connections and forwards each to one backend.
type Proxy struct {
	cfg       *Config
	log       *slog.Logger
	pool      *pool
	keepAlive net.KeepAliveConfig

	ln       *net.TCPListener
	lnFile   *os.File        // a duplicate of ln's descriptor, which the proxy accepts from
	lnRaw    syscall.RawConn // lnFile's
	statusLn net.Listener
	tlsLn    net.Listener // --status-tls-addr
	sync     *connSync    // nil unless --sync-listen

	checkTLS *health.ClientTLS // every backend's https checks: check-ca, check-cert
	certs    *certreload.Set   // reloads checkTLS's files

	runCtx   context.Context // set by Run; checkers of backends added by Reload use it
	loops    []*loop         // set by Run
	nextLoop atomic.Uint64   // the loop of the last session, round-robin
	nextID   atomic.Uint64   // the last session id handed out
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
		cfg:       cfg,
		log:       log,
		keepAlive: keepAlive(cfg.TCPKeepAlive),
		pool: &pool{
			leastconn: cfg.Balance == "leastconn",
			maxConn:   cfg.BackendMaxConn,
			maxQueue:  cfg.MaxQueue,
			slowStart: cfg.SlowStart,
		},
	}
	checkTLS, err := health.NewClientTLS(health.Config{CAFile: cfg.CheckCA, Insecure: cfg.CheckInsecure, ServerName: cfg.CheckServerName,
		ClientCert: cfg.CheckCert, ClientKey: cfg.CheckKey}, log)
	if err != nil {
		return nil, fmt.Errorf("lb: %w", err)
	}
	p.checkTLS, p.certs = checkTLS, certreload.NewSet(log, checkTLS.Items()...)
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
	b := &backend{addr: s.Addr, sockaddr: backendSockaddr(s.Addr), weight: s.Weight, sessions: map[*session]struct{}{}}
	hc := health.Config{
		URL:          checkURL(p.cfg, s.Addr),
		Interval:     p.cfg.CheckInterval,
		FastInterval: p.cfg.CheckFastInterval,
		Timeout:      p.cfg.CheckTimeout,
		Rise:         p.cfg.Rise,
		Fall:         p.cfg.Fall,
		TLS:          p.checkTLS,
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
		p.log.Warn("backend state changed", attrs...)
		return
	}
	// A backend coming UP is the normal course (start-up, a master back after an upgrade).
	p.log.Info("backend state changed", attrs...)
}

// Listen opens the client listener; Run calls it when it was not called before. It is
// separate so that a program can report "address already in use" before anything starts.
func (p *Proxy) Listen() error {
	if p.ln != nil {
		return nil
	}
	// Keepalive, TCP_USER_TIMEOUT and TCP_NODELAY are set once on the listening socket:
	// accepted sockets inherit them, which saves five system calls per client connection.
	// So does IP_TRANSPARENT (see handover.go), whose failure is not fatal.
	var terr error
	lc := net.ListenConfig{
		KeepAlive: -1,
		Control: func(network, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = setSocketOptions(int(fd), p.keepAlive, p.cfg.TCPUserTimeout)
				if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
					serr = errors.Join(serr, err)
				}
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
	// A listener's RawConn cannot wait for readability, and net's Accept does more
	// than lbproxy needs (see accept): accept from a duplicate of its descriptor, which
	// the os package registers with the runtime's poller.
	if p.lnFile, err = p.ln.File(); err == nil {
		p.lnRaw, err = p.lnFile.SyscallConn()
	}
	if err != nil {
		p.closeListener()
		p.ln = nil
		return fmt.Errorf("lb: listen on %s: %w", p.cfg.Listen, err)
	}
	if p.cfg.StatusAddr != "" {
		sl, err := net.Listen("tcp", p.cfg.StatusAddr)
		if err != nil {
			p.closeListener()
			p.ln = nil
			return fmt.Errorf("lb: status listener on %s: %w", p.cfg.StatusAddr, err)
		}
		p.statusLn = sl
	}
	if p.tlsLn, err = p.cfg.StatusTLS.Listen(); err != nil {
		p.closeListener()
		p.ln = nil
		if p.statusLn != nil {
			p.statusLn.Close()
			p.statusLn = nil
		}
		return fmt.Errorf("lb: %w", err)
	}
	if p.cfg.SyncListen != "" {
		cs, err := newConnSync(p)
		if err != nil {
			p.closeListener()
			p.ln = nil
			if p.statusLn != nil {
				p.statusLn.Close()
				p.statusLn = nil
			}
			if p.tlsLn != nil {
				p.tlsLn.Close()
				p.tlsLn = nil
			}
			return err
		}
		p.sync = cs
	}
	return nil
}

// closeListener stops accepting clients: it closes the listener and the duplicate of
// its descriptor that the accept loop waits on.
func (p *Proxy) closeListener() {
	p.ln.Close()
	if p.lnFile != nil {
		p.lnFile.Close()
	}
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

// StatusTLSAddr is the TLS status listener's address, or nil.
func (p *Proxy) StatusTLSAddr() net.Addr {
	if p.tlsLn == nil {
		return nil
	}
	return p.tlsLn.Addr()
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
	go p.certs.Run(ctx, certreload.DefaultInterval)
	for _, b := range backends {
		p.startChecker(ctx, b)
	}
	p.waitFirstChecks(backends)

	var statusSrv *http.Server
	if p.statusLn != nil {
		statusSrv = &http.Server{Handler: p.StatusHandler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = statusSrv.Serve(p.statusLn) }()
	}
	if p.tlsLn != nil {
		tlsSrv := &http.Server{Handler: p.StatusHandler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = tlsSrv.Serve(p.tlsLn) }()
		defer tlsSrv.Close()
	}
	p.log.Info("lbproxy listening", "addr", p.ln.Addr().String(), "backends", len(backends), "balance", p.cfg.Balance)
	if limit := openFileLimit(); p.cfg.MaxConn > 0 && limit > 0 && limit < uint64(2*p.cfg.MaxConn+fdReserve) {
		p.log.Warn("the open-file limit is below what --maxconn needs (two descriptors a connection); clients beyond it wait in the listen backlog",
			"open_file_limit", limit, "maxconn", p.cfg.MaxConn, "want", 2*p.cfg.MaxConn+fdReserve)
	}

	loopsDone, err := p.startLoops()
	if err != nil {
		if p.sync != nil {
			p.sync.close()
		}
		return err
	}
	if p.cfg.MaxConn > 0 {
		p.slots = make(chan struct{}, p.cfg.MaxConn)
	}

	// The sync outlives ctx until the drain is over: a peer that takes the VIP over while
	// this proxy drains must hear that it is alive, or it resets the very connections the
	// drain is finishing.
	syncDone := make(chan struct{})
	syncCtx, stopSync := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSync()
	go func() {
		defer close(syncDone)
		if p.sync != nil {
			p.log.Info("sharing the connection table", "listen", p.cfg.SyncListen, "peers", p.cfg.SyncPeers)
			p.sync.run(syncCtx)
		}
	}()

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
	p.closeListener()
	<-acceptDone
	p.drain()
	<-sweepDone
	p.stopLoops(loopsDone)
	stopSync()
	<-syncDone
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
		fd, peer, err := p.accept()
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
		p.open(fd, peer)
	}
}

// accept returns the next client socket, non-blocking, waiting in the runtime's poller
// while there is none, and, with the connection-table sync on, the client's address. It
// takes the socket as a bare descriptor: net's Accept would also ask for both of its
// addresses and register it with the runtime's poller, four system calls that a session
// driven by a loop does not need.
func (p *Proxy) accept() (int, netip.AddrPort, error) {
	var nfd int
	var aerr error
	var rsa *unix.RawSockaddrAny
	if p.sync != nil {
		rsa = new(unix.RawSockaddrAny)
	}
	err := p.lnRaw.Read(func(fd uintptr) bool {
		for {
			r, err := accept4(int(fd), rsa)
			switch err {
			case nil:
				nfd, aerr = r, nil
				return true
			case unix.EINTR, unix.ECONNABORTED:
				continue // as net's Accept: the next one
			case unix.EAGAIN:
				return false // wait until the listener is readable
			}
			aerr = os.NewSyscallError("accept4", err)
			return true
		}
	})
	if err != nil {
		return -1, netip.AddrPort{}, err
	}
	var peer netip.AddrPort
	if rsa != nil && aerr == nil {
		peer = rawAddrPort(rsa)
	}
	return nfd, peer, aerr
}

// startLoops starts one event loop per processor the runtime uses; the returned channel
// is closed when they have all stopped.
func (p *Proxy) startLoops() (chan struct{}, error) {
	n := max(1, runtime.GOMAXPROCS(0))
	for range n {
		l, err := newLoop(p)
		if err != nil {
			for _, l := range p.loops {
				l.close()
			}
			p.loops = nil
			return nil, err
		}
		p.loops = append(p.loops, l)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, l := range p.loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.run(); err != nil {
				p.log.Error("event loop failed; its sessions will not move", "err", err)
			}
		}()
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	return done, nil
}

// stopLoops stops the event loops once every session has ended.
func (p *Proxy) stopLoops(done chan struct{}) {
	for _, l := range p.loops {
		l.close()
	}
	<-done
	for _, l := range p.loops {
		l.closePipes()
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

// ReloadSync applies a new --sync-peer list to the running connection-table sync. Starting
// or stopping the sync, or moving its --sync-listen address, needs a restart.
func (p *Proxy) ReloadSync(listen string, peers []string) error {
	switch {
	case p.sync == nil && listen == "":
		return nil
	case p.sync == nil:
		return errors.New("lb: reload: sync-listen was set; restart lbproxy to start the connection-table sync")
	case listen != p.cfg.SyncListen:
		return fmt.Errorf("lb: reload: sync-listen changed from %q to %q; restart lbproxy to apply it", p.cfg.SyncListen, listen)
	}
	return p.sync.setPeers(peers)
}

// Reload replaces the backend list: backends that stay keep their health state and
// sessions (their weight may change), new ones start DOWN until their first check, and
// removed ones take no new connections while their established sessions run to their end.
// It is what SIGHUP does, with ReloadSync. Other settings are not reloaded.
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

	p.certs.Trigger() // SIGHUP: the check certificates too
	// Build new backends outside the lock.
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

// ReloadCertificates reads check-ca and check-cert/check-key again now, rather than at the
// next poll (certreload.DefaultInterval), and returns how many changed.
func (p *Proxy) ReloadCertificates() int { return p.certs.ReloadNow() }
