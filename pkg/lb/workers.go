package lb

import (
	"sync/atomic"
	"time"
)

// workers runs functions on goroutines that are kept for reuse. A fresh goroutine starts
// with a small stack and grows it, by copying, on the way down a dial or a splice; a
// reused one has its stack grown already. That copying was a fifth of the proxy's CPU per
// short connection.
type workers struct {
	work chan func()
	idle time.Duration // an unused worker exits after this long

	started, running, waiting atomic.Int64 // workers started ever, alive now, idle now
}

func newWorkers(idle time.Duration) *workers {
	return &workers{work: make(chan func()), idle: idle}
}

// run runs f on an idle worker, or on a new one when none is idle.
func (w *workers) run(f func()) {
	select {
	case w.work <- f:
	default:
		w.started.Add(1)
		w.running.Add(1)
		go w.loop(f)
	}
}

func (w *workers) loop(f func()) {
	defer w.running.Add(-1)
	t := time.NewTimer(w.idle)
	defer t.Stop()
	for {
		f()
		f = nil
		t.Reset(w.idle)
		w.waiting.Add(1)
		select {
		case f = <-w.work:
			w.waiting.Add(-1)
		case <-t.C:
			w.waiting.Add(-1)
			return
		}
	}
}
