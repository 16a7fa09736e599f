package flowcontrol

import (
	"context"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/utils/ptr"
)

func queuingLevel(name string, shares, lendable int32, queues, hand, qlen int32) *flowcontrolv1.PriorityLevelConfiguration {
	pl := &flowcontrolv1.PriorityLevelConfiguration{Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
		Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To(shares), LendablePercent: ptr.To(lendable),
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
				Queuing: &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: hand, QueueLengthLimit: qlen}}}}}
	pl.Name = name
	return pl
}

// fakeClock is a dispatcher's clock that moves only when a test moves it.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time        { return c.t }
func (c *fakeClock) step(by time.Duration) { c.t = c.t.Add(by) }

// newTestDispatcher divides seats among the levels given (and the mandatory ones, which
// have shares 0 and 5: exempt takes none; give catch-all's 5 for in the shares). Its
// clock stands still.
func newTestDispatcher(seats int, pls ...*flowcontrolv1.PriorityLevelConfiguration) *dispatcher {
	d, _ := newClockedDispatcher(seats, pls...)
	return d
}

// newClockedDispatcher is newTestDispatcher with the clock it runs on.
func newClockedDispatcher(seats int, pls ...*flowcontrolv1.PriorityLevelConfiguration) (*dispatcher, *fakeClock) {
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	d := newDispatcher(seats, newMetrics(), clk.now)
	d.configure(digest(pls, nil))
	return d, clk
}

func mustEnqueue(t *testing.T, d *dispatcher, level string, hash uint64) *waiter {
	t.Helper()
	w, reason := d.enqueue(level, "fs", hash, "", 1)
	if w == nil {
		t.Fatalf("%s: rejected (%s), want admitted", level, reason)
	}
	return w
}

func dispatched(w *waiter) bool {
	select {
	case <-w.ready:
		return true
	default:
		return false
	}
}

// TestDealHand: a hand is handSize distinct queues of the deck, the same for the same hash.
func TestDealHand(t *testing.T) {
	for hash := uint64(0); hash < 2000; hash += 7 {
		var a, b []int
		dealHand(hash*0x9e3779b97f4a7c15, 128, 6, func(i int) { a = append(a, i) })
		dealHand(hash*0x9e3779b97f4a7c15, 128, 6, func(i int) { b = append(b, i) })
		seen := map[int]bool{}
		for i, c := range a {
			if c < 0 || c >= 128 || seen[c] || b[i] != c {
				t.Fatalf("hash %d: hand %v (again %v): want 6 distinct cards in [0,128), the same twice", hash, a, b)
			}
			seen[c] = true
		}
		if len(a) != 6 {
			t.Fatalf("hash %d: hand %v, want 6 cards", hash, a)
		}
	}
}

// TestQueueAndReject: a level of one seat runs one request, queues the next up to the
// queue length limit and rejects the one after as queue-full; a finished request lets
// the queued one run.
func TestQueueAndReject(t *testing.T) {
	// Shares 195 of 200 (catch-all has 5): ceil(1*195/200) = 1 seat for "tiny".
	d := newTestDispatcher(1, queuingLevel("tiny", 195, 0, 1, 1, 1))
	first := mustEnqueue(t, d, "tiny", 1)
	if !dispatched(first) {
		t.Fatal("the first request waits on an idle level")
	}
	second := mustEnqueue(t, d, "tiny", 2)
	if dispatched(second) {
		t.Fatal("the second request runs beside the first on a level of one seat")
	}
	if w, reason := d.enqueue("tiny", "fs", 3, "", 1); w != nil || reason != reasonQueueFull {
		t.Fatalf("third request: %v, %q; want rejected queue-full", w, reason)
	}
	d.finish(first)
	if ok, reason := d.await(context.Background(), second, time.Minute); !ok {
		t.Fatalf("the queued request did not run once the seat was free: %s", reason)
	}
	d.finish(second)
}

// TestWaitLimit: a request still queued when its wait runs out leaves its queue, rejected
// time-out; one whose client went away, cancelled.
func TestWaitLimit(t *testing.T) {
	d := newTestDispatcher(1, queuingLevel("tiny", 195, 0, 1, 1, 5))
	first := mustEnqueue(t, d, "tiny", 1)
	queued := mustEnqueue(t, d, "tiny", 1)
	if ok, reason := d.await(context.Background(), queued, time.Millisecond); ok || reason != reasonTimeout {
		t.Fatalf("await: %v %q, want time-out", ok, reason)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	gone := mustEnqueue(t, d, "tiny", 1)
	if ok, reason := d.await(ctx, gone, time.Minute); ok || reason != reasonCancelled {
		t.Fatalf("await: %v %q, want cancelled", ok, reason)
	}
	if l := d.levels["tiny"]; l.waiting != 0 || len(l.queues[0].waiters) != 0 {
		t.Fatalf("given-up requests still queued: waiting %d, queue %d", l.waiting, len(l.queues[0].waiters))
	}
	d.finish(first)
	if l := d.levels["tiny"]; l.inUse != 0 {
		t.Fatalf("seats in use after all finished: %d", l.inUse)
	}
}

// TestFairTurns: with its seat busy, a level serves its queues in turn: a flow with one
// request waiting is not served after all of another flow's many.
func TestFairTurns(t *testing.T) {
	d := newTestDispatcher(1, queuingLevel("tiny", 195, 0, 2, 1, 10))
	// With 2 queues and hands of 1, hash 0 deals queue 0 and hash 1 queue 1.
	running := mustEnqueue(t, d, "tiny", 0)
	var heavy []*waiter
	for range 3 {
		heavy = append(heavy, mustEnqueue(t, d, "tiny", 0))
	}
	light := mustEnqueue(t, d, "tiny", 1)
	d.finish(running)
	next := heavy[0]
	if dispatched(light) {
		next = light
	}
	d.finish(next)
	if !dispatched(light) {
		t.Fatal("the light flow's request still waits after two turns")
	}
}

// TestReconfigure: a level whose queues change keeps its waiting requests (dealt into the
// new queues); a level that goes away still runs what it queued, then is dropped.
func TestReconfigure(t *testing.T) {
	d := newTestDispatcher(1, queuingLevel("tiny", 195, 0, 1, 1, 5))
	running := mustEnqueue(t, d, "tiny", 7)
	waiting := mustEnqueue(t, d, "tiny", 7)
	d.configure(digest([]*flowcontrolv1.PriorityLevelConfiguration{queuingLevel("tiny", 195, 0, 4, 2, 5)}, nil))
	if l := d.levels["tiny"]; len(l.queues) != 4 || l.waiting != 1 {
		t.Fatalf("after the queues changed: %d queues, %d waiting; want 4 and 1", len(l.queues), l.waiting)
	}
	d.configure(digest(nil, nil))
	if d.levels["tiny"] == nil {
		t.Fatal("a busy level was dropped at once")
	}
	d.finish(running)
	if !dispatched(waiting) {
		t.Fatal("the request queued at a level that went away did not run")
	}
	d.finish(waiting)
	if d.levels["tiny"] != nil {
		t.Fatal("the level that went away is kept after its last request")
	}
}
