package lb

import (
	"testing"
	"time"
)

func TestWorkersReuseAndExit(t *testing.T) {
	w := newWorkers(time.Hour)
	for range 100 {
		done := make(chan struct{})
		w.run(func() { close(done) })
		<-done
		// The worker goes back to waiting right after f; wait for it so the next run
		// finds it idle. A worker counts itself waiting just before it can take work,
		// so now and then a run starts a second one.
		waitFor(t, "worker idle", 10*time.Second, func() bool { return w.waiting.Load() >= 1 })
	}
	if n := w.started.Load(); n > 10 {
		t.Errorf("%d workers started for 100 sequential runs, want them reused", n)
	}
	// Two at once run at once: both start while the first still blocks.
	block := make(chan struct{})
	started := make(chan struct{}, 2)
	for range 2 {
		w.run(func() { started <- struct{}{}; <-block })
	}
	<-started
	<-started
	if n := w.running.Load(); n < 2 {
		t.Errorf("%d workers running, want at least 2 for two at once", n)
	}
	close(block)
	waitFor(t, "both idle", 10*time.Second, func() bool { return w.waiting.Load() >= 2 })
}

func TestWorkersExitWhenIdle(t *testing.T) {
	w := newWorkers(20 * time.Millisecond)
	done := make(chan struct{})
	w.run(func() { close(done) })
	<-done
	waitFor(t, "idle worker to exit", 10*time.Second, func() bool { return w.running.Load() == 0 })
}
