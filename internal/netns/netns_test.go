package netns

import (
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTwoHosts(t *testing.T) {
	n := New(t, "hn-", "10.77.9")
	a := n.AddHost("a", 1)
	b := n.AddHost("b", 2)

	var ln net.Listener
	if err := a.Do(func() (err error) {
		ln, err = net.Listen("tcp", a.Addr.String()+":7000")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = c.Write([]byte("hello"))
			c.Close()
		}
	}()

	var got []byte
	if err := b.Do(func() error {
		c, err := net.DialTimeout("tcp", a.Addr.String()+":7000", 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		got, err = io.ReadAll(c)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if string(got) != "hello" {
		t.Fatalf("read %q, want hello", got)
	}

	// A silent host: its link is down, so a dial times out instead of being refused.
	a.SetLink(false)
	err := b.Do(func() error {
		c, err := net.DialTimeout("tcp", a.Addr.String()+":7000", 300*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err
	})
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("dial to a silent host: %v, want a timeout", err)
	}
}

func TestCrashKillsEverything(t *testing.T) {
	n := New(t, "hn-", "10.77.9")
	h := n.AddHost("c", 3)
	p := h.Start("sleep", "300")
	deadline := time.Now().Add(5 * time.Second)
	for len(PIDs(h.NS)) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if len(PIDs(h.NS)) == 0 {
		t.Fatal("started process not seen in the namespace")
	}
	h.Crash()
	for time.Now().Before(deadline) {
		if _, err := os.Stat("/proc/" + itoa(p.Cmd.Process.Pid) + "/status"); err != nil {
			break
		}
		data, _ := os.ReadFile("/proc/" + itoa(p.Cmd.Process.Pid) + "/status")
		if strings.Contains(string(data), "zombie") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if left := PIDs(h.NS); len(left) != 0 {
		t.Fatalf("processes left in %s after Crash: %v", h.NS, left)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestRerunInHost: the rerun sits in a namespace that has the host's address, where
// ForwardTCP relays connections to a server on loopback.
func TestRerunInHost(t *testing.T) {
	addr, inHost := RerunInHost(t, "hr-", "10.77.8")
	if !inHost {
		return
	}
	if addr.String() != "10.77.8.2" {
		t.Fatalf("address %s, want 10.77.8.2", addr)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b := make([]byte, 4)
			_, _ = io.ReadFull(c, b)
			_, _ = c.Write(append([]byte("re:"), b...))
			c.Close()
		}
	}()
	port := ForwardTCP(t, addr, ln.Addr().String())
	for range 3 {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(addr.String(), strconv.Itoa(port)), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("ping"))
		b, err := io.ReadAll(c)
		c.Close()
		if err != nil || string(b) != "re:ping" {
			t.Fatalf("through the relay: %q %v", b, err)
		}
	}
}
