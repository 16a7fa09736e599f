// Package netns builds throw-away multi-host networks for tests: one network namespace holds
// a Linux bridge, and every host is a namespace wired to it by a veth pair, with an address in
// a /24 of 10.77.0.0/16. Everything is deleted by name when the test ends, and every process
// started inside a host is killed by PID, also when the test fails.
package netns

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hacp/hacp/internal/testenv"
)

// Net is a bridge and the hosts attached to it.
type Net struct {
	t        testing.TB
	prefix   string
	subnet   string // first three octets, e.g. "10.77.1"
	BridgeNS string // namespace that holds the bridge "br0"

	mu    sync.Mutex
	hosts []*Host
}

// Host is one network namespace on the bridge.
type Host struct {
	net        *Net
	Name       string     // short name given to AddHost, e.g. "m1"
	NS         string     // namespace name, the Net's prefix + Name
	Addr       netip.Addr // address of Iface, in the Net's /24
	Iface      string     // interface inside the host: "eth0"
	BridgePort string     // the veth end in the bridge namespace

	mu    sync.Mutex
	procs []*Proc
}

// Proc is a process started in a host by Start.
type Proc struct {
	Cmd *exec.Cmd
	Log string // file holding the process's stdout and stderr
}

// New creates the bridge namespace prefix+"br" with bridge br0. prefix keeps a test's
// namespaces apart from other packages' (for example "hv-"); subnet is the /24 its hosts use,
// written as three octets inside 10.77.0.0/16 ("10.77.1").
func New(t testing.TB, prefix, subnet string) *Net {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "ip", "nsenter")
	if !strings.HasPrefix(subnet, "10.77.") || strings.Count(subnet, ".") != 2 {
		t.Fatalf("netns: subnet %q is not three octets inside 10.77.0.0/16", subnet)
	}
	n := &Net{t: t, prefix: prefix, subnet: subnet, BridgeNS: prefix + "br"}
	Delete(n.BridgeNS) // a leftover of an interrupted run
	t.Cleanup(n.destroy)
	n.ip("netns", "add", n.BridgeNS)
	n.ip("-n", n.BridgeNS, "link", "set", "lo", "up")
	n.ip("-n", n.BridgeNS, "link", "add", "br0", "type", "bridge", "mcast_snooping", "0")
	n.ip("-n", n.BridgeNS, "link", "set", "br0", "up")
	return n
}

// AddHost creates namespace prefix+name with eth0 on the bridge at subnet.octet/24.
func (n *Net) AddHost(name string, octet int) *Host {
	n.t.Helper()
	addr := netip.MustParseAddr(fmt.Sprintf("%s.%d", n.subnet, octet))
	h := &Host{net: n, Name: name, NS: n.prefix + name, Addr: addr, Iface: "eth0", BridgePort: "p-" + name}
	if len(h.NS) > 30 || len(h.BridgePort) > 15 {
		n.t.Fatalf("netns: host name %q too long", name)
	}
	Delete(h.NS)
	n.mu.Lock()
	n.hosts = append(n.hosts, h)
	n.mu.Unlock()
	n.ip("netns", "add", h.NS)
	n.ip("-n", h.NS, "link", "set", "lo", "up")
	n.ip("-n", n.BridgeNS, "link", "add", h.BridgePort, "type", "veth", "peer", "name", h.Iface, "netns", h.NS)
	n.ip("-n", n.BridgeNS, "link", "set", h.BridgePort, "master", "br0", "up")
	n.ip("-n", h.NS, "addr", "add", addr.String()+"/24", "dev", h.Iface)
	n.ip("-n", h.NS, "link", "set", h.Iface, "up")
	return h
}

// Hosts returns the hosts added so far.
func (n *Net) Hosts() []*Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*Host(nil), n.hosts...)
}

func (n *Net) ip(args ...string) {
	n.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		n.t.Fatalf("netns: ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
}

func (n *Net) destroy() {
	for _, h := range n.Hosts() {
		h.killAll()
		Delete(h.NS)
	}
	Delete(n.BridgeNS)
}

// Delete kills every process in the named namespace and deletes it; a namespace that does
// not exist is no error. Programs that are not tests (the drill) use it too.
func Delete(name string) {
	if _, err := os.Stat("/run/netns/" + name); err != nil {
		return
	}
	KillAll(name)
	_ = exec.Command("ip", "netns", "del", name).Run()
}

// KillAll stops, then kills, every process whose network namespace is ns.
func KillAll(ns string) { killPIDs(PIDs(ns)) }

// PIDs lists the processes whose network namespace is ns.
func PIDs(ns string) []int {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killPIDs stops, then kills, every listed process, so none can react in between.
func killPIDs(pids []int) {
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGSTOP)
	}
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// Command returns a command that runs name inside the host's network namespace.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=/run/netns/" + h.NS, "--", name}, args...)...)
}

// Run runs a command inside the host to completion and returns its combined output; the
// test fails if it exits non-zero.
func (h *Host) Run(name string, args ...string) string {
	h.net.t.Helper()
	out, err := h.Exec(name, args...)
	if err != nil {
		h.net.t.Fatalf("%s: %s %s: %v: %s", h.Name, name, strings.Join(args, " "), err, out)
	}
	return out
}

// Exec runs a command inside the host and returns its combined output and error.
func (h *Host) Exec(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := h.Command(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// Start starts a long-running program inside the host. Its output goes to a log file in the
// test's temp dir, shown in the test log if the test fails; the process is killed when the
// test ends.
func (h *Host) Start(name string, args ...string) *Proc {
	t := h.net.t
	t.Helper()
	log := filepath.Join(t.TempDir(), fmt.Sprintf("%s-%s-%d.log", h.Name, filepath.Base(name), time.Now().UnixNano()))
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := h.Command(context.Background(), name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("%s: start %s: %v", h.Name, name, err)
	}
	f.Close()
	p := &Proc{Cmd: cmd, Log: log}
	go func() { _ = cmd.Wait() }()
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	t.Cleanup(func() {
		p.Signal(syscall.SIGKILL)
		if t.Failed() {
			data, _ := os.ReadFile(log)
			if len(data) > 8<<10 {
				data = data[len(data)-8<<10:]
			}
			t.Logf("--- %s: %s %s (log tail):\n%s", h.Name, name, strings.Join(args, " "), data)
		}
	})
	return p
}

// Signal sends sig to the process; it is a no-op once the process is gone.
func (p *Proc) Signal(sig syscall.Signal) {
	if p.Cmd.Process != nil {
		_ = p.Cmd.Process.Signal(sig)
	}
}

// Output returns what the process has written so far.
func (p *Proc) Output() string {
	data, _ := os.ReadFile(p.Log)
	return string(data)
}

// Crash kills every process in the host the way a power cut would: all are stopped first so
// that none can send a goodbye (keepalived's child sends priority 0 when its parent dies),
// then killed, and the host's link goes down so no RST or advert leaves it.
func (h *Host) Crash() {
	h.SetLink(false)
	KillAll(h.NS)
}

// SetLink sets the host's bridge port up or down: down, the host is cut off the network
// without noticing anything but the carrier loss.
func (h *Host) SetLink(up bool) {
	state := "down"
	if up {
		state = "up"
	}
	h.net.ip("-n", h.net.BridgeNS, "link", "set", h.BridgePort, state)
}

func (h *Host) killAll() {
	h.mu.Lock()
	procs := h.procs
	h.mu.Unlock()
	for _, p := range procs {
		p.Signal(syscall.SIGKILL)
	}
	KillAll(h.NS)
}

// Do runs fn on an OS thread switched into the host's network namespace. Sockets that fn
// creates (listeners, dialed connections) stay in that namespace and may be used afterwards
// from any goroutine.
func (h *Host) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// The thread is not unlocked if switching back fails: the runtime then discards it.
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		target, err := os.Open("/run/netns/" + h.NS)
		if err != nil {
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("netns: enter %s: %w", h.NS, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("netns: leave %s: %w", h.NS, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// GetJSON fetches http://addr+path from inside the host's namespace, within timeout, and
// decodes the JSON body into out.
func (h *Host) GetJSON(addr, path string, timeout time.Duration, out any) error {
	return h.Do(func() error {
		conn, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(timeout))
		req, err := http.NewRequest("GET", "http://"+addr+path, nil)
		if err != nil {
			return err
		}
		if err := req.Write(conn); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s%s: %s", addr, path, resp.Status)
		}
		return json.NewDecoder(resp.Body).Decode(out)
	})
}
