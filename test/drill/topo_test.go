package main

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	hnetns "github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/internal/testenv"
)

// The topology is the part of the drill that must never leak: namespaces and processes
// are deleted by name and PID, also what an interrupted run left behind.
func TestTopology(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "ip", "nsenter", "sleep")
	const prefix = "hdt-"

	// A leftover of an interrupted run: a namespace with a process in it.
	if out, err := exec.Command("ip", "netns", "add", prefix+"old").CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	leftover := exec.Command("nsenter", "--net=/run/netns/"+prefix+"old", "--", "sleep", "600")
	if err := leftover.Start(); err != nil {
		t.Fatal(err)
	}
	leftoverDone := make(chan struct{})
	go func() { _ = leftover.Wait(); close(leftoverDone) }()
	t.Cleanup(func() { _ = leftover.Process.Kill() })
	// nsenter enters the namespace, then execs sleep: wait until it is in there.
	if err := poll(context.Background(), 30*time.Second, func() bool { return len(hnetns.PIDs(prefix+"old")) > 0 }); err != nil {
		t.Fatalf("leftover process never entered its namespace: %v", err)
	}

	topo, err := newTopology(t.TempDir(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(topo.destroy)
	select {
	case <-leftoverDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the leftover's process survived newTopology")
	}
	if _, err := os.Stat("/run/netns/" + prefix + "old"); err == nil {
		t.Fatal("the leftover namespace survived newTopology")
	}

	a, err := topo.addHost("a", 21)
	if err != nil {
		t.Fatal(err)
	}
	b, err := topo.addHost("b", 22)
	if err != nil {
		t.Fatal(err)
	}
	if !a.holdsAddr(netip.MustParseAddr(subnet+".21")) || a.holdsAddr(netip.MustParseAddr(vipAddr)) {
		t.Error("holdsAddr: want a to hold its own address and not the VIP")
	}

	var ln net.Listener
	if err := b.Do(func() (err error) { ln, err = net.Listen("tcp", b.Addr.String()+":7000"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dial := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c, err := a.DialContext(ctx, "tcp", b.Addr.String()+":7000")
		if err == nil {
			c.Close()
		}
		return err
	}
	// The hosts' links have just come up: on a loaded machine the first packets may take a
	// while (ARP, bridge ports), so wait for the first connection rather than expect it.
	if err := poll(context.Background(), 20*time.Second, func() bool { return dial() == nil }); err != nil {
		t.Fatalf("dial from a to b: %v", dial())
	}

	if err := b.SwitchLink(false); err != nil {
		t.Fatal(err)
	}
	if err := poll(context.Background(), 20*time.Second, func() bool { return !b.carrier() }); err != nil {
		t.Error("b has carrier with its bridge port down")
	}
	if err := dial(); err == nil {
		t.Error("dial from a to b succeeded with b's link down")
	}
	if err := b.SwitchLink(true); err != nil {
		t.Fatal(err)
	}
	if err := poll(context.Background(), 20*time.Second, func() bool { return dial() == nil }); err != nil {
		t.Errorf("dial from a to b after link up: %v", dial())
	}

	p, err := b.start("sleep", "600")
	if err != nil {
		t.Fatal(err)
	}
	// nsenter enters the namespace after it has started: crash what is in it once it is.
	if err := poll(context.Background(), 20*time.Second, func() bool {
		return slices.Contains(hnetns.PIDs(b.NS), p.Cmd.Process.Pid)
	}); err != nil {
		t.Fatalf("sleep (pid %d) not in %s: %v", p.Cmd.Process.Pid, b.NS, hnetns.PIDs(b.NS))
	}
	if err := b.crash(); err != nil {
		t.Fatal(err)
	}
	if !p.Exited() || len(hnetns.PIDs(b.NS)) != 0 || b.LinkUp() {
		t.Errorf("after crash: exited=%v pids=%v linkUp=%v", p.Exited(), hnetns.PIDs(b.NS), b.LinkUp())
	}

	q, err := a.start("sleep", "600")
	if err != nil {
		t.Fatal(err)
	}
	topo.destroy()
	select {
	case <-q.Done():
	case <-time.After(30 * time.Second):
		t.Error("a process survived destroy")
	}
	for _, ns := range []string{prefix + "br", a.NS, b.NS} {
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			t.Errorf("namespace %s survived destroy", ns)
		}
	}
}
