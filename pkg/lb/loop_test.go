package lb

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFIFO: items come out in the order pushed, each once its deadline is not after now;
// push reports when the item is the only one, and the slice is reused as it empties.
func TestFIFO(t *testing.T) {
	var f fifo
	t0 := time.Now()
	sessions := make([]*session, 200)
	for i := range sessions {
		sessions[i] = &session{}
		first := f.push(t0.Add(time.Duration(i)*time.Millisecond), sessions[i], uint64(i))
		if first != (i == 0) {
			t.Fatalf("push %d reported first=%v", i, first)
		}
	}
	if got := f.next(); !got.Equal(t0) {
		t.Fatalf("next = %v, want the first deadline %v", got, t0)
	}
	for i := range sessions {
		it, ok := f.first()
		if !ok || it.s != sessions[i] || it.id != uint64(i) {
			t.Fatalf("item %d: got %+v, %v", i, it, ok)
		}
		f.drop()
		if i == 99 {
			// Half drained: a push compacts and keeps the order.
			f.push(t0.Add(time.Hour), sessions[0], 1000)
		}
	}
	it, ok := f.first()
	if !ok || it.id != 1000 {
		t.Fatalf("last item: got %+v, %v; want the one pushed midway", it, ok)
	}
	f.drop()
	if _, ok := f.first(); ok || !f.next().IsZero() {
		t.Fatal("fifo not empty after taking every item")
	}
	if !f.push(t0, sessions[1], 1) {
		t.Fatal("push on an empty fifo did not report first")
	}
}

// TestBackendByName: a backend given by host name is reached at the address the name
// resolves to (looked up for each connect, off the event loop).
func TestBackendByName(t *testing.T) {
	a := newBackend(t, "a")
	_, port, err := net.SplitHostPort(a.addr())
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Backends = []string{net.JoinHostPort("localhost", port)}
	p := startProxy(t, cfg)
	waitAllUp(t, p.Proxy)
	for range 3 {
		if got := get(t, p.Addr(), "/name"); got != "a" {
			t.Fatalf("got %q through backend localhost:%s, want a", got, port)
		}
	}
	if st := p.Status(); st.Backends[0].TotalConns != 3 {
		t.Errorf("status does not count the 3 connections to the backend by name: %+v", st.Backends[0])
	}
}

// TestWaitTakesEventsPastDeadline: a wait that returns for its deadline still hands over
// the events that are ready, so that the loop handles a connect that completed before it
// fails connects whose timeout passed (a loop short of CPU wakes late with both).
func TestWaitTakesEventsPastDeadline(t *testing.T) {
	l, err := newLoop(&Proxy{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.ep.Close()
	defer unix.Close(l.wake)
	if _, err := unix.Write(l.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	l.deadline = time.Now().Add(-time.Second)
	if err := l.ep.SetReadDeadline(l.deadline); err != nil {
		t.Fatal(err)
	}
	n, err := l.wait()
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || eventToken(&l.events[0]) != wakeToken {
		t.Fatalf("wait past the deadline returned %d events, want the ready eventfd's", n)
	}
}
