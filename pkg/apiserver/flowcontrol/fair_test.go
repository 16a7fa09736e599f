package flowcontrol

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// enqueueFlow queues n requests of seats for the flow named at level, the flow's hash
// dealing its queue.
func enqueueFlow(t *testing.T, d *dispatcher, level, flow string, hash uint64, seats, n int) []*waiter {
	t.Helper()
	ws := make([]*waiter, n)
	for i := range ws {
		w, reason := d.enqueue(level, "fs", hash, flow, seats)
		if w == nil {
			t.Fatalf("%s's request %d rejected (%s)", flow, i, reason)
		}
		ws[i] = w
	}
	return ws
}

// serve runs the queued requests on clk: each one dispatched holds its seats for a second
// of the fake clock, then finishes. It returns the flows of the first n dispatched, in
// dispatch order.
func serve(d *dispatcher, clk *fakeClock, queued []*waiter, n int) []string {
	type run struct {
		w   *waiter
		end time.Time
	}
	var order []string
	var running []run
	note := func() {
		left := queued[:0]
		for _, w := range queued {
			if dispatched(w) {
				order = append(order, w.flow)
				running = append(running, run{w, clk.now().Add(time.Second)})
			} else {
				left = append(left, w)
			}
		}
		queued = left
	}
	note()
	for len(order) < n && len(running) > 0 {
		first := 0
		for i, r := range running {
			if r.end.Before(running[first].end) {
				first = i
			}
		}
		r := running[first]
		running = append(running[:first], running[first+1:]...)
		clk.t = r.end
		d.finish(r.w)
		note()
	}
	return order[:min(n, len(order))]
}

func count(order []string, flow string) int {
	n := 0
	for _, f := range order {
		if f == flow {
			n++
		}
	}
	return n
}

// TestFairShareOfBacklog: two flows of one level, one with ten times the other's requests
// queued, are served alike while both have requests waiting.
func TestFairShareOfBacklog(t *testing.T) {
	d, clk := newClockedDispatcher(1, queuingLevel("tiny", 195, 0, 2, 1, 200))
	// With 2 queues and hands of 1, hash 0 deals queue 0 and hash 1 queue 1.
	queued := append(enqueueFlow(t, d, "tiny", "heavy", 0, 1, 100), enqueueFlow(t, d, "tiny", "light", 1, 1, 10)...)
	order := serve(d, clk, queued, 110)
	last := 0 // the light flow's last dispatch
	for i, f := range order {
		if f == "light" {
			last = i
		}
	}
	both := order[:last+1]
	if h, l := count(both, "heavy"), count(both, "light"); l != 10 || h > l+1 {
		t.Fatalf("while both flows had requests waiting, heavy was served %d times and light %d; want 10 each (heavy one more, it ran first): %v", h, l, both)
	}
}

// TestFairShareOfSeats: fair queuing shares seat-time: a flow of 3-seat requests gets a
// third of the dispatches of a flow of 1-seat requests of the same level.
func TestFairShareOfSeats(t *testing.T) {
	// 20 seats: tiny has ceil(20*195/200) = 20, and requests of up to 3 (15% of 20).
	d, clk := newClockedDispatcher(20, queuingLevel("tiny", 195, 0, 2, 1, 1000))
	if l := d.levels["tiny"]; l.current != 20 || l.maxSeats != 3 {
		t.Fatalf("tiny has %d seats and requests of at most %d; the test wants 20 and 3", l.current, l.maxSeats)
	}
	queued := append(enqueueFlow(t, d, "tiny", "narrow", 0, 1, 900), enqueueFlow(t, d, "tiny", "wide", 1, 3, 300)...)
	order := serve(d, clk, queued, 800)
	narrow, wide := count(order, "narrow"), count(order, "wide")
	if ratio := float64(narrow) / float64(wide); ratio < 2.8 || ratio > 3.2 {
		t.Fatalf("narrow (1-seat) was served %d times and wide (3-seat) %d: ratio %.2f, want 3", narrow, wide, ratio)
	}
}

// TestPeriodicBorrowing: a level's current limit is recomputed every borrowing period from
// the seat demand seen: a busy level gets the lendable seats of an idle one after one
// period, and gives them back when the demand moves to the lender; the metrics say so.
func TestPeriodicBorrowing(t *testing.T) {
	// 20 seats; shares 95+95+5 (catch-all): busy and idle have ceil(20*95/195) = 10 each,
	// catch-all 1. idle may lend half of its 10, busy nothing.
	d, clk := newClockedDispatcher(20, queuingLevel("busy", 95, 0, 1, 1, 100), queuingLevel("idle", 95, 50, 1, 1, 100))
	busy, idle := d.levels["busy"], d.levels["idle"]
	lendable := idle.lim.nominal - idle.lim.min
	if busy.lim.nominal != 10 || lendable != 5 {
		t.Fatalf("busy has %d nominal seats and idle lends %d; the test wants 10 and 5", busy.lim.nominal, lendable)
	}
	work := enqueueFlow(t, d, "busy", "b", 0, 1, 30) // 30 seats of demand for the whole period
	before := busy.current
	clk.step(BorrowingPeriod)
	d.adjust()
	if want := busy.lim.nominal + lendable; busy.current != want {
		t.Fatalf("after a period of demand 30: busy's current limit %d (it was %d), want its nominal 10 and idle's lendable 5 = %d", busy.current, before, want)
	}
	if busy.inUse != busy.current {
		t.Fatalf("busy runs %d seats after the adjustment, want all %d of its current limit", busy.inUse, busy.current)
	}
	m := d.metrics
	for name, got := range map[string]float64{
		"current_limit_seats{busy}":         testutil.ToFloat64(m.current.WithLabelValues("busy")),
		"current_limit_seats{idle}":         testutil.ToFloat64(m.current.WithLabelValues("idle")),
		"demand_seats_high_watermark{busy}": testutil.ToFloat64(m.demandHigh.WithLabelValues("busy")),
		"demand_seats_average{busy}":        testutil.ToFloat64(m.demandAvg.WithLabelValues("busy")),
		"target_seats{busy}":                testutil.ToFloat64(m.target.WithLabelValues("busy")),
		"seat_fair_frac":                    testutil.ToFloat64(m.fairFrac),
	} {
		want := map[string]float64{"current_limit_seats{busy}": 15, "current_limit_seats{idle}": 5,
			"demand_seats_high_watermark{busy}": 30, "demand_seats_average{busy}": 30, "target_seats{busy}": 30,
			"seat_fair_frac": 0.5}[name]
		if diff := got - want; diff > 1e-6 || diff < -1e-6 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}

	// busy's work is done at once; idle gets 10 seats of demand for the next period.
	for len(work) > 0 {
		left := work[:0]
		for _, w := range work {
			if dispatched(w) {
				d.finish(w)
			} else {
				left = append(left, w)
			}
		}
		work = left
	}
	lent := enqueueFlow(t, d, "idle", "i", 0, 1, 10)
	if idle.inUse != 5 {
		t.Fatalf("idle runs %d seats before the adjustment, want its current limit 5", idle.inUse)
	}
	clk.step(BorrowingPeriod)
	d.adjust()
	if busy.current != busy.lim.nominal || idle.current != idle.lim.nominal || idle.inUse != 10 {
		t.Fatalf("after the demand moved: busy's current limit %d, idle's %d running %d; want both back at their nominal 10, idle running all 10",
			busy.current, idle.current, idle.inUse)
	}
	if got := testutil.ToFloat64(m.current.WithLabelValues("busy")); got != 10 {
		t.Errorf("current_limit_seats{busy} = %v after the demand moved, want 10", got)
	}
	for _, w := range lent {
		d.finish(w)
	}
}

// TestFairAllocation: the seats are shared in proportion to the targets, each within its
// bounds, adding up to the sum; the fair fraction is the proportion.
func TestFairAllocation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sum   float64
		items []allocItem
		want  []float64
		fair  float64
	}{
		{"no bound matters", 30, []allocItem{{0, 100, 10}, {0, 100, 20}}, []float64{10, 20}, 1},
		{"a lower bound holds", 20, []allocItem{{8, 100, 10}, {0, 100, 30}}, []float64{8, 12}, 0.4},
		{"an upper bound holds", 40, []allocItem{{0, 5, 10}, {0, 100, 10}}, []float64{5, 35}, 3.5},
		{"no demand: a zero target still shares", 10, []allocItem{{0, 20, 0}, {0, 20, 0}}, []float64{5, 5}, 5000},
		{"the lower bounds take it all", 10, []allocItem{{6, 20, 6}, {6, 20, 12}}, []float64{6, 6}, 0.5},
		{"the upper bounds are not enough", 50, []allocItem{{0, 10, 10}, {0, 20, 10}}, []float64{10, 20}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, fair := fairAllocation(tc.sum, tc.items)
			for i := range got {
				if d := got[i] - tc.want[i]; d > 1e-6 || d < -1e-6 {
					t.Fatalf("allocations %v, want %v", got, tc.want)
				}
			}
			if d := (fair - tc.fair) / tc.fair; d > 1e-6 || d < -1e-6 {
				t.Fatalf("fair fraction %v, want %v", fair, tc.fair)
			}
		})
	}
}
