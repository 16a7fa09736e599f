package storage

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// CompactRevKey is the key through which every apiserver on one etcd agrees on who
// compacts, as kube-apiserver's storage/etcd3/compact.go does (same key, so hacp and
// kube-apiserver sharing an etcd take turns too). Its version counts compaction rounds.
const CompactRevKey = "compact_rev_key"

// compact runs one round: if nobody started a round since this apiserver's last look
// (the key's version is still t), it claims the round by a compare-and-swap and compacts
// up to rev, the revision it saw one round ago, so at least one interval of history stays.
// It returns the round and the revision to compact to next time.
func compact(ctx context.Context, c *clientv3.Client, t, rev int64) (int64, int64, error) {
	resp, err := c.KV.Txn(ctx).If(clientv3.Compare(clientv3.Version(CompactRevKey), "=", t)).
		Then(clientv3.OpPut(CompactRevKey, strconv.FormatInt(rev, 10))).
		Else(clientv3.OpGet(CompactRevKey)).Commit()
	if err != nil {
		return t, rev, err
	}
	curRev := resp.Header.Revision
	if !resp.Succeeded {
		// Another apiserver ran this round: follow its count. No key (someone deleted
		// it): no round recorded, so the next one starts the count again.
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			return 0, curRev, nil
		}
		return kvs[0].Version, curRev, nil
	}
	if rev == 0 {
		return t + 1, curRev, nil // the first round only records where history starts
	}
	if _, err := c.Compact(ctx, rev); err != nil {
		return t + 1, curRev, err
	}
	return t + 1, curRev, nil
}

// RunCompactor compacts etcd's history every interval until ctx ends, taking turns with
// every other apiserver on the same etcd (see compact). For an external etcd: an embedded
// member compacts itself.
func RunCompactor(ctx context.Context, c *clientv3.Client, interval time.Duration, log *slog.Logger) {
	var t, rev int64
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		var err error
		before := rev
		t, rev, err = compact(ctx, c, t, rev)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("etcd compaction failed", "revision", before, "err", err)
		case err == nil && before != 0:
			log.Debug("etcd compaction round", "round", t, "revision", before)
		}
		timer.Reset(interval)
	}
}
