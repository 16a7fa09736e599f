package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	hnetns "github.com/hacp/hacp/internal/netns"
)

// host is one master: a network namespace on the bridge and, while it runs, the
// systemd-nspawn container booted in it.
type host struct {
	Name     string // m1 ... (inventory name; the namespace and machine are he-m1 ...)
	NS       string
	Addr     string
	Priority int
	Port     string // the veth end in the bridge namespace
	Dir      string // the container's root file system (a copy of the cached rootfs)

	pid  int           // systemd-nspawn's, while it runs
	done chan struct{} // closed when that nspawn has exited
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// removeLeftovers deletes every he-* namespace (killing what runs in it) a previous run
// left behind, e.g. with --keep or after a kill -9.
func removeLeftovers() { hnetns.DeleteAll(prefix) }

// network creates the bridge namespace and the control namespace.
func (e *e2e) network() error {
	for _, args := range [][]string{
		{"netns", "add", bridgeNS},
		{"-n", bridgeNS, "link", "set", "lo", "up"},
		{"-n", bridgeNS, "link", "add", bridge, "type", "bridge", "mcast_snooping", "0"},
		{"-n", bridgeNS, "link", "set", bridge, "up"},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	return e.addNS(ctlNS, ctlAddr, "p-ctl")
}

// addNS creates namespace ns with eth0 at addr/24, plugged into the bridge as port.
func (e *e2e) addNS(ns, addr, port string) error {
	for _, args := range [][]string{
		{"netns", "add", ns},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", bridgeNS, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"-n", bridgeNS, "link", "set", port, "master", bridge, "up"},
		{"-n", ns, "addr", "add", addr + "/24", "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	return nil
}

// newHost makes master number i (1-based): its namespace and a fresh copy of the rootfs
// that accepts the suite's SSH key.
func (e *e2e) newHost(i int) (*host, error) {
	h := e.hostSpec(i)
	if err := e.addNS(h.NS, h.Addr, h.Port); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(h.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(h.Dir), 0o700); err != nil {
		return nil, err
	}
	if out, err := exec.Command("cp", "-a", "--reflink=auto", e.rootfs(), h.Dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copy rootfs for %s: %v: %s", h.Name, err, out)
	}
	if err := os.WriteFile(filepath.Join(h.Dir, "etc/hostname"), []byte(h.Name+"\n"), 0o644); err != nil {
		return nil, err
	}
	pub, err := os.ReadFile(e.sshKey() + ".pub")
	if err != nil {
		return nil, err
	}
	ssh := filepath.Join(h.Dir, "root/.ssh")
	if err := os.MkdirAll(ssh, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(ssh, "authorized_keys"), pub, 0o600); err != nil {
		return nil, err
	}
	e.hosts = append(e.hosts, h)
	return h, nil
}

// hostSpec names master number i (1-based) and places it in the subnet.
func (e *e2e) hostSpec(i int) *host {
	return &host{
		Name:     fmt.Sprintf("m%d", i),
		NS:       fmt.Sprintf("%sm%d", prefix, i),
		Addr:     fmt.Sprintf("%s.%d", subnet, 10+i),
		Priority: 102 - i,
		Port:     fmt.Sprintf("p-m%d", i),
		Dir:      filepath.Join(e.out, "hosts", fmt.Sprintf("m%d", i)),
	}
}

// adopt finds the running container of master i that an earlier run left with --keep.
func (e *e2e) adopt(i int) (*host, error) {
	h := e.hostSpec(i)
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + ent.Name() + "/cmdline")
		args := strings.Split(string(b), "\x00")
		if len(args) > 0 && filepath.Base(args[0]) == "systemd-nspawn" && slices.Contains(args, "--machine="+h.NS) {
			h.pid, h.done = pid, make(chan struct{})
			go func() {
				for syscall.Kill(pid, 0) == nil {
					time.Sleep(100 * time.Millisecond)
				}
				close(h.done)
			}()
			e.hosts = append(e.hosts, h)
			return h, nil
		}
	}
	return nil, fmt.Errorf("no running container for %s (run with --keep first)", h.Name)
}

// boot starts the container: nsenter into the namespace first (ip netns exec would hide
// the cgroup file system nspawn needs), and --private-network with the namespace path so
// that the container may set its network sysctls and keeps CAP_NET_ADMIN.
func (e *e2e) boot(h *host) error {
	logf, err := os.OpenFile(filepath.Join(e.out, "logs", h.Name+"-console.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	nsPath := "/run/netns/" + h.NS
	cmd := exec.Command("nsenter", "--net="+nsPath, "systemd-nspawn",
		"--boot", "--quiet", "--register=no", "--keep-unit",
		"--private-network", "--network-namespace-path="+nsPath,
		"--machine="+h.NS, "--directory="+h.Dir, "--console=passive",
		// The units' LimitNOFILE must fit under the container's hard limit.
		"--rlimit=RLIMIT_NOFILE=524288")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // Ctrl-C reaches us, not the container
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("boot %s: %w", h.Name, err)
	}
	h.pid, h.done = cmd.Process.Pid, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(h.done)
	}()
	return e.waitSSH(h, 90*time.Second)
}

func (e *e2e) waitSSH(h *host, timeout time.Duration) error {
	var last error
	err := poll(context.Background(), timeout, func() bool {
		select {
		case <-h.done:
			last = errors.New("the container exited (see _output/e2e/logs/" + h.Name + "-console.log)")
			return true
		default:
		}
		_, last = e.ssh(h, "systemctl is-system-running --wait >/dev/null; true")
		return last == nil
	})
	if err == nil && last != nil {
		err = last
	}
	if err != nil {
		return fmt.Errorf("%s: no SSH: %w (last: %v)", h.Name, err, last)
	}
	return nil
}

// ssh runs a shell command on h as root, from the control namespace.
func (e *e2e) ssh(h *host, command string) (string, error) {
	out, err := exec.Command("ip", "netns", "exec", ctlNS, "ssh", "-i", e.sshKey(),
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes",
		"-o", "ConnectTimeout=2", "-o", "LogLevel=ERROR", "root@"+h.Addr, command).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ssh %s %q: %v: %s", h.Name, command, err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// pids returns the nspawn process and every process of its container (its descendants).
func (h *host) pids() []int {
	if h.pid == 0 {
		return nil
	}
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + ent.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], pid)
	}
	out := []int{h.pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// crash simulates a dead machine: every process of the container is stopped, its link
// goes down (a dead host answers nothing, not even ARP for the VIP it held), then every
// process is killed. Nothing shuts down gracefully.
func (e *e2e) crash(h *host) error {
	pids := h.pids()
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGSTOP)
	}
	if err := ip("-n", bridgeNS, "link", "set", h.Port, "down"); err != nil {
		return err
	}
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s: nspawn did not exit after SIGKILL", h.Name)
	}
	// Processes killed in the container's own PID namespace are reaped by the kernel; wait
	// until none is left so the next boot starts clean.
	return poll(context.Background(), 30*time.Second, func() bool {
		for _, p := range pids {
			if syscall.Kill(p, 0) == nil {
				return false
			}
		}
		return true
	})
}

// revive boots a crashed host again with its disk as the crash left it.
func (e *e2e) revive(h *host) error {
	// The VIP stayed on eth0 of the namespace (the kernel, not vipd, held it): a rebooted
	// machine would not have it.
	_ = ip("-n", h.NS, "addr", "del", vip+"/24", "dev", "eth0")
	if err := ip("-n", bridgeNS, "link", "set", h.Port, "up"); err != nil {
		return err
	}
	return e.boot(h)
}

// holder returns the master whose eth0 has the VIP, or nil.
func (e *e2e) holders() []*host {
	var out []*host
	for _, h := range e.hosts {
		b, err := exec.Command("ip", "-n", h.NS, "-o", "addr", "show", "dev", "eth0").Output()
		if err == nil && strings.Contains(string(b), " "+vip+"/") {
			out = append(out, h)
		}
	}
	return out
}

// teardown kills every container and deletes every namespace the run made.
func (e *e2e) teardown() {
	for _, h := range e.hosts {
		for _, p := range h.pids() {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if h.done != nil {
			select {
			case <-h.done:
			case <-time.After(10 * time.Second):
			}
		}
	}
	removeLeftovers()
	for _, h := range e.hosts {
		_ = os.RemoveAll(h.Dir)
	}
	e.progress("torn down")
}

// poll calls cond every 100 ms until it is true, ctx ends or timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func() bool) error {
	return hnetns.Poll(ctx, timeout, 100*time.Millisecond, cond)
}
