package lb

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// poller tells when an idle connection becomes readable, so that an idle session needs no
// goroutine parked on each of its two connections. It is an epoll instance of its own,
// with every connection registered one-shot: an event disarms it until rearm, so exactly
// one goroutine owns a direction of a session at a time. The epoll instance is itself
// waited on through the runtime's poller, so no thread blocks in epoll_wait.
type poller struct {
	ep    *os.File
	epRaw syscall.RawConn

	// mu guards ready and orders a rearm before the event it causes: rearm holds mu
	// across epoll_ctl, and run takes mu to look the event up.
	mu    sync.Mutex
	ready map[uint64]*direction // by token: what to run when its source is readable
	next  atomic.Uint64         // the last token handed out

	closed atomic.Bool
}

func newPoller() (*poller, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("lb: epoll: %w", os.NewSyscallError("epoll_create1", err))
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lb: epoll: %w", err)
	}
	ep := os.NewFile(uintptr(fd), "epoll")
	raw, err := ep.SyscallConn()
	if err != nil {
		ep.Close()
		return nil, fmt.Errorf("lb: epoll: %w", err)
	}
	return &poller{ep: ep, epRaw: raw, ready: map[uint64]*direction{}}, nil
}

// pollEvents are what a registered connection waits for: data, the peer's end of
// stream, or an error; one-shot.
const pollEvents = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT

// newToken returns a token for add that no other registration had.
func (p *poller) newToken() uint64 { return p.next.Add(1) }

// add registers c, armed: d runs (from run's dispatch) once c is readable.
func (p *poller) add(c syscall.RawConn, tok uint64, d *direction) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.ctl(c, unix.EPOLL_CTL_ADD, tok); err != nil {
		return err
	}
	p.ready[tok] = d
	return nil
}

// rearm waits for c's readability again after its event.
func (p *poller) rearm(c syscall.RawConn, tok uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ctl(c, unix.EPOLL_CTL_MOD, tok)
}

// remove forgets tok; an event already taken for it is dropped. Closing the connection
// takes it out of the epoll set.
func (p *poller) remove(tok uint64) {
	p.mu.Lock()
	delete(p.ready, tok)
	p.mu.Unlock()
}

// ctl runs epoll_ctl inside c's Control, which keeps c's descriptor from being closed
// (and its number reused by another connection) meanwhile.
func (p *poller) ctl(c syscall.RawConn, op int, tok uint64) error {
	ev := unix.EpollEvent{Events: pollEvents, Fd: int32(uint32(tok)), Pad: int32(uint32(tok >> 32))}
	var cerr error
	err := p.epRaw.Control(func(ep uintptr) {
		err := c.Control(func(fd uintptr) {
			cerr = unix.EpollCtl(int(ep), op, int(fd), &ev)
		})
		if err != nil {
			cerr = err
		}
	})
	if err != nil {
		return err
	}
	return os.NewSyscallError("epoll_ctl", cerr)
}

// run waits for events and hands each to dispatch until close; then it returns nil.
func (p *poller) run(dispatch func(func())) error {
	events := make([]unix.EpollEvent, 256)
	for {
		var n int
		var werr error
		err := p.epRaw.Read(func(fd uintptr) bool {
			n, werr = unix.EpollWait(int(fd), events, 0)
			if werr == unix.EINTR {
				n, werr = 0, nil
			}
			return n > 0 || werr != nil // else wait until the epoll instance is readable
		})
		if p.closed.Load() {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lb: poller: %w", err)
		}
		if werr != nil {
			return fmt.Errorf("lb: poller: %w", os.NewSyscallError("epoll_wait", werr))
		}
		p.mu.Lock()
		for _, ev := range events[:n] {
			tok := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			if d := p.ready[tok]; d != nil {
				dispatch(d.run)
			}
		}
		p.mu.Unlock()
	}
}

// close stops run. Registered connections stay open.
func (p *poller) close() error {
	p.closed.Store(true)
	return p.ep.Close()
}
