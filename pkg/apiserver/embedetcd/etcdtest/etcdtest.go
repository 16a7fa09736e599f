// Package etcdtest starts a real single-member etcd for a test, in the test's temporary
// directory and on loopback ports picked at runtime, and stops it when the test ends.
package etcdtest

import (
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Start starts an etcd without fsync (a test's data need not survive a power cut); the
// test's cleanup stops it.
func Start(t testing.TB) *embedetcd.Server {
	t.Helper()
	srv, err := embedetcd.StartLocal(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// Client starts an etcd (see Start) and returns a client of it, closed by the test's
// cleanup before the etcd stops.
func Client(t testing.TB) *clientv3.Client {
	t.Helper()
	srv := Start(t)
	c, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
