package lb

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"
)

// stateRecorder keeps the level of every "backend state changed" record by state.
type stateRecorder struct {
	mu     sync.Mutex
	levels map[string][]slog.Level
}

func (r *stateRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *stateRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *stateRecorder) WithGroup(string) slog.Handler            { return r }

func (r *stateRecorder) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message != "backend state changed" {
		return nil
	}
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "state" {
			r.mu.Lock()
			r.levels[a.Value.String()] = append(r.levels[a.Value.String()], rec.Level)
			r.mu.Unlock()
		}
		return true
	})
	return nil
}

func (r *stateRecorder) get(state string) []slog.Level {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]slog.Level(nil), r.levels[state]...)
}

// TestBackendStateLogLevels: a backend coming UP is the normal course and logged at INFO;
// one going DOWN is a warning.
func TestBackendStateLogLevels(t *testing.T) {
	b := newBackend(t, "a")
	cfg := testConfig(b)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	rec := &stateRecorder{levels: map[string][]slog.Level{}}
	p, err := New(cfg, slog.New(rec))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	waitState(t, p, b.addr(), "UP")
	waitFor(t, "the UP record", 20*time.Second, func() bool { return len(rec.get("UP")) > 0 })
	b.status.Store(http.StatusInternalServerError)
	waitState(t, p, b.addr(), "DOWN")
	waitFor(t, "the DOWN record", 20*time.Second, func() bool { return len(rec.get("DOWN")) > 0 })
	if got := rec.get("UP"); got[0] != slog.LevelInfo {
		t.Errorf("UP logged at %v, want INFO", got[0])
	}
	if got := rec.get("DOWN"); got[0] != slog.LevelWarn {
		t.Errorf("DOWN logged at %v, want WARN", got[0])
	}
}
