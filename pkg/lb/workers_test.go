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
		// finds it idle.
		waitFor(t, "worker idle", 10*time.Second, func() bool { return w.waiting.Load() == 1 })
	}
	if n := w.started.Load(); n != 1 {
		t.Errorf("%d workers started for 100 sequential runs, want 1", n)
	}
	// Two at once need two workers.
	block := make(chan struct{})
	started := make(chan struct{}, 2)
	for range 2 {
		w.run(func() { started <- struct{}{}; <-block })
	}
	<-started
	<-started
	if n := w.started.Load(); n != 2 {
		t.Errorf("%d workers started, want 2 for two at once", n)
	}
	close(block)
	waitFor(t, "both idle", 10*time.Second, func() bool { return w.waiting.Load() == 2 })
}

func TestWorkersExitWhenIdle(t *testing.T) {
	w := newWorkers(20 * time.Millisecond)
	done := make(chan struct{})
	w.run(func() { close(done) })
	<-done
	waitFor(t, "idle worker to exit", 10*time.Second, func() bool { return w.running.Load() == 0 })
}
