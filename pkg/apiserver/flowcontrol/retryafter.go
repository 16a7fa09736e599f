package flowcontrol

import (
	"sync"
	"time"
)

// maxRetryAfter caps the Retry-After of a rejection, in seconds (upstream's).
const maxRetryAfter = 32

// retryAfter suggests the Retry-After of each level's rejections as upstream's dropped
// requests tracker does: 1 s at first; when a new second starts, doubled (up to 32 s) if
// the level dropped at least 3 requests per second of the current value over the last
// that-many seconds and it was not raised within them, or lowered by one if it dropped
// fewer than one per second.
type retryAfter struct {
	mu     sync.Mutex
	now    func() time.Time
	levels map[string]*drops
}

// drops are one level's rejections per second, and its Retry-After.
type drops struct {
	value    int64 // the Retry-After, seconds
	raisedAt int64 // when value was last doubled (unix seconds)
	second   int64 // the second being counted
	count    int64 // drops in it
	history  []secondDrops
}

type secondDrops struct{ unix, count int64 }

func newRetryAfter(now func() time.Time) *retryAfter {
	return &retryAfter{now: now, levels: map[string]*drops{}}
}

// dropped records a rejection at level pl and returns the Retry-After to send with it.
func (r *retryAfter) dropped(pl string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.levels[pl]
	if d == nil {
		d = &drops{value: 1}
		r.levels[pl] = d
	}
	now := r.now().Unix()
	if now != d.second {
		d.history = append(d.history, secondDrops{d.second, d.count})
		keep := min(2*d.value, maxRetryAfter)
		for len(d.history) > 0 && now-d.history[0].unix > keep {
			d.history = d.history[1:]
		}
		d.second, d.count = now, 0
		d.adjust(now)
	}
	d.count++
	return d.value
}

// adjust is upstream's rule, applied when second now starts.
func (d *drops) adjust(now int64) {
	recent := int64(0)
	for _, h := range d.history {
		if now-h.unix <= d.value && h.unix < now {
			recent += h.count
		}
	}
	switch {
	case now-d.raisedAt >= d.value && recent >= 3*d.value:
		d.value = min(2*d.value, maxRetryAfter)
		d.raisedAt = now
	case recent < d.value && d.value > 1:
		d.value--
	}
}
