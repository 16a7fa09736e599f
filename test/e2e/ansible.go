package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// rootfsPackages are installed by debootstrap into the cached rootfs: what ansible and
// the daemons need on a minimal Debian (vipd needs nothing beyond the kernel).
const rootfsPackages = "systemd,systemd-sysv,dbus,python3,openssh-server,iproute2,procps,ca-certificates,curl,nftables"

// rootfsVersion names the cache: change it when rootfsPackages change.
const rootfsVersion = "bookworm-2"

func (e *e2e) rootfs() string { return filepath.Join(e.root, "_output", "e2e-rootfs") }
func (e *e2e) sshKey() string { return filepath.Join(e.out, "id_ed25519") }

// ensureRootfs debootstraps the Debian rootfs once; later runs reuse it.
func (e *e2e) ensureRootfs() error {
	dir := e.rootfs()
	ready := filepath.Join(dir, ".hacp-e2e-"+rootfsVersion)
	if _, err := os.Stat(ready); err == nil {
		return nil
	}
	// A rootfs of another version (other packages) is made again from scratch.
	if _, err := os.Stat(filepath.Join(dir, ".debootstrap-done-"+rootfsVersion)); err != nil {
		e.progress("debootstrap bookworm into %s (once; a few minutes)", dir)
		tmp := dir + ".tmp"
		_ = os.RemoveAll(tmp)
		_ = os.RemoveAll(dir)
		cmd := exec.Command("debootstrap", "--variant=minbase", "--include="+rootfsPackages, "bookworm", tmp, "http://deb.debian.org/debian")
		logPath := filepath.Join(e.out, "logs", "debootstrap.log")
		logf, err := os.Create(logPath)
		if err != nil {
			return err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		err = cmd.Run()
		logf.Close()
		if err != nil {
			return fmt.Errorf("debootstrap failed (see %s): %w", logPath, err)
		}
		if err := os.WriteFile(filepath.Join(tmp, ".debootstrap-done-"+rootfsVersion), nil, 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, dir); err != nil {
			return err
		}
	}
	// sshd is enabled by its package; an empty machine-id makes every container get its own.
	if err := os.WriteFile(filepath.Join(dir, "etc/machine-id"), nil, 0o444); err != nil {
		return err
	}
	return os.WriteFile(ready, nil, 0o644)
}

func (e *e2e) ensureSSHKey() error {
	if _, err := os.Stat(e.sshKey()); err == nil {
		return nil
	}
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "hacp-e2e", "-f", e.sshKey()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ssh-keygen: %v: %s", err, out)
	}
	return nil
}

// writeInventory writes the inventory of the given masters; the ones in joining are
// added to a running cluster (their etcd member joins an existing cluster).
func (e *e2e) writeInventory(masters []*host, joining ...*host) error {
	var b strings.Builder
	b.WriteString("[masters]\n")
	for _, h := range masters {
		fmt.Fprintf(&b, "%s ansible_host=%s vrrp_priority=%d", h.Name, h.Addr, h.Priority)
		for _, j := range joining {
			if j == h {
				b.WriteString(" hacp_etcd_initial_cluster_state=existing")
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\n[masters:vars]\nvip=%s\nvip_prefix=24\nvip_iface=eth0\n", vip)
	fmt.Fprintf(&b, "ansible_user=root\nansible_ssh_private_key_file=%s\n", e.sshKey())
	return os.WriteFile(e.inventory(), []byte(b.String()), 0o600)
}

func (e *e2e) inventory() string { return filepath.Join(e.out, "inventory.ini") }

// recap is one host's line of ansible's PLAY RECAP.
type recap struct {
	OK, Changed, Unreachable, Failed int
}

var recapLine = regexp.MustCompile(`^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)`)

// parseRecap reads the PLAY RECAP lines of ansible-playbook's output.
func parseRecap(out string) map[string]recap {
	res := map[string]recap{}
	sc := bufio.NewScanner(strings.NewReader(out))
	inRecap := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "PLAY RECAP") {
			inRecap = true
			continue
		}
		if !inRecap {
			continue
		}
		m := recapLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
		res[m[1]] = recap{OK: n(2), Changed: n(3), Unreachable: n(4), Failed: n(5)}
	}
	return res
}

// playbook runs one of deploy/ansible's playbooks from the control namespace and returns
// the recap per host; a failed run is an error that shows the end of the log.
func (e *e2e) playbook(name string, extra ...string) (map[string]recap, time.Duration, error) {
	e.plays++
	logPath := filepath.Join(e.out, "logs", fmt.Sprintf("%02d-%s.log", e.plays, strings.TrimSuffix(name, ".yml")))
	dir := filepath.Join(e.root, "deploy", "ansible")
	args := []string{"netns", "exec", ctlNS, "ansible-playbook", "-i", e.inventory(),
		"-e", "hacp_bin_dir=" + filepath.Join(e.root, "bin"),
		"-e", "hacp_dist_dir=" + filepath.Join(e.root, "_output", "dist"),
		"-e", "hacp_pki_dir=" + filepath.Join(e.out, "pki"),
		"-e", "hacp_backup_dir=" + filepath.Join(e.out, "backups"),
		filepath.Join(dir, name)}
	args = append(args, extra...)
	cmd := exec.Command("ip", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ANSIBLE_CONFIG="+filepath.Join(dir, "ansible.cfg"), "ANSIBLE_NOCOLOR=1", "ANSIBLE_FORCE_COLOR=0",
		"ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks") // per-task times in the log
	logf, err := os.Create(logPath) // written as it runs: tail -f it to follow a slow run
	if err != nil {
		return nil, 0, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	logf.Close()
	out, rerr := os.ReadFile(logPath)
	if rerr != nil {
		return nil, took, rerr
	}
	rc := parseRecap(string(out))
	if err != nil {
		return rc, took, fmt.Errorf("ansible-playbook %s failed: %v (log %s):\n%s", name, err, logPath, tail(string(out), 4000))
	}
	for h, r := range rc {
		if r.Failed > 0 || r.Unreachable > 0 {
			return rc, took, fmt.Errorf("ansible-playbook %s: %s failed=%d unreachable=%d (log %s)", name, h, r.Failed, r.Unreachable, logPath)
		}
	}
	return rc, took, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
