package lb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// session is one proxied client connection: the client's socket, the socket to its
// backend, and the bytes moving between them. It is a state machine driven by its loop's
// events; it has no goroutine of its own.
type session struct {
	p *Proxy
	l *loop
	b *backend // connected or being connected to

	id             uint64 // in the loop; a new one for each connect attempt
	state          sessionState
	client, server endpoint
	up, down       flow      // client to server, server to client
	queued         bool      // in the loop's list of sessions to run again
	conn           connEntry // the client's and local addresses, with the connection-table sync; else zero

	attempt int               // connect attempts made, less one
	tried   map[*backend]bool // backends whose connect failed; allocated on the first failure
	lastErr error             // of the last failed connect

	// Read by other goroutines (the idle sweep).
	lastActive atomic.Int64  // unix nanoseconds of the last byte moved either way
	open       atomic.Uint32 // upOpen | downOpen: directions whose source has not ended
}

type sessionState uint8

const (
	connecting sessionState = iota
	established
	closed
)

// Bits of session.open.
const (
	upOpen   = 1 << 0
	downOpen = 1 << 1
)

// endpoint is one of a session's sockets, with what its edge-triggered events said and
// the system calls since have not used up.
type endpoint struct {
	fd                 int
	readable, writable bool
}

// flow is one way through a session: what src sends is written to dst.
type flow struct {
	src, dst *endpoint
	buf      *pipe  // bytes read from src and not yet written to dst; nil when none
	bit      uint32 // in session.open
	toServer bool
	ended    bool // src ended and the end was passed on
}

// budget is how many chunks a flow moves per event before the loop's other sessions get
// a turn.
const budget = 16

// optionsDelay is how long a session is established before its server-side socket gets
// TCP keepalive and TCP_USER_TIMEOUT (the client side inherits them from the listening
// socket). Both matter only for connections that stay, and a short connection is spared
// four or five system calls.
const optionsDelay = time.Second

// open starts a session for the accepted client socket fd, whose client is peer (known
// with the connection-table sync on).
func (p *Proxy) open(fd int, peer netip.AddrPort) {
	l := p.loops[p.nextLoop.Add(1)%uint64(len(p.loops))]
	s := &session{p: p, l: l, client: endpoint{fd: fd}}
	if p.sync != nil {
		s.conn = connOf(fd, peer)
	}
	s.up = flow{src: &s.client, dst: &s.server, bit: upOpen, toServer: true}
	s.down = flow{src: &s.server, dst: &s.client, bit: downOpen}
	s.dial()
}

// errMustWait says every eligible backend is full and the connection may wait in the
// queue for a slot.
var errMustWait = errors.New("lb: wait for a backend slot")

// dial picks a backend and starts a connect to it; when the connect fails at once, it
// marks that backend and picks another, up to the retries, and then refuses the client.
// It runs on the goroutine that owns s: the accepting one, a helper that waited in the
// queue or resolved a name, or s's loop after a failed connect. Once the connect is
// under way, s belongs to its loop.
func (s *session) dial() {
	for ; s.attempt <= s.p.cfg.Retries; s.attempt++ {
		b, err := s.p.pool.tryAcquire(s.tried)
		if errors.Is(err, errMustWait) {
			go s.dialQueued()
			return
		}
		if err != nil {
			s.refuse(s.withLast(err))
			return
		}
		if s.connect(b) {
			return
		}
		if s.stop() {
			break
		}
	}
	s.refuse(s.lastErr)
}

// dialQueued waits in the queue for a backend slot and goes on as dial.
func (s *session) dialQueued() {
	ctx := s.p.runCtx
	if ctx == nil {
		ctx = context.Background()
	}
	b, err := s.p.pool.acquire(ctx, s.tried, s.p.cfg.QueueTimeout)
	if err != nil {
		s.refuse(s.withLast(err))
		return
	}
	if s.connect(b) {
		return
	}
	if s.stop() {
		s.refuse(s.lastErr)
		return
	}
	s.attempt++
	s.dial()
}

// withLast adds the last connect error to err, if there was one.
func (s *session) withLast(err error) error {
	if s.lastErr != nil {
		return fmt.Errorf("%w (after %v)", err, s.lastErr)
	}
	return err
}

// stop reports whether s should not try another backend: the proxy is stopping, or the
// last connect failed for want of a file descriptor, which another backend would too.
func (s *session) stop() bool {
	return (s.p.runCtx != nil && s.p.runCtx.Err() != nil) || outOfFiles(s.lastErr)
}

// connect starts a non-blocking connect to b, whose slot s holds; it reports whether the
// connect is under way (s now belongs to its loop, or to a goroutine resolving b's name).
// When it is not, the failure is accounted for.
func (s *session) connect(b *backend) bool {
	if s.attempt > 0 {
		s.p.retried.Add(1)
	}
	if b.sockaddr == nil {
		go func() {
			sa, err := b.resolve(s.p.cfg.ConnectTimeout)
			if err == nil && s.connectTo(b, sa) {
				return
			}
			if err != nil {
				s.connectFailed(b, err)
			}
			if s.stop() {
				s.refuse(s.lastErr)
				return
			}
			s.attempt++
			s.dial()
		}()
		return true
	}
	return s.connectTo(b, b.sockaddr)
}

// connectTo starts the connect to b at sa; see connect.
func (s *session) connectTo(b *backend, sa *sockaddr) bool {
	fd, err := unix.Socket(sa.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		s.connectFailed(b, os.NewSyscallError("socket", err))
		return false
	}
	// Small writes go out at once, as with Go's net package; the client side inherits
	// this from the listening socket.
	_ = setNoDelay(fd)
	if err := connect(fd, sa); err != nil && err != unix.EINPROGRESS {
		closeFD(fd)
		s.connectFailed(b, os.NewSyscallError("connect", err))
		return false
	}
	s.b = b
	s.server = endpoint{fd: fd}
	s.state = connecting
	if err := s.l.register(s); err != nil {
		closeFD(fd)
		s.connectFailed(b, err)
		return false
	}
	return true
}

// connectFailed gives back b's slot and records the failure; a failure that says
// something about b marks it DOWN.
func (s *session) connectFailed(b *backend, err error) {
	p := s.p
	p.pool.release(b)
	if s.tried == nil {
		s.tried = map[*backend]bool{}
	}
	s.tried[b] = true
	s.lastErr = err
	if outOfFiles(err) {
		p.noFiles.Add(1)
		return
	}
	b.connFailures.Add(1)
	if errors.Is(err, os.ErrDeadlineExceeded) && b.heardSince(time.Now().Add(-p.cfg.ConnectTimeout)) {
		// The backend sent bytes on its other sessions while this connect waited: it is
		// alive and slow to accept (its accept queue full under load), not gone. Marking it
		// DOWN would close every session it serves and send their clients, all at once,
		// to the others; the prober looks at it now instead, and its fall count decides.
		b.busyTimeouts.Add(1)
		p.log.Warn("connect to backend timed out while it is sending on other sessions; probing it", "backend", b.addr, "attempt", s.attempt+1)
		b.checker.Wake()
		return
	}
	p.log.Warn("connect to backend failed", "backend", b.addr, "attempt", s.attempt+1, "err", err)
	if backendFault(err) {
		b.checker.ReportFailure(fmt.Errorf("connect: %w", err))
	}
}

// connectDone is the end of a connect attempt, told by an event on the server socket.
func (s *session) connectDone() {
	err := socketError(s.server.fd)
	if err == nil {
		s.established()
		return
	}
	s.retry(os.NewSyscallError("connect", err))
}

// connectTimedOut fails a connect that took longer than the connect timeout.
func (s *session) connectTimedOut() {
	s.retry(fmt.Errorf("connect: %w after %v", os.ErrDeadlineExceeded, s.p.cfg.ConnectTimeout))
}

// retry drops the failed connect of s and tries the next backend.
func (s *session) retry(err error) {
	s.l.forget(s)
	closeFD(s.server.fd)
	s.server = endpoint{fd: -1}
	s.connectFailed(s.b, err)
	if s.stop() {
		s.refuse(s.lastErr)
		return
	}
	s.attempt++
	s.dial()
}

// refuse closes the client's socket with a reset, so the client fails at once.
func (s *session) refuse(why error) {
	p := s.p
	p.refused.Add(1)
	if p.log.Enabled(context.Background(), slog.LevelDebug) {
		var peer string
		if sa, err := unix.Getpeername(s.client.fd); err == nil {
			peer = sockaddrString(sa)
		}
		p.log.Debug("refused client", "client", peer, "err", why)
	}
	_ = unix.SetsockoptLinger(s.client.fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1})
	closeFD(s.client.fd)
	s.state = closed
	p.endConn()
}

// established starts moving bytes once the server socket is connected.
func (s *session) established() {
	p, b := s.p, s.b
	s.state = established
	b.connTotal.Add(1)
	p.nActive.Add(1)
	s.open.Store(upOpen | downOpen)
	s.lastActive.Store(s.l.now.UnixNano())
	if !p.pool.addSession(b, s) {
		s.finish(false) // b went DOWN between the connect and now
		return
	}
	if err := s.l.watchClient(s); err != nil {
		p.log.Error("session failed to start", "err", err)
		s.finish(true)
		return
	}
	// The client may have sent bytes already; try, an EAGAIN says to wait.
	s.client.readable, s.client.writable = true, true
	s.server.writable = true
	s.l.young.push(s.l.now.Add(optionsDelay), s, s.id)
	s.pump()
}

// grownUp gives a session that lasted optionsDelay its server-side socket options.
func (s *session) grownUp() {
	if s.state != established {
		return
	}
	if err := setSocketOptions(s.server.fd, s.p.keepAlive, s.p.cfg.TCPUserTimeout); err != nil {
		s.p.log.Debug("backend socket options", "backend", s.b.addr, "err", err)
	}
}

// event records what an epoll event says of one of the session's sockets and acts on it.
func (s *session) event(server bool, events uint32) {
	if s.state == closed {
		return
	}
	e := &s.client
	if server {
		e = &s.server
	}
	if events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		e.readable = true
	}
	if events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		e.writable = true
	}
	if s.state == connecting {
		if server {
			s.connectDone()
		}
		return
	}
	s.pump()
}

// pump moves what it can both ways.
func (s *session) pump() {
	if s.state != established {
		return
	}
	s.up.move(s)
	if s.state == established {
		s.down.move(s)
	}
}

// move moves bytes from src to dst until one of them would block, src ends (passed on
// as a half-close, or closing the session when the other way has ended too), or the
// budget is used up (the loop runs s again before it waits).
func (f *flow) move(s *session) {
	for chunks := 0; ; {
		if f.buf != nil && f.buf.n > 0 {
			if !f.dst.writable {
				return
			}
			n, err := f.buf.drain(f.dst.fd)
			switch {
			case err == unix.EAGAIN:
				f.dst.writable = false
				return
			case err == unix.EINTR:
				continue
			case err != nil:
				s.finish(isReset(err))
				return
			}
			f.buf.n -= n
			f.count(s, n)
			continue
		}
		if f.ended || !f.src.readable {
			return
		}
		if chunks == budget {
			s.l.runLater(s)
			return
		}
		chunks++
		if f.buf == nil {
			f.buf = s.l.getPipe()
		}
		n, err := f.buf.fill(f.src.fd)
		switch {
		case err == unix.EAGAIN:
			f.src.readable = false
			s.l.putPipe(f.buf)
			f.buf = nil
			return
		case err == unix.EINTR:
			continue
		case err != nil:
			s.finish(isReset(err))
			return
		case n == 0:
			f.end(s)
			return
		}
		f.buf.n = n
	}
}

// end passes on the end of src's stream: a half-close of dst, or, when the other way has
// ended too, the session's close (which sends the last FIN without a shutdown first).
func (f *flow) end(s *session) {
	f.ended = true
	s.l.putPipe(f.buf)
	f.buf = nil
	if s.open.And(^f.bit)&^f.bit == 0 {
		s.finish(false)
		return
	}
	_ = shutdownWrite(f.dst.fd)
}

// count accounts for n bytes moved.
func (f *flow) count(s *session, n int) {
	if f.toServer {
		s.b.bytesIn.Add(uint64(n))
	} else {
		s.b.bytesOut.Add(uint64(n))
		s.b.lastHeard.Store(s.l.now.UnixNano())
	}
	s.lastActive.Store(s.l.now.UnixNano())
}

// close asks the session's loop to close it; with reset, the client gets an RST. Any
// goroutine may call it, for an established session.
func (s *session) close(reset bool) { s.l.post(s, reset) }

// finish closes both sockets and gives back what the session held. It runs on the loop.
func (s *session) finish(reset bool) {
	if s.state == closed {
		return
	}
	was := s.state
	s.state = closed
	s.open.Store(0)
	s.l.forget(s)
	if reset {
		_ = unix.SetsockoptLinger(s.client.fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1})
	}
	closeFD(s.client.fd)
	closeFD(s.server.fd)
	for _, f := range []*flow{&s.up, &s.down} {
		if f.buf != nil {
			s.l.putPipe(f.buf)
			f.buf = nil
		}
	}
	if was == established {
		s.p.endSession(s)
		return
	}
	s.p.pool.release(s.b)
	s.p.endConn()
}

// idleLimit is how long the session may stay silent: the idle timeout of each direction
// still open, the shorter one; 0 for none.
func (s *session) idleLimit() time.Duration {
	open := s.open.Load()
	var limit time.Duration
	if idle := s.p.cfg.ClientIdleTimeout; open&upOpen != 0 && idle > 0 {
		limit = idle
	}
	if idle := s.p.cfg.ServerIdleTimeout; open&downOpen != 0 && idle > 0 && (limit == 0 || idle < limit) {
		limit = idle
	}
	return limit
}

// tooIdle reports whether the session has been silent for its idle limit at now.
func (s *session) tooIdle(now time.Time) bool {
	limit := s.idleLimit()
	return limit > 0 && now.Sub(time.Unix(0, s.lastActive.Load())) >= limit
}

// pipe holds the bytes of a flow between its read and its write: a kernel pipe, which
// splice(2) fills and drains without the bytes entering user space, or, when no pipe can
// be had (out of file descriptors), a buffer.
type pipe struct {
	r, w int
	n    int    // bytes held
	buf  []byte // when not a kernel pipe
	off  int    // of the bytes held in buf
}

// maxSplice is how much one splice moves at most, and the size of the pipes, as in the
// standard library's splice.
const maxSplice = 1 << 20

// fill reads from fd into the empty pipe.
func (pp *pipe) fill(fd int) (int, error) {
	if pp.buf != nil {
		n, err := unix.Read(fd, pp.buf)
		pp.off = 0
		if err != nil {
			return 0, err
		}
		return n, nil
	}
	return splice(fd, pp.w, maxSplice)
}

// drain writes what the pipe holds to fd, or some of it.
func (pp *pipe) drain(fd int) (int, error) {
	if pp.buf != nil {
		n, err := unix.Write(fd, pp.buf[pp.off:pp.off+pp.n])
		if err != nil {
			return 0, err
		}
		pp.off += n
		return n, nil
	}
	return splice(pp.r, fd, pp.n)
}

// maxPipes is how many empty pipes a loop keeps: one is needed per flow moving bytes at
// the same moment, not one per session.
const maxPipes = 32

// getPipe returns an empty pipe, or a buffer when no pipe can be made.
func (l *loop) getPipe() *pipe {
	if n := len(l.pipes); n > 0 {
		pp := l.pipes[n-1]
		l.pipes[n-1] = nil
		l.pipes = l.pipes[:n-1]
		return pp
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return &pipe{r: -1, w: -1, buf: make([]byte, 32<<10)}
	}
	// A smaller pipe works too, with more system calls.
	_, _ = unix.FcntlInt(uintptr(fds[0]), unix.F_SETPIPE_SZ, maxSplice)
	return &pipe{r: fds[0], w: fds[1]}
}

// putPipe keeps pp for reuse if it is an empty kernel pipe and there is room, else
// closes it.
func (l *loop) putPipe(pp *pipe) {
	if pp == nil || pp.buf != nil {
		return
	}
	if pp.n == 0 && len(l.pipes) < maxPipes {
		l.pipes = append(l.pipes, pp)
		return
	}
	unix.Close(pp.r)
	unix.Close(pp.w)
}

// closePipes closes the pipes kept for reuse.
func (l *loop) closePipes() {
	for _, pp := range l.pipes {
		unix.Close(pp.r)
		unix.Close(pp.w)
	}
	l.pipes = nil
}

// sockaddrString formats a socket address as host:port.
func sockaddrString(sa unix.Sockaddr) string {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return (&net.TCPAddr{IP: a.Addr[:], Port: a.Port}).String()
	case *unix.SockaddrInet6:
		return (&net.TCPAddr{IP: a.Addr[:], Port: a.Port}).String()
	}
	return ""
}
