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

// serviceTime is upstream's estimated service time of a request (its G): a request of n
// seats is taken to cost n*serviceTime seat-seconds of virtual time until it finishes and
// its actual time is known.
const serviceTime = 3 * time.Millisecond

// dispatcher holds the priority levels' seats and queues. One mutex guards it all: the
// periodic borrowing adjustment (adjust) sets every level's current limit at once.
type dispatcher struct {
	mu      sync.Mutex
	total   int // the server's seats: --max-requests-inflight + --max-mutating-requests-inflight
	levels  map[string]*level
	metrics *metrics
	now     func() time.Time
}

// level is one priority level's state: its limits, queues and the seats in use.
type level struct {
	name     string
	exempt   bool
	reject   bool // a limited level with limitResponse Reject: no queues
	lim      limits
	current  int // the seats it may use now, set from demand by adjust
	maxSeats int
	handSize int
	queueLen int
	queues   []*queue
	robin    int // the queue dispatched last: ties go to the queues after it
	inUse    int // seats of the requests executing
	waiting  int // requests in the queues
	// waitingSeats are the seats of the requests waiting; exemptSeats those of the exempt
	// requests executing (they take no seats; they count in the demand).
	waitingSeats, exemptSeats int
	// vnow is the level's virtual time (upstream's R, in seat-seconds), last brought up to
	// date at vlast.
	vnow   float64
	vlast  time.Time
	demand integrator
	stats  demandStats
	gone   bool
	// running are the requests holding seats; the counts are since the level was made, for
	// the debug dumps.
	running                                   map[*waiter]struct{}
	dispatched, rejected, timedout, cancelled int
}

// queue is one of a level's fair queues.
type queue struct {
	waiters []*waiter
	inUse   int
	// start is the virtual time at which the queue's next request starts (upstream's
	// nextDispatchR): it advances by the estimated work of each request dispatched and is
	// corrected by the actual work when the request finishes.
	start float64
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
	arrivalR   float64 // the level's virtual time when it was queued
}

// work is w's estimated work in seat-seconds.
func (w *waiter) work() float64 { return float64(w.seats) * serviceTime.Seconds() }

func newDispatcher(total int, m *metrics, now func() time.Time) *dispatcher {
	return &dispatcher{total: total, levels: map[string]*level{}, metrics: m, now: now}
}

// configure sets the levels to those of c and recomputes their current limits (as
// upstream, a new configuration starts a new borrowing period). A level gone from c stays
// until its requests are done; a level whose number of queues changed gets new queues,
// its waiting requests dealt into them again.
func (d *dispatcher) configure(c *config) {
	alloc := allocate(d.total, c.levels)
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
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
			l = &level{name: name, running: map[*waiter]struct{}{}, vlast: now, demand: integrator{last: now}}
			d.levels[name] = l
		}
		l.gone = false
		l.syncTime(now)
		for _, w := range l.configure(pl, alloc[name]) { // now a Reject level: nothing waits
			l.waiting--
			l.waitingSeats -= w.seats
			d.metrics.inqueue(name, w.fs, -1)
			w.q = nil
			d.start(w, now)
		}
		d.metrics.setLimits(name, l.lim)
	}
	d.adjustLocked(now)
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
		l.queues[i] = &queue{start: l.vnow}
	}
	l.robin = 0
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

// syncTime brings l's virtual time up to now. It advances, per second, by the seats the
// level can serve (the seats its requests want, at most its current limit) shared among
// its active queues (those with requests waiting or executing), as upstream's. Call it
// before every change of l's queues or seats.
func (l *level) syncTime(now time.Time) {
	dt := now.Sub(l.vlast).Seconds()
	l.vlast = now
	if dt <= 0 {
		return
	}
	active := 0
	for _, q := range l.queues {
		if len(q.waiters) > 0 || q.inUse > 0 {
			active++
		}
	}
	if active > 0 {
		l.vnow += float64(min(l.inUse+l.waitingSeats, l.current)) / float64(active) * dt
	}
}

// noteDemand records l's seat demand (seats executing or waiting) from now on.
func (l *level) noteDemand(now time.Time) {
	l.demand.set(now, float64(l.inUse+l.waitingSeats+l.exemptSeats))
}

// canStart reports whether seats more seats may execute at l now, as upstream's: within
// its current limit, or alone on an idle level (a request wider than the limit).
func (l *level) canStart(seats int) bool {
	return l.inUse == 0 || l.inUse+seats <= l.current
}

// enqueue admits a request of seats at level: started at once (dispatched), queued, or
// rejected with a reason. The caller waits on a queued waiter's ready channel.
func (d *dispatcher) enqueue(levelName, fs string, hash uint64, flow string, seats int) (*waiter, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	l := d.levels[levelName]
	w := &waiter{lvl: l, hash: hash, flow: flow, seats: min(seats, l.maxSeats), fs: fs, ready: make(chan struct{}), since: now}
	d.metrics.workSeats.WithLabelValues(levelName, fs).Observe(float64(w.seats))
	if l.reject {
		if !l.canStart(w.seats) {
			l.rejected++
			return nil, reasonConcurrencyLimit
		}
		d.start(w, now)
		return w, ""
	}
	w.q = l.pick(hash)
	if len(w.q.waiters) >= l.queueLen {
		l.rejected++
		return nil, reasonQueueFull
	}
	l.syncTime(now)
	if len(w.q.waiters) == 0 && w.q.inUse == 0 {
		w.q.start = l.vnow // an idle queue starts now
	}
	w.arrivalR = l.vnow
	w.q.waiters = append(w.q.waiters, w)
	l.waiting++
	l.waitingSeats += w.seats
	l.noteDemand(now)
	d.metrics.inqueue(l.name, fs, 1)
	d.metrics.queueLength(l.name, fs, len(w.q.waiters)) // as upstream, before any dispatch
	d.dispatchLocked()
	return w, ""
}

// start gives w its seats from now.
func (d *dispatcher) start(w *waiter, now time.Time) {
	w.dispatched = true
	w.started = now
	w.lvl.running[w] = struct{}{}
	w.lvl.dispatched++
	w.lvl.inUse += w.seats
	if w.q != nil {
		w.q.inUse += w.seats
	}
	w.lvl.noteDemand(w.started)
	close(w.ready)
}

// dispatchLocked starts queued requests while they fit within their level's current limit.
func (d *dispatcher) dispatchLocked() {
	for _, l := range d.levels {
		for d.dispatchOne(l) {
		}
	}
}

// dispatchOne starts the request at the head of the queue whose head would finish first
// in virtual time (its start plus the head's work; ties go round robin from the queue
// dispatched last), as upstream's fair queuing; nothing when that request does not fit.
func (d *dispatcher) dispatchOne(l *level) bool {
	if l.waiting == 0 || l.inUse >= l.current { // upstream's: a level of no seats waits for some
		return false
	}
	var best *queue
	bestAt, bestFinish := 0, 0.0
	for i := range l.queues {
		qi := (l.robin + 1 + i) % len(l.queues)
		q := l.queues[qi]
		if len(q.waiters) == 0 {
			continue
		}
		if finish := q.start + q.waiters[0].work(); best == nil || finish < bestFinish {
			best, bestAt, bestFinish = q, qi, finish
		}
	}
	w := best.waiters[0]
	if !l.canStart(w.seats) {
		return false
	}
	now := d.now()
	l.syncTime(now)
	best.waiters = best.waiters[1:]
	l.waiting--
	l.waitingSeats -= w.seats
	l.robin = bestAt
	best.start += w.work()
	best.bound()
	d.metrics.inqueue(l.name, w.fs, -1)
	d.start(w, now)
	return true
}

// bound keeps a queue's start no earlier than its head's arrival (upstream's anti-windup:
// a queue that could not use its share does not bank it).
func (q *queue) bound() {
	if len(q.waiters) > 0 {
		q.start = max(q.start, q.waiters[0].arrivalR)
	}
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
	now := d.now()
	w.lvl.syncTime(now)
	for i, o := range w.q.waiters {
		if o == w {
			w.q.waiters = append(w.q.waiters[:i:i], w.q.waiters[i+1:]...)
			break
		}
	}
	w.lvl.waiting--
	w.lvl.waitingSeats -= w.seats
	w.lvl.noteDemand(now)
	if reason == reasonTimeout {
		w.lvl.timedout++
	} else {
		w.lvl.cancelled++
	}
	d.metrics.inqueue(w.lvl.name, w.fs, -1)
	d.dispatchLocked() // w may have blocked its queue's head
	return false, reason
}

// finish gives back w's seats, corrects its queue's virtual start by the work w actually
// did (its seats times the time it held them, instead of the estimate), and starts what
// now fits.
func (d *dispatcher) finish(w *waiter) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	l := w.lvl
	l.syncTime(now)
	l.inUse -= w.seats
	delete(l.running, w)
	if w.q != nil {
		w.q.inUse -= w.seats
		w.q.start -= float64(w.seats) * (serviceTime - now.Sub(w.started)).Seconds()
		w.q.bound()
	}
	l.noteDemand(now)
	if l.gone && l.inUse == 0 && l.waiting == 0 && d.levels[l.name] == l {
		delete(d.levels, l.name)
	}
	d.dispatchLocked()
}

// exempt counts seats more (or, negative, fewer) exempt requests executing at the exempt
// level named: they are not limited, but their demand is part of the borrowing adjustment.
func (d *dispatcher) exempt(levelName string, seats int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if l := d.levels[levelName]; l != nil {
		l.exemptSeats += seats
		l.noteDemand(d.now())
	}
}
