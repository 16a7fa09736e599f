package flowcontrol

import (
	"testing"
	"time"
)

// TestRetryAfter follows upstream's dropped-requests tracker: Retry-After starts at 1 s,
// doubles while a level keeps dropping 3 requests a second per second of it, stays at
// most 32 s, and comes down by one at each new second of drops once they are fewer than
// one a second over its span; levels are apart.
func TestRetryAfter(t *testing.T) {
	now := time.Unix(1000, 0)
	r := newRetryAfter(func() time.Time { return now })
	drop := func(n int) int64 {
		var v int64
		for range n {
			v = r.dropped("busy")
		}
		return v
	}
	if v := drop(10); v != 1 {
		t.Fatalf("first second: %d, want 1", v)
	}
	now = now.Add(time.Second)
	if v := drop(1); v != 2 {
		t.Fatalf("after 10 drops in a second: %d, want 2", v)
	}
	if v := r.dropped("quiet"); v != 1 {
		t.Fatalf("another level: %d, want 1", v)
	}
	var v int64
	for range 40 { // a steady 100 drops a second
		now = now.Add(time.Second)
		v = drop(100)
	}
	if v != maxRetryAfter {
		t.Fatalf("after 40 s of heavy drops: %d, want %d", v, maxRetryAfter)
	}
	now = now.Add(40 * time.Second) // the heavy seconds are past
	if v = drop(1); v != maxRetryAfter-1 {
		t.Fatalf("after 40 s without drops: %d, want %d", v, maxRetryAfter-1)
	}
	for range 5 { // one drop every 2 s: fewer than one a second
		now = now.Add(2 * time.Second)
		prev := v
		v = drop(1)
		if v != prev-1 {
			t.Fatalf("with drops nearly stopped: %d after %d, want one less", v, prev)
		}
	}
}
