package flowcontrol

import (
	"context"
	"math"
	"sync"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// Why a request was rejected: the reason label of apiserver_flowcontrol_rejected_requests_total.
const (
	reasonQueueFull        = "queue-full"
	reasonConcurrencyLimit = "concurrency-limit"
	reasonTimeout          = "time-out"
	reasonCancelled        = "cancelled"
)

// maxListSeats caps the seats one request takes, as upstream's work estimator.
const maxListSeats = 10

// dispatcher holds the priority levels' seats and queues. One mutex guards it all:
// borrowing makes seats freed at one level usable at another.
type dispatcher struct {
	mu      sync.Mutex
	total   int // the server's seats: --max-requests-inflight + --max-mutating-requests-inflight
	levels  map[string]*level
	metrics *metrics
}

// level is one priority level's state: its limits, queues and the seats in use.
type level struct {
	name     string
	exempt   bool
	reject   bool // a limited level with limitResponse Reject: no queues
	lim      limits
	maxSeats int
	handSize int
	queueLen int
	queues   []*queue
	next     int // the queue to look at first for the next dispatch (round robin)
	inUse    int // seats of the requests executing
	waiting  int // requests in the queues
	gone     bool
	// running are the requests holding seats; the counts are since the level was made, for
	// the debug dumps.
	running                                   map[*waiter]struct{}
	dispatched, rejected, timedout, cancelled int
}

// queue is one of a level's fair queues.
type queue struct {
	waiters []*waiter
	inUse   int
}

// waiter is a request in a queue, or one holding seats.
type waiter struct {
	lvl        *level
	q          *queue
	hash       uint64
	flow       string // the flow distinguisher
	seats      int
	fs         string
	ready      chan struct{} // closed when dispatched
	dispatched bool
	since      time.Time
	started    time.Time
}

func newDispatcher(total int, m *metrics) *dispatcher {
	return &dispatcher{total: total, levels: map[string]*level{}, metrics: m}
}

// configure sets the levels to those of c. A level gone from c stays until its requests
// are done; a level whose number of queues changed gets new queues, its waiting requests
// dealt into them again.
func (d *dispatcher) configure(c *config) {
	alloc := allocate(d.total, c.levels)
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, l := range d.levels {
		if c.levels[name] == nil {
			l.gone = true
			if l.inUse == 0 && l.waiting == 0 {
				delete(d.levels, name)
			}
		}
	}
	for name, pl := range c.levels {
		l := d.levels[name]
		if l == nil {
			l = &level{name: name, running: map[*waiter]struct{}{}}
			d.levels[name] = l
		}
		l.gone = false
		for _, w := range l.configure(pl, alloc[name]) { // now a Reject level: nothing waits
			l.waiting--
			d.metrics.inqueue(name, w.fs, -1)
			w.q = nil
			d.start(w)
		}
		d.metrics.setLimits(name, l.lim)
		d.metrics.currentLimit(name, l.lim.nominal, l.inUse)
	}
	d.dispatchLocked()
}

// configure sets l's limits and queues from pl; it returns the waiting requests that have
// no queue any more (pl has none).
func (l *level) configure(pl *flowcontrolv1.PriorityLevelConfiguration, lim limits) []*waiter {
	l.exempt = pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt
	l.lim = lim
	l.maxSeats = maxListSeats // upstream's for a level without queues
	nq, hand, qlen := 0, 0, 0
	if pl.Spec.Limited != nil {
		if q := pl.Spec.Limited.LimitResponse.Queuing; q != nil {
			nq, hand, qlen = int(q.Queues), int(q.HandSize), int(q.QueueLengthLimit)
			// Upstream's: max(1, min(15% of nominal, nominal/handSize)).
			l.maxSeats = min(maxListSeats, max(1, min(int(math.Ceil(float64(lim.nominal)*0.15)), lim.nominal/hand)))
		}
	}
	l.reject = !l.exempt && nq == 0
	l.handSize, l.queueLen = hand, qlen
	if nq == len(l.queues) {
		return nil
	}
	var old []*waiter
	for _, q := range l.queues {
		old = append(old, q.waiters...)
	}
	l.queues = make([]*queue, nq)
	for i := range l.queues {
		l.queues[i] = &queue{}
	}
	l.next = 0
	if nq == 0 {
		return old
	}
	for _, w := range old {
		w.q = l.pick(w.hash)
		w.q.waiters = append(w.q.waiters, w)
	}
	return nil
}

// pick deals a hand of handSize queues from the flow's hash (shuffle sharding) and picks the
// one with the fewest seats waiting and executing, as upstream.
func (l *level) pick(hash uint64) *queue {
	var best *queue
	bestLoad := 0
	dealHand(hash, len(l.queues), l.handSize, func(i int) {
		q := l.queues[i]
		load := q.inUse
		for _, w := range q.waiters {
			load += w.seats
		}
		if best == nil || load < bestLoad {
			best, bestLoad = q, load
		}
	})
	return best
}

// dealHand calls pick with handSize distinct card numbers in [0, deck), taken from hash
// as digits of a mixed-radix number: the same hash always deals the same hand.
func dealHand(hash uint64, deck, handSize int, pick func(int)) {
	hand := make([]int, 0, handSize)
	for i := 0; i < handSize && i < deck; i++ {
		left := uint64(deck - i)
		c := int(hash % left)
		hash /= left
		// The c-th card not dealt yet.
		for _, h := range hand { // hand is sorted
			if h <= c {
				c++
			}
		}
		pick(c)
		at := len(hand)
		for at > 0 && hand[at-1] > c {
			at--
		}
		hand = append(hand[:at], append([]int{c}, hand[at:]...)...)
	}
}

// canStart reports whether seats more seats may execute at l now: always on an idle level
// (a request wider than the level still runs, alone); within the level's nominal seats; and
// beyond them up to its max, borrowing, while the seats every level holds or keeps for
// itself (its min) stay within the server's total.
func (d *dispatcher) canStart(l *level, seats int) bool {
	if l.inUse == 0 || l.inUse+seats <= l.lim.nominal {
		return true
	}
	if l.inUse+seats > l.lim.max {
		return false
	}
	reserved := 0
	for _, o := range d.levels {
		if !o.exempt {
			reserved += max(o.inUse, o.lim.min)
		}
	}
	extra := max(l.inUse+seats, l.lim.min) - max(l.inUse, l.lim.min)
	return reserved+extra <= d.total
}

// enqueue admits a request of seats at level: started at once (dispatched), queued, or
// rejected with a reason. The caller waits on a queued waiter's ready channel.
func (d *dispatcher) enqueue(levelName, fs string, hash uint64, flow string, seats int) (*waiter, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.levels[levelName]
	w := &waiter{lvl: l, hash: hash, flow: flow, seats: min(seats, l.maxSeats), fs: fs, ready: make(chan struct{}), since: time.Now()}
	d.metrics.workSeats.WithLabelValues(levelName, fs).Observe(float64(w.seats))
	if l.reject {
		if !d.canStart(l, w.seats) {
			l.rejected++
			return nil, reasonConcurrencyLimit
		}
		d.start(w)
		return w, ""
	}
	w.q = l.pick(hash)
	if len(w.q.waiters) >= l.queueLen {
		l.rejected++
		return nil, reasonQueueFull
	}
	w.q.waiters = append(w.q.waiters, w)
	l.waiting++
	d.metrics.inqueue(l.name, fs, 1)
	d.metrics.queueLength(l.name, fs, len(w.q.waiters)) // as upstream, before any dispatch
	d.dispatchLocked()
	return w, ""
}

// start gives w its seats.
func (d *dispatcher) start(w *waiter) {
	w.dispatched = true
	w.started = time.Now()
	w.lvl.running[w] = struct{}{}
	w.lvl.dispatched++
	w.lvl.inUse += w.seats
	if w.q != nil {
		w.q.inUse += w.seats
	}
	d.metrics.currentLimit(w.lvl.name, w.lvl.lim.nominal, w.lvl.inUse)
	close(w.ready)
}

// dispatchLocked starts queued requests, round robin over each level's queues, while they
// fit; a level whose next request does not fit waits for seats.
func (d *dispatcher) dispatchLocked() {
	for progress := true; progress; {
		progress = false
		for _, l := range d.levels {
			for d.dispatchOne(l) {
				progress = true
			}
		}
	}
}

func (d *dispatcher) dispatchOne(l *level) bool {
	if l.waiting == 0 {
		return false
	}
	for i := range l.queues {
		qi := (l.next + i) % len(l.queues)
		q := l.queues[qi]
		if len(q.waiters) == 0 {
			continue
		}
		w := q.waiters[0]
		if !d.canStart(l, w.seats) {
			return false
		}
		q.waiters = q.waiters[1:]
		l.waiting--
		l.next = qi + 1
		d.metrics.inqueue(l.name, w.fs, -1)
		d.start(w)
		return true
	}
	return false
}

// await waits until w is dispatched (true) or gives up: ctx ends or wait runs out first,
// and w leaves its queue with the reason.
func (d *dispatcher) await(ctx context.Context, w *waiter, wait time.Duration) (bool, string) {
	t := time.NewTimer(wait)
	defer t.Stop()
	reason := ""
	select {
	case <-w.ready:
		return true, ""
	case <-t.C:
		reason = reasonTimeout
	case <-ctx.Done():
		reason = reasonCancelled
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if w.dispatched {
		return true, ""
	}
	for i, o := range w.q.waiters {
		if o == w {
			w.q.waiters = append(w.q.waiters[:i:i], w.q.waiters[i+1:]...)
			break
		}
	}
	w.lvl.waiting--
	if reason == reasonTimeout {
		w.lvl.timedout++
	} else {
		w.lvl.cancelled++
	}
	d.metrics.inqueue(w.lvl.name, w.fs, -1)
	d.dispatchLocked() // w may have blocked its queue's head
	return false, reason
}

// finish gives back w's seats and starts what now fits.
func (d *dispatcher) finish(w *waiter) {
	d.mu.Lock()
	defer d.mu.Unlock()
	w.lvl.inUse -= w.seats
	delete(w.lvl.running, w)
	if w.q != nil {
		w.q.inUse -= w.seats
	}
	if !w.lvl.gone {
		d.metrics.currentLimit(w.lvl.name, w.lvl.lim.nominal, w.lvl.inUse)
	}
	if w.lvl.gone && w.lvl.inUse == 0 && w.lvl.waiting == 0 && d.levels[w.lvl.name] == w.lvl {
		delete(d.levels, w.lvl.name)
	}
	d.dispatchLocked()
}
