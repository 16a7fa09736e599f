package storage

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// faultKV sits between a store and real etcd. A transaction meets the next armed fault, or
// the one pick returns: it lands in etcd (unless dropped), another writer acts, and the
// caller is told the fault's error, as when etcd times out or changes leader after applying
// a request. Reads pass through.
type faultKV struct {
	clientv3.KV
	mu     sync.Mutex
	armed  []fault
	pick   func() *fault // when nothing is armed; nil: no fault
	onTxn  func(ctx context.Context, injected bool, err error)
	landed int
}

type fault struct {
	drop    bool   // the request never reaches etcd
	err     error  // what the caller is told
	between func() // another writer, after the request landed and before the caller hears
}

func (f *faultKV) arm(fs ...fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = append(f.armed, fs...)
}

func (f *faultKV) next() *fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.armed) > 0 {
		ft := f.armed[0]
		f.armed = f.armed[1:]
		return &ft
	}
	if f.pick != nil {
		return f.pick()
	}
	return nil
}

func (f *faultKV) Txn(ctx context.Context) clientv3.Txn {
	return &faultTxn{Txn: f.KV.Txn(ctx), f: f, ctx: ctx}
}

type faultTxn struct {
	clientv3.Txn
	f   *faultKV
	ctx context.Context
}

func (t *faultTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.Txn = t.Txn.If(cs...); return t }
func (t *faultTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Then(ops...)
	return t
}
func (t *faultTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *faultTxn) Commit() (*clientv3.TxnResponse, error) {
	ft := t.f.next()
	if ft == nil {
		resp, err := t.Txn.Commit()
		if t.f.onTxn != nil {
			t.f.onTxn(t.ctx, false, err)
		}
		return resp, err
	}
	if !ft.drop {
		if _, err := t.Txn.Commit(); err != nil {
			if t.f.onTxn != nil {
				t.f.onTxn(t.ctx, false, err)
			}
			return nil, err
		}
		t.f.mu.Lock()
		t.f.landed++
		t.f.mu.Unlock()
	}
	if ft.between != nil {
		ft.between()
	}
	if t.f.onTxn != nil {
		t.f.onTxn(t.ctx, true, ft.err)
	}
	return nil, ft.err
}

// faultStores returns a store whose writes go through a faultKV, and a second store, on the
// same etcd, for the other writer.
func faultStores(t *testing.T) (s *Etcd3, other *Etcd3, f *faultKV, c *clientv3.Client) {
	t.Helper()
	c = etcdtest.Client(t)
	newCM := func() runtime.Object { return &corev1.ConfigMap{} }
	f = &faultKV{KV: c.KV}
	// A generous attempt bound: on a loaded machine a real attempt may run out too, and
	// that must be as safe as an injected fault.
	s = New(c, Config{Prefix: "/registry", NewFunc: newCM, AttemptTimeout: 10 * time.Second, KV: f})
	other = New(c, Config{Prefix: "/registry", NewFunc: newCM})
	return s, other, f, c
}
