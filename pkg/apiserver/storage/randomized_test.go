package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// writeOp is one write of the randomized test and its answer.
type writeOp struct {
	kind    string // create, update, delete
	key     string
	token   string // data.w of the bytes it writes (create, update)
	rev     int64  // acknowledged revision; 0 if not acknowledged
	unknown bool   // answered "unknown outcome"
	err     error
	faulted bool // some attempt met an injected fault or a real etcd error
}

type opKey struct{}

// TestRandomizedWritesAgainstHistory: many writers create, update and delete a few keys
// while a quarter of the transactions land (or are lost) and are then reported as timed
// out or as a leader change. Every answer is checked against etcd's history (see
// checkAgainstHistory).
func TestRandomizedWritesAgainstHistory(t *testing.T) {
	s, _, f, c := faultStores(t)
	injectFaults(f, 4)
	if _, err := s.Revision(context.Background()); err != nil {
		t.Fatal(err)
	}
	all := randomWrites(t, []*Etcd3{s}, 6, 40, 3)
	if t.Failed() {
		return
	}
	checkAgainstHistory(t, c, all)
}

// injectFaults makes one transaction in every n land (or be lost) and then fail with a
// timeout or a leader change, and marks the writeOp in the context of any transaction that
// met a fault or a real etcd error.
func injectFaults(f *faultKV, n int) {
	faults := []error{rpctypes.ErrTimeout, rpctypes.ErrLeaderChanged, rpctypes.ErrTimeoutDueToLeaderFail}
	f.pick = func() *fault {
		if rand.IntN(n) != 0 {
			return nil
		}
		return &fault{drop: rand.IntN(3) == 0, err: faults[rand.IntN(len(faults))]}
	}
	f.onTxn = func(ctx context.Context, injected bool, err error) {
		if op, ok := ctx.Value(opKey{}).(*writeOp); ok && (injected || err != nil) {
			op.faulted = true // written only by the op's own goroutine
		}
	}
}

// randomWrites runs writers goroutines, writer w on stores[w%len(stores)], each doing
// opsPerWriter random creates, updates and deletes on keys keys, and returns every answer.
func randomWrites(t *testing.T, stores []*Etcd3, writers, opsPerWriter, keys int) []*writeOp {
	t.Helper()
	ctx := context.Background()
	var (
		mu  sync.Mutex
		all []*writeOp
		wg  sync.WaitGroup
	)
	for w := range writers {
		s := stores[w%len(stores)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range opsPerWriter {
				op := &writeOp{key: fmt.Sprintf("configmaps/ns/k%d", rand.IntN(keys)), token: fmt.Sprintf("w%d-%d", w, i)}
				octx, cancel := context.WithTimeout(context.WithValue(ctx, opKey{}, op), 2*time.Minute)
				out := &corev1.ConfigMap{}
				switch rand.IntN(3) {
				case 0:
					op.kind = "create"
					name := op.key[len("configmaps/ns/"):]
					obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(op.token)}, Data: map[string]string{"w": op.token}}
					op.err = s.Create(octx, op.key, obj, out)
				case 1:
					op.kind = "update"
					op.err = s.GuaranteedUpdate(octx, op.key, out, false, nil, func(cur runtime.Object) (runtime.Object, error) {
						cm := cur.(*corev1.ConfigMap)
						if cm.Data == nil {
							cm.Data = map[string]string{}
						}
						cm.Data["w"] = op.token
						return cm, nil
					})
				default:
					op.kind = "delete"
					op.err = s.Delete(octx, op.key, out, nil, nil)
				}
				cancel()
				switch {
				case op.err == nil:
					op.rev, _ = strconv.ParseInt(out.ResourceVersion, 10, 64)
				case IsUnknownOutcome(op.err):
					op.unknown = true
				case IsNotFound(op.err), IsExists(op.err):
				default:
					t.Errorf("%s %s: unexpected error %v", op.kind, op.key, op.err)
				}
				mu.Lock()
				all = append(all, op)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return all
}

// checkAgainstHistory checks every answer in all against etcd's history: an acknowledged
// write is in it at the revision answered, every write in it belongs to one request that was
// acknowledged at that revision or answered "unknown", nothing is written twice, and
// "unknown" comes only after a fault, and only for a delete (the one write whose history
// cannot name its author while the history is intact).
func checkAgainstHistory(t *testing.T, c *clientv3.Client, all []*writeOp) {
	t.Helper()
	ctx := context.Background()
	resp, err := c.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	last := resp.Header.Revision
	var history []*clientv3.Event
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wch := c.Watch(wctx, "/registry/configmaps/ns/", clientv3.WithPrefix(), clientv3.WithRev(1), clientv3.WithProgressNotify())
	for done := false; !done; {
		select {
		case resp, ok := <-wch:
			if !ok || resp.Err() != nil {
				t.Fatalf("history watch: %v", resp.Err())
			}
			history = append(history, resp.Events...)
			done = len(history) > 0 && history[len(history)-1].Kv.ModRevision >= last ||
				resp.IsProgressNotify() && resp.Header.Revision >= last
		case <-time.After(time.Second):
			_ = c.RequestProgress(wctx) // the last write may be on another key
		}
	}

	byToken := map[string]*writeOp{}
	acked := map[int64]*writeOp{}
	unknownDeletes := map[string]int{}
	faulted := 0
	for _, op := range all {
		if op.faulted {
			faulted++
		}
		if op.kind != "delete" {
			byToken[op.token] = op
		}
		if op.rev != 0 {
			if prev := acked[op.rev]; prev != nil {
				t.Errorf("revision %d acknowledged twice: %s %s and %s %s", op.rev, prev.kind, prev.token, op.kind, op.token)
			}
			acked[op.rev] = op
		}
		if op.unknown {
			if !op.faulted {
				t.Errorf("%s %s %s: unknown outcome without any fault", op.kind, op.key, op.token)
			}
			if op.kind != "delete" {
				t.Errorf("%s %s %s: unknown outcome, but etcd's history could tell: %v", op.kind, op.key, op.token, op.err)
			}
			unknownDeletes[op.key]++
		}
	}
	written := map[string]bool{}
	for _, ev := range history {
		key := string(ev.Kv.Key)[len("/registry/"):]
		rev := ev.Kv.ModRevision
		if ev.Type == clientv3.EventTypeDelete {
			op := acked[rev]
			switch {
			case op == nil && unknownDeletes[key] == 0:
				t.Errorf("delete of %s at %d: no request answered it (phantom)", key, rev)
			case op == nil:
				unknownDeletes[key]--
			case op.kind != "delete" || op.key != key:
				t.Errorf("delete of %s at %d acknowledged as %s %s", key, rev, op.kind, op.key)
			}
			delete(acked, rev)
			continue
		}
		cm := &corev1.ConfigMap{}
		if err := (JSONCodec{}).Decode(ev.Kv.Value, cm); err != nil {
			t.Fatal(err)
		}
		tok := cm.Data["w"]
		op := byToken[tok]
		switch {
		case op == nil:
			t.Errorf("write %q of %s at %d: no such request", tok, key, rev)
		case written[tok]:
			t.Errorf("%s %s written twice (again at %d)", op.kind, tok, rev)
		case op.rev != rev && !op.unknown:
			t.Errorf("%s %s written at %d but answered rev %d, %v (lost or phantom)", op.kind, tok, rev, op.rev, op.err)
		case (op.kind == "create") != ev.IsCreate():
			t.Errorf("%s %s at %d is a create in etcd: %v", op.kind, tok, rev, ev.IsCreate())
		}
		written[tok] = true
		delete(acked, rev)
	}
	for rev, op := range acked {
		t.Errorf("%s %s of %s acknowledged at %d, which etcd has no such write for (lost)", op.kind, op.token, op.key, rev)
	}
	if faulted == 0 {
		t.Fatal("no fault was met: the test proved nothing")
	}
	t.Logf("%d writes, %d met faults, %d events in etcd", len(all), faulted, len(history))
}
