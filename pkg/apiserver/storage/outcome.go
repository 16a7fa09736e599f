package storage

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"
)

// A write attempt that etcd answers with a timeout or a leader change may still have been
// applied. The retry must then find out from etcd's history whether it was, and say so when
// it cannot tell. Three facts make that possible:
//
//   - every write is a transaction conditioned on the state that was read (the key's mod
//     revision, or its absence for a create), so once the key has changed, an attempt still
//     in flight can never apply any more: an applied update or delete is therefore the first
//     change of the key after the revision it was read at;
//   - a created object carries a fresh uid, so its bytes are written by one request only;
//   - etcd keeps every revision until it is compacted: a compacted history proves nothing.
//
// An update whose bytes equal another writer's from the same base is taken as applied: the
// other writer's retry would have found no change to make, and answered with the same object.

// errUnknownOutcome marks a write whose outcome etcd cannot prove either way.
func errUnknownOutcome(key string, cause error) error {
	msg := "the write may have succeeded: its outcome could not be determined"
	if cause != nil {
		msg += " (" + cause.Error() + ")"
	}
	return &Error{Code: ErrCodeUnknownOutcome, Key: key, Msg: msg}
}

// ambiguous reports whether a failed write attempt may have been applied anyway.
func ambiguous(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return true
	}
	return retryable(context.Background(), err)
}

// historySeq gives each history read a watch stream of its own (see history).
var historySeq atomic.Uint64

// history returns the events on key k with revisions in (after, upto], oldest first; with
// first set, only the first of them. Compacted history is rpctypes.ErrCompacted.
func (s *Etcd3) history(ctx context.Context, k string, after, upto int64, first bool) ([]*clientv3.Event, error) {
	if upto <= after {
		return nil, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// On a stream of its own, a progress notification speaks for this watch alone: it comes
	// once the watch has caught up, so every event up to its revision has been delivered.
	ctx = metadata.AppendToOutgoingContext(ctx, "hacp-history", strconv.FormatUint(historySeq.Add(1), 10))
	wch := s.client.Watch(ctx, k, clientv3.WithRev(after+1))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var evs []*clientv3.Event
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
			_ = s.client.RequestProgress(ctx)
		case resp, ok := <-wch:
			if !ok {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, rpctypes.ErrTimeout
			}
			if resp.CompactRevision != 0 {
				return nil, rpctypes.ErrCompacted
			}
			if err := resp.Err(); err != nil {
				return nil, err
			}
			for _, ev := range resp.Events {
				if ev.Kv.ModRevision > upto {
					return evs, nil
				}
				evs = append(evs, ev)
				if first || ev.Kv.ModRevision == upto {
					return evs, nil
				}
			}
			if resp.IsProgressNotify() && resp.Header.Revision >= upto {
				return evs, nil
			}
		}
	}
}

// firstChange returns the first event on k after revision after, which etcd has at upto or
// before; nil if the key did not change.
func (s *Etcd3) firstChange(ctx context.Context, k string, after, upto int64) (*clientv3.Event, error) {
	evs, err := s.history(ctx, k, after, upto, true)
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	return evs[0], nil
}

// putOf returns the revision at which data was put at k after revision after (up to upto),
// or 0.
func (s *Etcd3) putOf(ctx context.Context, k string, data []byte, after, upto int64) (int64, error) {
	evs, err := s.history(ctx, k, after, upto, false)
	if err != nil {
		return 0, err
	}
	for _, ev := range evs {
		if ev.Type == clientv3.EventTypePut && string(ev.Kv.Value) == string(data) {
			return ev.Kv.ModRevision, nil
		}
	}
	return 0, nil
}
