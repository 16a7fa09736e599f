package lb

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// session is one proxied client connection. An idle session has no goroutine: each of its
// two directions waits in the proxy's poller while its source is silent, and a worker
// moves the bytes when some arrive. The worker stays with the direction while bytes keep
// coming, waiting in the runtime's poller as a goroutine per direction would, and hands
// it back to the proxy's poller once the source has been silent for a moment (linger).
type session struct {
	p              *Proxy
	b              *backend
	client, server *net.TCPConn
	up, down       direction    // client to server, server to client
	lastActive     atomic.Int64 // unix nanoseconds of the last byte moved either way

	mu     sync.Mutex
	open   int  // directions whose source has not ended
	closed bool // both connections closed, the slot released
}

// direction is one way through a session: what src sends is written to dst. Its fields
// are set before it first runs; then one goroutine at a time owns it: the one that ran
// it, or the one the poller's event starts.
type direction struct {
	s        *session
	src, dst syscall.RawConn
	token    uint64 // in the poller
	toServer bool   // client to server (else server to client)
	polled   bool   // added to the poller
	open     bool   // src has not ended; guarded by s.mu
}

// conns returns the direction's source and destination connections.
func (d *direction) conns() (src, dst *net.TCPConn) {
	if d.toServer {
		return d.s.client, d.s.server
	}
	return d.s.server, d.s.client
}

// idleTimeout is how long the direction's source may be silent.
func (d *direction) idleTimeout() time.Duration {
	if d.toServer {
		return d.s.p.cfg.ClientIdleTimeout
	}
	return d.s.p.cfg.ServerIdleTimeout
}

// count adds n moved bytes to the backend's counter for the direction.
func (d *direction) count(n int64) {
	if d.toServer {
		d.s.b.bytesIn.Add(uint64(n))
	} else {
		d.s.b.bytesOut.Add(uint64(n))
	}
}

// linger is how long a worker waits for more bytes from a source before it hands the
// direction to the poller: long enough for the next request or response of a busy
// connection, short enough that few idle sessions hold a goroutine.
const linger = 5 * time.Millisecond

// newSession returns the session of client through server on b; start runs it.
func newSession(p *Proxy, b *backend, client, server *net.TCPConn) (*session, error) {
	cr, err := client.SyscallConn()
	if err != nil {
		return nil, err
	}
	sr, err := server.SyscallConn()
	if err != nil {
		return nil, err
	}
	s := &session{p: p, b: b, client: client, server: server, open: 2}
	s.up = direction{s: s, src: cr, dst: sr, toServer: true, open: true}
	s.down = direction{s: s, src: sr, dst: cr, open: true}
	s.up.token, s.down.token = p.poller.newToken(), p.poller.newToken()
	s.lastActive.Store(time.Now().UnixNano())
	return s, nil
}

// start runs both directions: the server's on a worker, the client's on the calling
// goroutine.
func (s *session) start() {
	s.p.workers.run(s.down.run)
	s.up.run()
}

// run moves what src sends to dst until src has been silent for the linger time, and
// then leaves the direction waiting in the poller; or it passes src's end of stream on
// as a half-close, or closes the session on an error.
func (d *direction) run() {
	s := d.s
	for {
		err := d.copy()
		switch {
		case errors.Is(err, errWouldBlock):
			if err := d.poll(); err != nil {
				s.close(false) // closed meanwhile
			}
			return
		case err == nil:
			s.mu.Lock()
			d.open = false
			s.open--
			both := s.open == 0
			s.mu.Unlock()
			if both {
				// Both sources have ended: closing sends the last FIN, without a
				// shutdown(2) first (one system call less per short connection).
				s.close(false)
				return
			}
			_, dst := d.conns()
			_ = dst.CloseWrite()
			return
		default:
			s.close(isReset(err))
			return
		}
	}
}

// poll hands the direction to the poller, which runs it again when src is readable.
func (d *direction) poll() error {
	if d.polled {
		return d.s.p.poller.rearm(d.src, d.token)
	}
	d.polled = true
	if err := d.s.p.poller.add(d.src, d.token, d); err != nil {
		return err
	}
	d.s.mu.Lock()
	closed := d.s.closed
	d.s.mu.Unlock()
	if closed {
		d.s.p.poller.remove(d.token) // close removed it before it was there
	}
	return nil
}

var errWouldBlock = errors.New("lb: would block")

// lingerFrom sets src's read deadline: copy waits for src in the runtime's poller until
// linger after now, and then leaves it to the proxy's poller. It returns the deadline.
func (d *direction) lingerFrom(now time.Time) time.Time {
	until := now.Add(linger)
	src, _ := d.conns()
	_ = src.SetReadDeadline(until)
	return until
}

// moved accounts for n bytes moved and pushes the linger deadline on when it is near, so
// that a busy direction keeps its worker.
func (d *direction) moved(n int64, until time.Time) time.Time {
	now := time.Now()
	d.count(n)
	d.s.lastActive.Store(now.UnixNano())
	if until.Sub(now) < linger/2 {
		until = d.lingerFrom(now)
	}
	return until
}

// copy moves bytes from src to dst until src has been silent for the linger time
// (errWouldBlock), ends (nil) or fails. The bytes go through a pipe with splice(2) and
// never enter user space.
func (d *direction) copy() error {
	pp := getPipe()
	if pp == nil {
		return d.copyBuffered() // out of file descriptors for a pipe
	}
	defer func() { putPipe(pp) }()
	// The callbacks are made once per call, not once per chunk: a function handed to a
	// RawConn escapes to the heap with what it captures, and four allocations per chunk
	// were a measurable share of a round trip's CPU.
	var n int64
	var serr error
	fill := func(fd uintptr) bool {
		n, serr = unix.Splice(int(fd), nil, pp.w, nil, maxSplice, unix.SPLICE_F_NONBLOCK)
		return serr != unix.EAGAIN && serr != unix.EINTR // else wait until src is readable
	}
	drain := func(fd uintptr) bool {
		n, serr = unix.Splice(pp.r, nil, int(fd), nil, int(pp.n), unix.SPLICE_F_NONBLOCK)
		return serr != unix.EAGAIN && serr != unix.EINTR // else wait until dst is writable
	}
	until := d.lingerFrom(time.Now())
	for {
		err := d.src.Read(fill)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return errWouldBlock
		case err != nil:
			return err
		case serr != nil:
			return os.NewSyscallError("splice", serr)
		case n == 0:
			return nil
		}
		pp.n = n
		for pp.n > 0 {
			err := d.dst.Write(drain)
			switch {
			case err != nil:
				return err
			case serr != nil:
				return os.NewSyscallError("splice", serr)
			}
			pp.n -= n
			until = d.moved(n, until)
		}
	}
}

// copyBuffered is copy through user space, for when no pipe can be had.
func (d *direction) copyBuffered() error {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	var n int
	var b []byte // what is still to be written
	var serr error
	fill := func(fd uintptr) bool {
		n, serr = unix.Read(int(fd), buf)
		return serr != unix.EAGAIN && serr != unix.EINTR
	}
	drain := func(fd uintptr) bool {
		n, serr = unix.Write(int(fd), b)
		return serr != unix.EAGAIN && serr != unix.EINTR
	}
	until := d.lingerFrom(time.Now())
	for {
		err := d.src.Read(fill)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return errWouldBlock
		case err != nil:
			return err
		case serr != nil:
			return os.NewSyscallError("read", serr)
		case n == 0:
			return nil
		}
		for b = buf[:n]; len(b) > 0; {
			err := d.dst.Write(drain)
			switch {
			case err != nil:
				return err
			case serr != nil:
				return os.NewSyscallError("write", serr)
			}
			b = b[n:]
			until = d.moved(int64(n), until)
		}
	}
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// idleLimitLocked is how long the session may stay silent: the idle timeout of each
// direction still open, the shorter one; 0 for none.
func (s *session) idleLimitLocked() time.Duration {
	var limit time.Duration
	for _, d := range []*direction{&s.up, &s.down} {
		if idle := d.idleTimeout(); d.open && idle > 0 && (limit == 0 || idle < limit) {
			limit = idle
		}
	}
	return limit
}

// tooIdle reports whether the session has been silent for its idle limit at now.
func (s *session) tooIdle(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	limit := s.idleLimitLocked()
	return !s.closed && limit > 0 && now.Sub(time.Unix(0, s.lastActive.Load())) >= limit
}

// close ends both connections and the session's hold on its backend slot; with reset,
// the client gets an RST, as the backend's reset is passed on. A worker still moving
// bytes finds the connections closed and stops.
func (s *session) close(reset bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	if reset {
		_ = s.client.SetLinger(0)
	}
	s.client.Close()
	s.server.Close()
	s.p.poller.remove(s.up.token)
	s.p.poller.remove(s.down.token)
	s.p.endSession(s)
}

// pipe is a pair of pipe descriptors for splice, with the count of bytes in it.
type pipe struct {
	r, w int
	n    int64
}

// maxSplice is how much one splice moves at most, and the size of the pipes, as in the
// standard library's splice.
const maxSplice = 1 << 20

// pipes keeps a few pipes for reuse; a busy proxy needs one per direction moving bytes
// at the same moment, not one per session.
var pipes = make(chan *pipe, 64)

// getPipe returns a pipe, or nil when none can be made (out of file descriptors).
func getPipe() *pipe {
	select {
	case pp := <-pipes:
		return pp
	default:
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil
	}
	// A smaller pipe works too, with more system calls.
	_, _ = unix.FcntlInt(uintptr(fds[0]), unix.F_SETPIPE_SZ, maxSplice)
	return &pipe{r: fds[0], w: fds[1]}
}

// putPipe keeps pp for reuse if it is empty and there is room, else closes it.
func putPipe(pp *pipe) {
	if pp.n == 0 {
		select {
		case pipes <- pp:
			return
		default:
		}
	}
	unix.Close(pp.r)
	unix.Close(pp.w)
}
