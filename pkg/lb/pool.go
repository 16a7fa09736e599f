package lb

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hacp/hacp/pkg/health"
)

// Errors returned when no backend can take a connection.
var (
	ErrNoBackend  = errors.New("lb: no backend is UP")
	ErrQueueFull  = errors.New("lb: queue full")
	ErrQueueTimed = errors.New("lb: timed out waiting in the queue for a backend slot")
)

// backend is one upstream server: its health, weight and the sessions running through it.
type backend struct {
	addr     string
	sockaddr *sockaddr // addr's when its host is an IP address; nil for a name, resolved per connect
	checker  *health.Checker
	stop     context.CancelFunc // stops the checker

	// Guarded by pool.mu.
	weight   int
	up       bool
	upSince  time.Time
	removed  bool    // dropped by a reload; sessions stay until they end
	current  float64 // smooth weighted round-robin state
	active   int
	sessions map[*session]struct{}

	connTotal    atomic.Uint64
	connFailures atomic.Uint64
	busyTimeouts atomic.Uint64 // connect timeouts while the backend was sending: not marked DOWN
	lastHeard    atomic.Int64  // unix nanoseconds of the last byte read from the backend
	bytesIn      atomic.Uint64 // from clients to this backend
	bytesOut     atomic.Uint64 // from this backend to clients
}

// pool holds the backends and picks one per client connection.
type pool struct {
	leastconn bool
	maxConn   int // per backend; 0 is unlimited
	maxQueue  int
	slowStart time.Duration

	mu       sync.Mutex
	closing  bool // the drain timed out: no new sessions
	backends []*backend
	queue    list.List // of chan struct{}: waiters for a free slot
}

// effectiveWeight is the backend's weight, ramped during slow start. Called with mu held.
func (p *pool) effectiveWeight(b *backend, now time.Time) float64 {
	w := float64(b.weight)
	if p.slowStart > 0 && !b.upSince.IsZero() {
		if el := now.Sub(b.upSince); el < p.slowStart {
			w *= max(0.05, float64(el)/float64(p.slowStart))
		}
	}
	return w
}

// pickLocked chooses an UP backend not in tried with a free slot. full reports whether some
// UP backend was skipped only because it was full.
func (p *pool) pickLocked(tried map[*backend]bool, now time.Time) (chosen *backend, full bool) {
	var total float64
	var bestScore float64
	for _, b := range p.backends {
		if !b.up || b.removed || tried[b] {
			continue
		}
		if p.maxConn > 0 && b.active >= p.maxConn {
			full = true
			continue
		}
		w := p.effectiveWeight(b, now)
		if p.leastconn {
			score := float64(b.active+1) / w
			// Ties go round-robin through current so equal backends share new connections.
			if chosen == nil || score < bestScore || (score == bestScore && b.current > chosen.current) {
				chosen, bestScore = b, score
			}
			b.current += w
			total += w
			continue
		}
		b.current += w
		total += w
		if chosen == nil || b.current > chosen.current {
			chosen = b
		}
	}
	if chosen != nil {
		chosen.current -= total
	}
	return chosen, full
}

// acquire reserves a slot on a backend, waiting in the queue (up to timeout) when every
// eligible backend is full. It fails at once when no eligible backend is UP.
func (p *pool) acquire(ctx context.Context, tried map[*backend]bool, timeout time.Duration) (*backend, error) {
	var deadline <-chan time.Time
	for {
		p.mu.Lock()
		b, full := p.pickLocked(tried, time.Now())
		if b != nil {
			b.active++
			p.mu.Unlock()
			return b, nil
		}
		if !full {
			p.mu.Unlock()
			return nil, ErrNoBackend
		}
		if p.queue.Len() >= p.maxQueue {
			p.mu.Unlock()
			return nil, ErrQueueFull
		}
		wake := make(chan struct{}, 1)
		el := p.queue.PushBack(wake)
		p.mu.Unlock()
		if deadline == nil {
			t := time.NewTimer(timeout)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-wake:
			continue
		case <-ctx.Done():
			p.abandon(el, wake)
			return nil, ctx.Err()
		case <-deadline:
			p.abandon(el, wake)
			return nil, ErrQueueTimed
		}
	}
}

// tryAcquire reserves a slot on a backend without waiting: it fails with errMustWait
// when every eligible backend is full and the queue has room, and with ErrNoBackend or
// ErrQueueFull as acquire.
func (p *pool) tryAcquire(tried map[*backend]bool) (*backend, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, full := p.pickLocked(tried, time.Now())
	switch {
	case b != nil:
		b.active++
		return b, nil
	case !full:
		return nil, ErrNoBackend
	case p.queue.Len() >= p.maxQueue:
		return nil, ErrQueueFull
	}
	return nil, errMustWait
}

// abandon leaves the queue; a wake-up that arrived meanwhile goes to the next waiter.
func (p *pool) abandon(el *list.Element, wake chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue.Remove(el) // no-op when a wake-up already removed it
	select {
	case <-wake:
		p.wakeLocked(1)
	default:
	}
}

// release frees the slot acquire reserved and wakes the first waiter.
func (p *pool) release(b *backend) {
	p.mu.Lock()
	b.active--
	if b.removed && b.active == 0 {
		p.pruneLocked()
	}
	p.wakeLocked(1)
	p.mu.Unlock()
}

// pruneLocked forgets backends dropped by a reload once their last session ended.
func (p *pool) pruneLocked() {
	kept := p.backends[:0]
	for _, b := range p.backends {
		if !b.removed || b.active > 0 {
			kept = append(kept, b)
		}
	}
	clear(p.backends[len(kept):])
	p.backends = kept
}

// wakeLocked wakes up to n queued waiters (all when n < 0).
func (p *pool) wakeLocked(n int) {
	for n != 0 && p.queue.Len() > 0 {
		el := p.queue.Front()
		p.queue.Remove(el)
		el.Value.(chan struct{}) <- struct{}{}
		n--
	}
}

// addSession records s as running through b; it reports false when b went DOWN meanwhile
// or the drain timed out, and then s must be closed.
func (p *pool) addSession(b *backend, s *session) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !b.up || p.closing {
		return false
	}
	b.sessions[s] = struct{}{}
	return true
}

func (p *pool) removeSession(b *backend, s *session) {
	p.mu.Lock()
	delete(b.sessions, s)
	p.mu.Unlock()
}

// setUp records a health change. Going DOWN closes the backend's sessions, so clients
// reconnect to a healthy backend (haproxy's on-marked-down shutdown-sessions).
func (p *pool) setUp(b *backend, up bool) []*session {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b.up == up {
		return nil
	}
	b.up = up
	if up {
		b.upSince = time.Now()
		b.current = 0
		p.wakeLocked(-1)
		return nil
	}
	b.upSince = time.Time{}
	out := make([]*session, 0, len(b.sessions))
	for s := range b.sessions {
		out = append(out, s)
	}
	return out
}

// isUp reports whether b is UP.
func (p *pool) isUp(b *backend) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return b.up
}

// anyUp reports whether some backend is UP.
func (p *pool) anyUp() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.backends {
		if b.up && !b.removed {
			return true
		}
	}
	return false
}

func keepAlive(idle time.Duration) net.KeepAliveConfig {
	if idle <= 0 {
		return net.KeepAliveConfig{Enable: false}
	}
	iv := max(idle/3, time.Second)
	return net.KeepAliveConfig{Enable: true, Idle: idle, Interval: iv, Count: 3}
}

// backendSockaddr is addr's socket address when its host is an IP address, else nil.
func backendSockaddr(addr string) *sockaddr {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil
	}
	return sockaddrOf(ap)
}

// heardSince reports whether b sent bytes on any session at or after t.
func (b *backend) heardSince(t time.Time) bool {
	return b.lastHeard.Load() >= t.UnixNano()
}

// resolve looks up the backend's host name, for a backend given by name, and returns
// the first address, IPv4 first, as Go's dialer would try them.
func (b *backend) resolve(timeout time.Duration) (*sockaddr, error) {
	host, port, err := net.SplitHostPort(b.addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pn, err := net.DefaultResolver.LookupPort(ctx, "tcp", port)
	if err != nil {
		return nil, err
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("lookup %s: no addresses", host)
	}
	best := ips[0]
	for _, ip := range ips {
		if ip.Unmap().Is4() {
			best = ip
			break
		}
	}
	return sockaddrOf(netip.AddrPortFrom(best, uint16(pn))), nil
}
