package endpoints

import (
	"testing"
	"time"
)

// TestWatchTimeout: timeoutSeconds as upstream's ListResource reads it: 0 or none is the
// server's 30 to 60 minutes, anything else is the client's.
func TestWatchTimeout(t *testing.T) {
	secs := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name     string
		seconds  *int64
		min, max time.Duration
	}{
		{"unset", nil, 30 * time.Minute, 60 * time.Minute},
		{"zero", secs(0), 30 * time.Minute, 60 * time.Minute},
		{"five", secs(5), 5 * time.Second, 5 * time.Second},
		{"negative", secs(-1), -time.Second, -time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 100 {
				got := watchTimeout(tc.seconds)
				if got < tc.min || got > tc.max || (tc.max > tc.min && got == tc.max) {
					t.Fatalf("watchTimeout = %v, want in [%v, %v]", got, tc.min, tc.max)
				}
			}
		})
	}
}
