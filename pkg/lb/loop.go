package lb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// loop runs sessions the way haproxy's threads do: an epoll instance of its own with both
// sockets of each of its sessions registered once, edge-triggered, and one goroutine that
// waits for events and moves the bytes they announce with splice(2). The sockets are not
// in the runtime's poller, so a session costs no goroutine, no runtime poll descriptor
// and no deadline timer, and a short connection no system calls to register and
// unregister them there. The epoll instance itself is waited on through the runtime's
// poller, so no thread blocks in epoll_wait, and its read deadline wakes the loop for
// the earliest connect timeout.
//
// A session belongs to one loop for life. The goroutine that sets it up owns it until its
// server socket is registered; from then on only the loop's goroutine touches it, and
// other goroutines ask it to close a session with post.
type loop struct {
	p     *Proxy
	ep    *os.File
	epRaw syscall.RawConn

	mu       sync.Mutex
	wake     int                 // eventfd that post writes to; -1 once closed
	sessions map[uint64]*session // by id, the token of the client side (the server's is id+1)
	posted   []closeRequest
	connects fifo      // sessions connecting, by connect deadline
	deadline time.Time // the read deadline set on ep; zero for none

	closed atomic.Bool

	// Used by the loop's goroutine only.
	now    time.Time // when the last wait returned
	events []unix.EpollEvent
	ready  []*session // the sessions of events, looked up under mu in one pass
	again  []*session // sessions that used up their budget with bytes still to move
	young  fifo       // established sessions waiting for their server-side socket options
	pipes  []*pipe    // empty pipes for reuse
}

type closeRequest struct {
	s     *session
	reset bool
}

// wakeToken is the eventfd's token; session ids are even numbers from 2.
const wakeToken = 0

// loopEvents are what a registered socket reports, edge-triggered: bytes, room to write,
// the peer's end of stream, errors.
const loopEvents = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET

func newLoop(p *Proxy) (*loop, error) {
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
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		ep.Close()
		return nil, fmt.Errorf("lb: eventfd: %w", os.NewSyscallError("eventfd", err))
	}
	l := &loop{
		p: p, ep: ep, epRaw: raw, wake: wake,
		sessions: map[uint64]*session{},
		events:   make([]unix.EpollEvent, 128),
		ready:    make([]*session, 128),
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET}
	if err := unix.EpollCtl(fd, unix.EPOLL_CTL_ADD, wake, &ev); err != nil {
		unix.Close(wake)
		ep.Close()
		return nil, fmt.Errorf("lb: epoll: %w", os.NewSyscallError("epoll_ctl", err))
	}
	return l, nil
}

// run waits for events and handles them until close; then it returns nil.
func (l *loop) run() error {
	for {
		n, err := l.wait()
		if l.closed.Load() {
			return nil
		}
		if err != nil {
			return err
		}
		l.now = time.Now()
		l.dispatch(n)
		l.runPosted()
		l.expire()
		l.runAgain()
	}
}

// wait returns the number of events in l.events, waiting for some unless a session has
// bytes left to move; it returns 0 when the deadline for a timeout passed.
func (l *loop) wait() (int, error) {
	l.setDeadline()
	busy := len(l.again) > 0
	var n int
	var werr error
	err := l.epRaw.Read(func(fd uintptr) bool {
		n, werr = epollWait(int(fd), l.events)
		if werr == unix.EINTR {
			n, werr = 0, nil
		}
		return n > 0 || werr != nil || busy // else wait until the epoll instance is readable
	})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The deadline passed. The events that came meanwhile are taken before the
		// timeouts run: a loop short of CPU wakes late, and a connect that completed in
		// that time would otherwise be failed as timed out (and its backend marked DOWN).
		n, werr = 0, nil
		_ = l.epRaw.Control(func(fd uintptr) { n, werr = epollWait(int(fd), l.events) })
		if werr != nil && werr != unix.EINTR {
			return 0, fmt.Errorf("lb: loop: %w", os.NewSyscallError("epoll_wait", werr))
		}
		return max(n, 0), nil
	case err != nil:
		return 0, fmt.Errorf("lb: loop: %w", err)
	case werr != nil:
		return 0, fmt.Errorf("lb: loop: %w", os.NewSyscallError("epoll_wait", werr))
	}
	return n, nil
}

// dispatch hands each event to its session.
func (l *loop) dispatch(n int) {
	woken := false
	l.mu.Lock()
	for i := range l.events[:n] {
		tok := eventToken(&l.events[i])
		if tok == wakeToken {
			woken = true
			continue
		}
		l.ready[i] = l.sessions[tok&^1]
	}
	l.mu.Unlock()
	for i := range l.events[:n] {
		s := l.ready[i]
		if s == nil {
			continue // the wake-up, or a session closed meanwhile
		}
		l.ready[i] = nil
		ev := &l.events[i]
		s.event(eventToken(ev)&1 == 1, ev.Events)
	}
	if woken {
		var buf [8]byte
		l.mu.Lock()
		if l.wake >= 0 {
			_, _ = unix.Read(l.wake, buf[:])
		}
		l.mu.Unlock()
	}
}

func eventToken(ev *unix.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

// register adds s, whose server socket s.server.fd is connecting, to the loop: from
// now on the loop owns s. It fails, and s stays with the caller, when the socket cannot
// be added to the epoll instance.
func (l *loop) register(s *session) error {
	l.mu.Lock()
	s.id = l.p.nextID.Add(2)
	l.sessions[s.id] = s
	at := time.Now().Add(l.p.cfg.ConnectTimeout)
	if l.connects.push(at, s, s.id) && (l.deadline.IsZero() || at.Before(l.deadline)) {
		// The loop may be waiting with no deadline, or a later one.
		l.deadline = at
		_ = l.ep.SetReadDeadline(at)
	}
	l.mu.Unlock()
	if err := l.ctl(unix.EPOLL_CTL_ADD, s.server.fd, s.id+1); err != nil {
		l.forget(s)
		return err
	}
	return nil
}

// watchClient adds the client socket of s, now connected to its backend.
func (l *loop) watchClient(s *session) error {
	return l.ctl(unix.EPOLL_CTL_ADD, s.client.fd, s.id)
}

// ctl runs epoll_ctl inside the epoll file's Control, which keeps it from being closed
// (and its number reused) meanwhile.
func (l *loop) ctl(op, fd int, tok uint64) error {
	ev := unix.EpollEvent{Events: loopEvents, Fd: int32(uint32(tok)), Pad: int32(uint32(tok >> 32))}
	var cerr error
	err := l.epRaw.Control(func(ep uintptr) { cerr = unix.EpollCtl(int(ep), op, fd, &ev) })
	if err != nil {
		return err
	}
	return os.NewSyscallError("epoll_ctl", cerr)
}

// forget drops s: events still queued for it are ignored. Closing a socket takes it out
// of the epoll instance.
func (l *loop) forget(s *session) {
	l.mu.Lock()
	if l.sessions[s.id] == s {
		delete(l.sessions, s.id)
	}
	l.mu.Unlock()
}

// post asks the loop to close s; any goroutine may call it.
func (l *loop) post(s *session, reset bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wake < 0 {
		return // closed: every session has ended
	}
	l.posted = append(l.posted, closeRequest{s, reset})
	if len(l.posted) == 1 {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		_, _ = unix.Write(l.wake, one[:])
	}
}

// runPosted closes the sessions other goroutines asked to close.
func (l *loop) runPosted() {
	l.mu.Lock()
	posted := l.posted
	l.posted = nil
	l.mu.Unlock()
	for _, r := range posted {
		r.s.finish(r.reset)
	}
}

// setDeadline makes the wait end by the first connect timeout, or a little after the
// first session is due its socket options. A deadline already set that is earlier does
// no harm (the loop wakes, finds nothing due and sets the next), so it is changed only
// when it is later or passed: the timer is not reset for every connection.
func (l *loop) setDeadline() {
	next := l.young.next()
	if !next.IsZero() {
		next = next.Add(optionsSlack)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.connects.next(); !c.IsZero() && (next.IsZero() || c.Before(next)) {
		next = c
	}
	d := l.deadline
	if d.IsZero() && next.IsZero() {
		return
	}
	if d.IsZero() || (!next.IsZero() && next.Before(d)) || !d.After(l.now) {
		l.deadline = next
		_ = l.ep.SetReadDeadline(next)
	}
}

// optionsSlack lets the sessions due their socket options gather, so the loop wakes for
// a batch of them rather than for each.
const optionsSlack = 250 * time.Millisecond

// expire fails the connects whose timeout passed and gives the sessions established
// long enough ago their server-side socket options. Entries of sessions that have moved
// on (connected, closed) are dropped as they come first, so that the deadline is that of
// a connect still under way.
func (l *loop) expire() {
	var late []*session
	l.mu.Lock()
	for {
		it, ok := l.connects.first()
		if !ok {
			break
		}
		live := l.sessions[it.id] == it.s && it.s.state == connecting
		if live && it.at.After(l.now) {
			break
		}
		l.connects.drop()
		if live {
			late = append(late, it.s)
		}
	}
	l.mu.Unlock()
	for _, s := range late {
		if s.state == connecting { // a retry of an earlier one in late may have ended it
			s.connectTimedOut()
		}
	}
	for {
		it, ok := l.young.first()
		if !ok {
			break
		}
		live := it.s.state == established
		if live && it.at.After(l.now) {
			break
		}
		l.young.drop()
		if live {
			it.s.grownUp()
		}
	}
}

// again runs s once more before the loop waits: it has bytes left to move.
func (l *loop) runLater(s *session) {
	if !s.queued {
		s.queued = true
		l.again = append(l.again, s)
	}
}

func (l *loop) runAgain() {
	again := l.again
	l.again = nil
	for i, s := range again {
		s.queued = false
		again[i] = nil
		s.pump()
	}
	if l.again == nil {
		l.again = again[:0]
	}
}

// close stops run. Sessions must have ended.
func (l *loop) close() error {
	l.closed.Store(true)
	l.mu.Lock()
	if l.wake >= 0 {
		unix.Close(l.wake)
		l.wake = -1
	}
	l.mu.Unlock()
	return l.ep.Close()
}

// fifo holds sessions by a deadline that grows with each push (a fixed timeout from
// now), so the earliest is always first.
type fifo struct {
	items []fifoItem
	head  int
}

type fifoItem struct {
	at time.Time
	s  *session
	id uint64 // s.id when pushed
}

// push adds s with deadline at; it reports whether s is now first.
func (f *fifo) push(at time.Time, s *session, id uint64) bool {
	if f.head > 0 && f.head == len(f.items) {
		clear(f.items)
		f.items, f.head = f.items[:0], 0
	} else if f.head > 64 && f.head > len(f.items)/2 {
		n := copy(f.items, f.items[f.head:])
		clear(f.items[n:])
		f.items, f.head = f.items[:n], 0
	}
	f.items = append(f.items, fifoItem{at, s, id})
	return len(f.items)-f.head == 1
}

// next is the first deadline, or zero.
func (f *fifo) next() time.Time {
	if f.head == len(f.items) {
		return time.Time{}
	}
	return f.items[f.head].at
}

// first returns the first item, if there is one.
func (f *fifo) first() (fifoItem, bool) {
	if f.head == len(f.items) {
		return fifoItem{}, false
	}
	return f.items[f.head], true
}

// drop removes the first item.
func (f *fifo) drop() {
	f.items[f.head] = fifoItem{}
	f.head++
}
