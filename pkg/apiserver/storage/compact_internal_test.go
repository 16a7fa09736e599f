package storage

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func compactedAt(t *testing.T, c *clientv3.Client, rev int64) bool {
	t.Helper()
	_, err := c.Get(context.Background(), "k", clientv3.WithRev(rev))
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatal(err)
	}
	return err != nil
}

// TestCompactTakesTurns: two apiservers on one etcd compact once per round between them,
// each time up to the revision seen a round earlier.
func TestCompactTakesTurns(t *testing.T) {
	c := etcdtest.Client(t)
	ctx := context.Background()
	put := func() {
		if _, err := c.Put(ctx, "k", "v"); err != nil {
			t.Fatal(err)
		}
	}
	put()
	put()

	// Round 1: a claims it and records where history starts; b finds it claimed.
	ta, reva, err := compact(ctx, c, 0, 0)
	if err != nil || ta != 1 {
		t.Fatalf("a, round 1: %d %v", ta, err)
	}
	tb, revb, err := compact(ctx, c, 0, 0)
	if err != nil || tb != 1 {
		t.Fatalf("b, round 1: %d %v", tb, err)
	}
	if compactedAt(t, c, 1) {
		t.Fatal("the first round compacted")
	}
	put()
	// Round 2: b claims it and compacts to what it saw in round 1; a finds it claimed.
	if tb, _, err = compact(ctx, c, tb, revb); err != nil || tb != 2 {
		t.Fatalf("b, round 2: %d %v", tb, err)
	}
	if ta, _, err = compact(ctx, c, ta, reva); err != nil || ta != 2 {
		t.Fatalf("a, round 2: %d %v", ta, err)
	}
	if !compactedAt(t, c, revb-1) || compactedAt(t, c, revb) {
		t.Fatalf("want history compacted up to %d exactly", revb)
	}
	resp, err := c.Compact(ctx, revb)
	if !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("a second compaction to %d ran: %v %v", revb, resp, err)
	}
}

// TestRunCompactor: the loop compacts on its own.
func TestRunCompactor(t *testing.T) {
	c := etcdtest.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	for range 2 {
		go func() {
			RunCompactor(ctx, c, 20*time.Millisecond, slog.New(slog.DiscardHandler))
			done <- struct{}{}
		}()
	}
	defer func() { cancel(); <-done; <-done }()
	if _, err := c.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !compactedAt(t, c, 1); {
		if time.Now().After(deadline) {
			t.Fatal("history never compacted")
		}
		time.Sleep(10 * time.Millisecond) // poll
	}
}

// TestCompactAfterTheKeyChanged: compact_rev_key deleted or overwritten behind the
// compactors' backs (by hand, or another tool) makes no round panic: a missing key restarts
// the count, a foreign value is only counted (its value is never read).
func TestCompactAfterTheKeyChanged(t *testing.T) {
	for _, tc := range []struct {
		name      string
		change    func(ctx context.Context, c *clientv3.Client) error
		wantRound int64 // the round the compactor follows after the change
	}{
		{"deleted", func(ctx context.Context, c *clientv3.Client) error {
			_, err := c.Delete(ctx, CompactRevKey)
			return err
		}, 0},
		{"not a revision", func(ctx context.Context, c *clientv3.Client) error {
			_, err := c.Put(ctx, CompactRevKey, "\x00not a number")
			return err
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := etcdtest.Client(t)
			ctx := context.Background()
			round, rev, err := compact(ctx, c, 0, 0)
			if err != nil || round != 1 {
				t.Fatalf("round 1: %d %v", round, err)
			}
			if err := tc.change(ctx, c); err != nil {
				t.Fatal(err)
			}
			if round, rev, err = compact(ctx, c, 5, rev); err != nil || round != tc.wantRound {
				t.Fatalf("after the change: round %d, %v; want %d", round, err, tc.wantRound)
			}
			// The next round is claimed and counted again.
			if round, _, err = compact(ctx, c, round, rev); err != nil || round != tc.wantRound+1 {
				t.Fatalf("next round: %d %v; want %d", round, err, tc.wantRound+1)
			}
		})
	}
}
