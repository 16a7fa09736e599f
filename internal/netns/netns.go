// Package netns builds throw-away multi-host networks for tests: one network namespace holds
// a Linux bridge, and every host is a namespace wired to it by a veth pair, with an address in
// a /24 of 10.77.0.0/16. Everything is deleted by name when the test ends, and every process
// started inside a host is killed by PID, also when the test fails. Programs (the drill, the
// benches) build the same networks with Create and delete them with Destroy.
package netns

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

// Net is a bridge and the hosts attached to it. Tests make one with New and it is deleted
// when the test ends; programs (the drill, the benches) make one with Create and delete it
// with Destroy, also on errors and signals.
type Net struct {
	t        testing.TB // nil for a Net made by Create
	prefix   string
	subnet   string // first three octets, e.g. "10.77.1"
	BridgeNS string // namespace that holds the bridge "br0"

	mu        sync.Mutex
	hosts     []*Host
	destroyed sync.Once
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
	down  bool // the bridge port is down (SetLink(false))
}

// Proc is a process started in a host by Start or Launch.
type Proc struct {
	Name string // base name of the program
	Cmd  *exec.Cmd
	Log  string // file holding the process's stdout and stderr
	done chan struct{}
}

// New creates the bridge namespace prefix+"br" with bridge br0. prefix keeps a test's
// namespaces apart from other packages' (for example "hv-"); subnet is the /24 its hosts use,
// written as three octets inside 10.77.0.0/16 ("10.77.1"). Everything is deleted when the
// test ends.
func New(t testing.TB, prefix, subnet string) *Net {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "ip", "nsenter")
	n, err := Create(prefix, subnet)
	if err != nil {
		t.Fatal(err)
	}
	n.t = t
	t.Cleanup(n.Destroy)
	return n
}

// Create is New for a program: it returns an error instead of failing a test, and the caller
// deletes the network with Destroy. The methods that fail a test (AddHost, Run, Start,
// SetLink, Crash) need a Net made by New; a program uses CreateHost, Launch and SwitchLink.
func Create(prefix, subnet string) (*Net, error) {
	if !strings.HasPrefix(subnet, "10.77.") || strings.Count(subnet, ".") != 2 {
		return nil, fmt.Errorf("netns: subnet %q is not three octets inside 10.77.0.0/16", subnet)
	}
	n := &Net{prefix: prefix, subnet: subnet, BridgeNS: prefix + "br"}
	Delete(n.BridgeNS) // a leftover of an interrupted run
	err := runIP(
		[]string{"netns", "add", n.BridgeNS},
		[]string{"-n", n.BridgeNS, "link", "set", "lo", "up"},
		[]string{"-n", n.BridgeNS, "link", "add", "br0", "type", "bridge", "mcast_snooping", "0"},
		[]string{"-n", n.BridgeNS, "link", "set", "br0", "up"},
	)
	if err != nil {
		n.Destroy()
		return nil, err
	}
	return n, nil
}

// AddHost creates namespace prefix+name with eth0 on the bridge at subnet.octet/24; the
// test fails if it cannot.
func (n *Net) AddHost(name string, octet int) *Host {
	n.t.Helper()
	h, err := n.CreateHost(name, octet)
	if err != nil {
		n.t.Fatal(err)
	}
	return h
}

// CreateHost is AddHost for a program: it returns an error instead of failing a test.
func (n *Net) CreateHost(name string, octet int) (*Host, error) {
	addr, err := netip.ParseAddr(fmt.Sprintf("%s.%d", n.subnet, octet))
	if err != nil {
		return nil, fmt.Errorf("netns: host %s: %w", name, err)
	}
	h := &Host{net: n, Name: name, NS: n.prefix + name, Addr: addr, Iface: "eth0", BridgePort: "p-" + name}
	if len(h.NS) > 30 || len(h.BridgePort) > 15 {
		return nil, fmt.Errorf("netns: host name %q too long", name)
	}
	Delete(h.NS)
	n.mu.Lock()
	n.hosts = append(n.hosts, h)
	n.mu.Unlock()
	err = runIP(
		[]string{"netns", "add", h.NS},
		[]string{"-n", h.NS, "link", "set", "lo", "up"},
		[]string{"-n", n.BridgeNS, "link", "add", h.BridgePort, "type", "veth", "peer", "name", h.Iface, "netns", h.NS},
		[]string{"-n", n.BridgeNS, "link", "set", h.BridgePort, "master", "br0", "up"},
		[]string{"-n", h.NS, "addr", "add", addr.String() + "/24", "dev", h.Iface},
		[]string{"-n", h.NS, "link", "set", h.Iface, "up"},
	)
	if err != nil {
		return nil, fmt.Errorf("netns: host %s: %w", name, err)
	}
	return h, nil
}

// Hosts returns the hosts added so far.
func (n *Net) Hosts() []*Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*Host(nil), n.hosts...)
}

// runIP runs ip with each argument list in turn, up to the first that fails.
func runIP(cmds ...[]string) error {
	for _, args := range cmds {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("netns: ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
	}
	return nil
}

// Destroy kills every process of every host by PID and deletes every namespace of the Net;
// later calls do nothing. A Net made by New is destroyed when its test ends.
func (n *Net) Destroy() {
	n.destroyed.Do(func() {
		for _, h := range n.Hosts() {
			h.killAll()
			Delete(h.NS)
		}
		Delete(n.BridgeNS)
	})
}

// Delete kills every process in the named namespace and deletes it; a namespace that does
// not exist is no error.
func Delete(name string) {
	if _, err := os.Stat("/run/netns/" + name); err != nil {
		return
	}
	KillAll(name)
	_ = exec.Command("ip", "netns", "del", name).Run()
}

// DeleteAll deletes (as Delete) every namespace whose name starts with prefix: what an
// interrupted earlier run left behind.
func DeleteAll(prefix string) {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			Delete(e.Name())
		}
	}
}

// KillAll stops, then kills, every process whose network namespace is ns.
func KillAll(ns string) { Kill(PIDs(ns)) }

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

// Kill stops, then kills, every listed process, so none can react in between.
func Kill(pids []int) {
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
	p, err := h.spawn(log, false, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Signal(syscall.SIGKILL)
		if t.Failed() {
			t.Logf("--- %s: %s %s (log tail):\n%s", h.Name, name, strings.Join(args, " "), p.Tail(8<<10))
		}
	})
	return p
}

// Launch is Start for a program: the output goes to the file log (its directory is made),
// the process runs in its own process group, so that a Ctrl-C on the terminal reaches the
// program only, which then kills everything by PID; it is killed by Destroy.
func (h *Host) Launch(log, name string, args ...string) (*Proc, error) {
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		return nil, err
	}
	return h.spawn(log, true, name, args...)
}

// spawn starts name inside the host with its output to the file log, in a process group of
// its own if ownGroup, and records it for killAll.
func (h *Host) spawn(log string, ownGroup bool, name string, args ...string) (*Proc, error) {
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := h.Command(context.Background(), name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if ownGroup {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", h.Name, name, err)
	}
	p := &Proc{Name: filepath.Base(name), Cmd: cmd, Log: log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	return p, nil
}

// Procs returns every process started in the host, also those that have exited.
func (h *Host) Procs() []*Proc {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*Proc(nil), h.procs...)
}

// Running returns the processes started in the host that have not exited.
func (h *Host) Running() []*Proc {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*Proc
	for _, p := range h.procs {
		if !p.Exited() {
			out = append(out, p)
		}
	}
	return out
}

// Signal sends sig to the process; it is a no-op once the process is gone.
func (p *Proc) Signal(sig syscall.Signal) {
	if p.Cmd.Process != nil {
		_ = p.Cmd.Process.Signal(sig)
	}
}

// Done is closed when the process has exited (and been waited for).
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Output returns what the process has written so far.
func (p *Proc) Output() string {
	data, _ := os.ReadFile(p.Log)
	return string(data)
}

// Tail returns the last n bytes of what the process has written so far.
func (p *Proc) Tail(n int) string {
	data, _ := os.ReadFile(p.Log)
	if len(data) > n {
		data = data[len(data)-n:]
	}
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
// without noticing anything but the carrier loss. The test fails if it cannot.
func (h *Host) SetLink(up bool) {
	h.net.t.Helper()
	if err := h.SwitchLink(up); err != nil {
		h.net.t.Fatal(err)
	}
}

// SwitchLink is SetLink for a program: it returns an error instead of failing a test.
func (h *Host) SwitchLink(up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	if err := runIP([]string{"-n", h.net.BridgeNS, "link", "set", h.BridgePort, state}); err != nil {
		return err
	}
	h.mu.Lock()
	h.down = !up
	h.mu.Unlock()
	return nil
}

// LinkUp reports whether the host's bridge port is up (as SetLink or SwitchLink left it).
func (h *Host) LinkUp() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.down
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
func (h *Host) Do(fn func() error) error { return Do(h.NS, fn) }

// Do runs fn on an OS thread switched into the named network namespace (one in /run/netns),
// as Host.Do does; it serves programs that reach a namespace by name.
func Do(ns string, fn func() error) error {
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
		target, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("netns: enter %s: %w", ns, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("netns: leave %s: %w", ns, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// DialContext dials address from inside the host's network namespace.
func (h *Host) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return DialContext(ctx, h.NS, network, address)
}

// DialContext dials address from inside the named network namespace; the connection stays
// in it. Bound to a namespace, it is an http.Transport's DialContext.
func DialContext(ctx context.Context, ns, network, address string) (net.Conn, error) {
	var c net.Conn
	err := Do(ns, func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, address)
		return err
	})
	if err != nil && c != nil { // dialed, but the thread could not switch back
		c.Close()
		c = nil
	}
	return c, err
}

// GetJSON fetches http://addr+path from inside the host's namespace, within timeout, and
// decodes the JSON body into out.
func (h *Host) GetJSON(addr, path string, timeout time.Duration, out any) error {
	body, err := h.Get(addr, path, timeout)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, out)
}

// Get fetches http://addr+path from inside the host's namespace, within timeout, and
// returns the body of a 200 answer.
func (h *Host) Get(addr, path string, timeout time.Duration) ([]byte, error) {
	var body []byte
	err := h.Do(func() error {
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
		body, err = io.ReadAll(resp.Body)
		return err
	})
	return body, err
}

// Poll calls cond every interval until it is true, ctx ends or timeout passes: the
// drill's and the scale bench's wait for a host's program to reach a state.
func Poll(ctx context.Context, timeout, interval time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not reached within %v", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}
