package flowcontrol

import (
	"math"
	"time"
)

// BorrowingPeriod is how often the levels' current limits are recomputed from their seat
// demand: upstream's borrowingAdjustmentPeriod.
const BorrowingPeriod = 10 * time.Second

// demandSmoothing is upstream's seatDemandHistoryFraction: how much of a level's smoothed
// demand carries over from one period to the next.
const demandSmoothing = 0.9

// integrator follows a value over time (a level's seat demand) and gives its high
// watermark, time-weighted average and standard deviation since the last reset.
type integrator struct {
	x, max  float64
	last    time.Time
	seconds float64 // time integrated
	sx, sxx float64 // integrals of x and x*x over it
}

func (g *integrator) set(now time.Time, x float64) {
	g.advance(now)
	g.x = x
	g.max = max(g.max, x)
}

func (g *integrator) advance(now time.Time) {
	if dt := now.Sub(g.last).Seconds(); dt > 0 {
		g.seconds += dt
		g.sx += g.x * dt
		g.sxx += g.x * g.x * dt
	}
	g.last = now
}

// demandSample is what an integrator saw over one period.
type demandSample struct {
	seconds, max, avg, dev float64
}

// reset ends the period at now and returns what it saw; the next starts at the value now.
func (g *integrator) reset(now time.Time) demandSample {
	g.advance(now)
	s := demandSample{seconds: g.seconds, max: g.max}
	if g.seconds > 0 {
		s.avg = g.sx / g.seconds
		s.dev = math.Sqrt(max(0, g.sxx/g.seconds-s.avg*s.avg))
	}
	g.seconds, g.sx, g.sxx, g.max = 0, 0, 0, g.x
	return s
}

// demandStats are a level's seat demand statistics, as upstream's seatDemandStats: the last
// period's high watermark, average and deviation, and the smoothed envelope (average plus
// deviation) over the periods.
type demandStats struct {
	highWatermark      int
	avg, dev, smoothed float64
}

func (s *demandStats) update(d demandSample) {
	s.highWatermark = int(math.Round(d.max))
	if d.seconds <= 0 {
		return
	}
	s.avg, s.dev = d.avg, d.dev
	envelope := d.avg + d.dev
	s.smoothed = max(envelope, demandSmoothing*s.smoothed+(1-demandSmoothing)*envelope)
}

// adjust starts a new borrowing period: it recomputes the levels' current limits from
// their demand in the period ended and starts what now fits.
func (d *dispatcher) adjust() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.adjustLocked(d.now())
	d.dispatchLocked()
}

// allocItem is a non-exempt level's share problem: its current limit is between lo and
// hi, and otherwise in proportion to target.
type allocItem struct {
	lo, hi, target float64
}

// adjustLocked sets every level's current limit as upstream's borrowing adjustment: an
// exempt level gets what it used (at least its min); each other level at least its min,
// and its nominal seats as far as it used them (its lower bound), and the rest of the
// server's nominal seats are shared in proportion to smoothed demand (the fair fraction),
// each within [lower bound, max]. When the seats do not go round, the lower bounds are
// scaled down towards the mins.
func (d *dispatcher) adjustLocked(now time.Time) {
	levels := d.sortedLevels()
	nominalSum := 0
	for _, l := range levels {
		nominalSum += l.lim.nominal
	}
	remaining, minSum, lowSum := nominalSum, 0, 0
	var limited []*level
	var items []allocItem
	for _, l := range levels {
		l.syncTime(now)
		l.stats.update(l.demand.reset(now))
		if l.exempt {
			l.current = max(l.lim.min, l.stats.highWatermark)
			remaining -= l.current
			continue
		}
		lo := l.lowerBound()
		limited = append(limited, l)
		items = append(items, allocItem{lo: float64(lo), hi: float64(l.lim.max), target: max(float64(lo), l.stats.smoothed)})
		minSum += l.lim.min
		lowSum += lo
	}
	fair := 0.0
	switch {
	case remaining <= minSum:
		for _, l := range limited {
			l.current = l.lim.min
		}
	case remaining <= lowSum:
		frac := float64(remaining-minSum) / float64(lowSum-minSum)
		for _, l := range limited {
			l.current = l.lim.min + int(math.Round(float64(l.lowerBound()-l.lim.min)*frac))
		}
	default:
		var allocs []float64
		allocs, fair = fairAllocation(float64(nominalSum), items)
		for i, l := range limited {
			l.current = int(math.Round(allocs[i]))
		}
	}
	d.metrics.fairFrac.Set(fair)
	for _, l := range levels {
		target := float64(l.current) // upstream's target of an exempt level is not meaningful
		if i := indexOf(limited, l); i >= 0 {
			target = items[i].target
		}
		d.metrics.adjusted(l.name, l.stats, target, l.current)
	}
}

// lowerBound is the least a non-exempt level gets when the seats go round: its min, or
// as much of its nominal seats as its demand reached.
func (l *level) lowerBound() int {
	return max(l.lim.min, min(l.lim.nominal, l.stats.highWatermark))
}

func indexOf(ls []*level, l *level) int {
	for i, o := range ls {
		if o == l {
			return i
		}
	}
	return -1
}

// minTarget is upstream's least target: a level of no demand still gets its share of a
// fair fraction, and no target is zero.
const minTarget = 0.001

// fairAllocation divides sum among the items: each gets fair*target clamped to [lo, hi],
// for the one fair fraction that makes the allocations add up to sum (upstream's
// computeConcurrencyAllocation). The allocation grows with fair, so fair is found by
// bisection. When even every lo (hi) is too much (little), every item gets its lo (hi).
func fairAllocation(sum float64, items []allocItem) ([]float64, float64) {
	alloc := func(fair float64) ([]float64, float64) {
		out, total := make([]float64, len(items)), 0.0
		for i, it := range items {
			out[i] = min(it.hi, max(it.lo, fair*max(it.target, minTarget)))
			total += out[i]
		}
		return out, total
	}
	lowFair, highFair := math.Inf(1), 0.0
	for _, it := range items {
		lowFair = min(lowFair, it.lo/max(it.target, minTarget))
		highFair = max(highFair, it.hi/max(it.target, minTarget))
	}
	if out, total := alloc(lowFair); total >= sum {
		return out, lowFair
	}
	if out, total := alloc(highFair); total <= sum {
		return out, highFair
	}
	for range 100 {
		mid := (lowFair + highFair) / 2
		if _, total := alloc(mid); total < sum {
			lowFair = mid
		} else {
			highFair = mid
		}
	}
	out, _ := alloc(highFair)
	return out, highFair
}
