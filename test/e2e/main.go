// Command e2e rolls hacp out with deploy/ansible onto booted Debian hosts and checks the
// result and the day-2 playbooks end to end (`make e2e`, as root).
//
// Each master is a systemd-nspawn container booted from a debootstrap'ed bookworm rootfs
// (cached in _output/e2e-rootfs), in its own network namespace on a bridge; ansible runs
// over SSH from a control namespace. Everything it creates is named he-* (namespaces, the
// bridge he-br0, containers) in 10.77.40.0/24 with the VIP 10.77.40.100, and is torn down
// at the end, on failure and on Ctrl-C. Run it under `flock /tmp/hacp-netns.lock`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	prefix   = "he-"
	bridgeNS = "he-br" // namespace holding the bridge
	bridge   = "he-br0"
	subnet   = "10.77.40"
	vip      = "10.77.40.100"
	ctlNS    = "he-ctl"
	ctlAddr  = subnet + ".10"
	vipPort  = 8443
)

func main() {
	keep := flag.Bool("keep", false, "leave the hosts running at the end (for debugging; the next run removes them)")
	steps := flag.Int("steps", 0, "run only the first N steps (debugging; 0: all)")
	resume := flag.Int("resume", 0, "start at step N on the hosts a --keep run left (debugging; 0: from scratch)")
	rootfsOnly := flag.Bool("rootfs-only", false, "only make the cached rootfs (debootstrap, mostly download; CI makes it beside the other suites) and exit")
	flag.Parse()
	var err error
	if *rootfsOnly {
		err = makeRootfs()
	} else {
		err = run(*keep, *steps, *resume)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: FAIL: %v\n", err)
		os.Exit(1)
	}
}

func run(keep bool, steps, resume int) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	if err := prerequisites(root); err != nil {
		if os.Getenv("CI") == "true" {
			return err
		}
		fmt.Printf("e2e: SKIP: %v\n", err)
		return nil
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	e := &e2e{root: root, out: filepath.Join(root, "_output", "e2e"), start: time.Now(), maxSteps: steps, resume: resume}
	defer func() {
		if keep {
			e.progress("--keep: hosts left running (the next run removes them)")
			return
		}
		e.teardown()
	}()
	err = e.run(ctx)
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	if err == nil {
		e.progress("PASS in %s", time.Since(e.start).Round(time.Second))
		e.printReport()
	}
	return err
}

// makeRootfs makes the cached rootfs the hosts boot from, if it is not there yet.
func makeRootfs() error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return errors.New("debootstrap not found (Debian package debootstrap)")
	}
	e := &e2e{root: root, out: filepath.Join(root, "_output", "e2e-rootfs-logs"), start: time.Now()}
	if err := os.MkdirAll(filepath.Join(e.out, "logs"), 0o700); err != nil {
		return err
	}
	if err := e.ensureRootfs(); err != nil {
		return err
	}
	e.progress("rootfs ready in %s", time.Since(e.start).Round(time.Second))
	return nil
}

// prerequisites reports the first missing thing the suite needs.
func prerequisites(root string) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (network namespaces, systemd-nspawn)")
	}
	for _, c := range []string{"ip", "nsenter", "debootstrap", "systemd-nspawn", "ansible-playbook", "ssh", "ssh-keygen", "kubectl"} {
		if _, err := exec.LookPath(c); err != nil {
			return fmt.Errorf("%s not found (.ci/run installs it)", c)
		}
	}
	for _, b := range []string{"etcdctl", "etcdutl"} {
		if _, err := os.Stat(filepath.Join(root, "bin", b)); err != nil {
			return fmt.Errorf("bin/%s missing: run `make etcd-tools` (make e2e does)", b)
		}
	}
	for _, p := range packages {
		if m, _ := filepath.Glob(filepath.Join(root, "_output", "dist", p+"_*_amd64.deb")); len(m) != 1 {
			return fmt.Errorf("_output/dist has %d %s packages for amd64, want 1: run `make dist ARCH=amd64` (make e2e does)", len(m), p)
		}
	}
	return nil
}

func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run from inside the hacp module")
	}
	return filepath.Dir(mod), nil
}
