package vip

import (
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sockReader hands on what is queued on a socket in order, each packet with the kernel's
// receive time (SO_TIMESTAMPNS), and stops when there is no room; serve then goes on with
// the rest. (A UDP socket on loopback stands in for the raw advert socket: same reader.)
func TestSockReaderOrderAndTimes(t *testing.T) {
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stamped := 0
	s, err := newSockReader(c.(syscall.Conn), func(r *received, b, oob []byte, _ unix.Sockaddr) {
		r.payload = append([]byte(nil), b...)
		if _, ok := timestamp(oob); ok {
			stamped++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := net.Dial("udp4", c.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	sent := time.Now()
	const n = 6
	for i := range n {
		if _, err := fmt.Fprintf(out, "advert %d", i); err != nil {
			t.Fatal(err)
		}
	}
	var got []received
	room := func() bool { return len(got) < n/2 }
	put := func(r received) { got = append(got, r) }
	// Loopback delivers at send; poll in case it has not yet.
	for deadline := time.Now().Add(10 * time.Second); len(got) < n/2; {
		if err := s.readQueued(room, put); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("read %d of %d packets", len(got), n)
		}
	}
	if len(got) != n/2 {
		t.Fatalf("read %d packets with room for %d", len(got), n/2)
	}
	room = func() bool { return len(got) < n }
	if err := s.serve(room, put); err != nil {
		t.Fatal(err)
	}
	for i, r := range got {
		if want := fmt.Sprintf("advert %d", i); string(r.payload) != want {
			t.Fatalf("packet %d is %q, want %q", i, r.payload, want)
		}
		if r.at.Before(sent.Add(-time.Second)) || r.at.After(time.Now()) {
			t.Fatalf("packet %d received at %v, sent from %v", i, r.at, sent)
		}
	}
	if stamped != n {
		t.Fatalf("%d of %d packets came with a kernel receive time", stamped, n)
	}
}
