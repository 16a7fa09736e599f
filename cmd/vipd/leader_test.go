package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/pkg/lease"
)

// apiserverAt is the hacp apiserver holding the leader mode's Lease: it runs in the router
// namespace (its own embedded etcd on the router's loopback) and every master reaches it
// through its default route.
const apiserverAt = "10.77.41.1:6443"

// startLeaseAPIServer starts a real apiserver in h and returns the admin kubeconfig it
// wrote (pointing at apiserverAt) once it is ready.
func startLeaseAPIServer(t *testing.T, h *netns.Host) (string, *netns.Proc) {
	t.Helper()
	dir := t.TempDir()
	p := h.Start(apiserverBin, "--bind-address", "0.0.0.0", "--secure-port", "6443", "--data-dir", dir,
		"--tls-san", "10.77.41.1", "--advertise-url", "https://"+apiserverAt, "--shutdown-delay", "0s",
		"--etcd-unsafe-no-fsync", "--etcd-listen-client-url", "https://127.0.0.1:2379",
		"--etcd-listen-peer-urls", "http://127.0.0.1:2380")
	kc := filepath.Join(dir, "admin.kubeconfig")
	waitFor(t, 60*time.Second, "the apiserver's admin kubeconfig", func() bool {
		_, err := os.Stat(kc)
		return err == nil
	})
	waitFor(t, 60*time.Second, "the apiserver ready", func() bool {
		resp, err := apiClient(t, h, kc).Get("https://" + apiserverAt + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return kc, p
}

// apiClient is an admin HTTPS client dialing from inside h.
func apiClient(t *testing.T, h *netns.Host, kubeconfig string) *http.Client {
	t.Helper()
	creds, err := lease.LoadKubeconfig(kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	return nsHTTPClient(h, creds.TLS)
}

// nsHTTPClient is an HTTP client whose connections are dialed inside h.
func nsHTTPClient(h *netns.Host, tc *tls.Config) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   tc,
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var c net.Conn
			err := h.Do(func() (err error) {
				var d net.Dialer
				c, err = d.DialContext(ctx, network, addr)
				return err
			})
			return c, err
		},
	}}
}

// getLease reads the leader mode's Lease, or nil.
func getLease(t *testing.T, h *netns.Host, kubeconfig string) *coordinationv1.Lease {
	t.Helper()
	resp, err := apiClient(t, h, kubeconfig).Get("https://" + apiserverAt + "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/vipd-bgp")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	var l coordinationv1.Lease
	if json.NewDecoder(resp.Body).Decode(&l) != nil {
		return nil
	}
	return &l
}

func holder(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// leaderOf returns the master whose vipd reports holding the Lease and announcing, or nil
// unless exactly one does.
func leaderOf(masters []*netns.Host) *netns.Host {
	var found *netns.Host
	for _, m := range masters {
		st, err := getStatus(m)
		if err != nil || st.BGP == nil || st.BGP.Leader == nil {
			continue
		}
		if st.BGP.Leader.Leader {
			if found != nil {
				return nil
			}
			found = m
		}
	}
	return found
}

// TestBGPLeaderWithFRR: three masters in three /24s run vipd with --bgp-announce leader and
// a Lease on a real hacp apiserver. Exactly one route reaches the router, through the
// leader; the others report "not the leader". SIGTERM of the leader withdraws its route and
// releases the Lease, and another master announces without waiting for the Lease to expire;
// a crash of the new leader (SIGSTOP + SIGKILL, link down) leaves the Lease to expire, and
// the last master announces then. A leader that cannot renew (its apiserver stopped)
// withdraws at the renew deadline, and announces again once it can.
func TestBGPLeaderWithFRR(t *testing.T) {
	rn := newRoutedNet(t, "hb-l")
	f := startFRR(t, rn.router, frrConf)
	kc, api := startLeaseAPIServer(t, rn.router)
	procs := map[*netns.Host]*netns.Proc{}
	for _, m := range rn.masters {
		startBackend(t, m)
	}
	for i, m := range rn.masters {
		startLBProxy(t, m, rn.masters)
		procs[m] = startVipd(t, m, vipdArgs(rn, i, "--bgp-announce", "leader", "--kubeconfig", kc,
			"--lease-identity", m.Name)...)
	}

	var leader *netns.Host
	waitFor(t, 90*time.Second, "one leader, the router's only path through it", func() bool {
		leader = leaderOf(rn.masters)
		return leader != nil && equal(f.nexthops(), addrs(leader)) && equal(kernelNexthops(rn.router), addrs(leader))
	})
	if h := holder(getLease(t, rn.router, kc)); h != leader.Name {
		t.Fatalf("Lease holder %q, leader by status %s", h, leader.Name)
	}
	for _, m := range rn.masters {
		if m == leader {
			continue
		}
		waitFor(t, 30*time.Second, m.Name+" reports the leader and its route not announced", func() bool {
			st, err := getStatus(m)
			if err != nil || st.BGP.Leader == nil {
				return false
			}
			v := st.BGP.VIPs[0]
			return st.BGP.Announce == "leader" && !st.BGP.Leader.Leader && st.BGP.Leader.Holder == leader.Name &&
				!v.Announced && v.Reason == "not the leader" && st.BGP.Peers[0].Established()
		})
		if onLo(m) {
			t.Fatalf("%s binds the VIP although it is not the leader", m.Name)
		}
	}
	if !onLo(leader) {
		t.Fatalf("leader %s does not bind the VIP", leader.Name)
	}
	if got := metric(t, leader, "vipd_bgp_leader"); got != "1" {
		t.Fatalf("leader's vipd_bgp_leader = %q", got)
	}
	waitFor(t, 60*time.Second, "the client reaches VIP:8443 through the leader", func() bool {
		_, err := getName(rn.client)
		return err == nil
	})
	if n := f.nexthops(); !equal(n, addrs(leader)) {
		t.Fatalf("router paths %v, want only the leader %s", n, leader.Name)
	}

	// SIGTERM: withdrawn, then released; another master takes over at once.
	before := getLease(t, rn.router, kc)
	old := leader
	start := time.Now()
	procs[old].Signal(syscall.SIGTERM)
	waitFor(t, 60*time.Second, "another master's route replaces the stopped leader's", func() bool {
		leader = leaderOf(rn.masters)
		return leader != nil && leader != old && equal(f.nexthops(), addrs(leader))
	})
	t.Logf("graceful handover %s -> %s: route through the new leader %.2fs after SIGTERM", old.Name, leader.Name, time.Since(start).Seconds())
	waitExit(t, procs[old])
	// The Lease is released once the withdrawals are sent, before the sessions close.
	out := procs[old].Output()
	ri, ci := strings.Index(out, "lease released"), strings.Index(out, "BGP routes withdrawn and sessions closed")
	if ri < 0 || ci < ri {
		t.Fatalf("the stopped leader did not release the lease before closing its sessions:\n%s", out)
	}
	after := getLease(t, rn.router, kc)
	if holder(after) != leader.Name || after.Spec.AcquireTime == nil || before.Spec.RenewTime == nil {
		t.Fatalf("Lease after the handover: %+v", after.Spec)
	}
	// The new leader acquired the Lease before the stopped one's last renewal could have
	// expired: it did not wait for the expiry.
	if exp := before.Spec.RenewTime.Add(15 * time.Second); !after.Spec.AcquireTime.Time.Before(exp) {
		t.Fatalf("new leader acquired at %s, after the old lease's expiry %s", after.Spec.AcquireTime, exp)
	}

	// Crash of the new leader: nobody releases; the Lease expires.
	crashed := leader
	start = time.Now()
	crashed.Crash()
	waitFor(t, 120*time.Second, "the last master announces once the crashed leader's lease expired", func() bool {
		leader = leaderOf(rn.masters)
		return leader != nil && leader != crashed && leader != old && equal(f.nexthops(), addrs(leader))
	})
	t.Logf("crash handover %s -> %s: route through the new leader only %.2fs after the crash", crashed.Name, leader.Name, time.Since(start).Seconds())
	if h := holder(getLease(t, rn.router, kc)); h != leader.Name {
		t.Fatalf("Lease holder %q, want %s", h, leader.Name)
	}
	waitFor(t, 60*time.Second, "the client reaches VIP:8443 through the last master", func() bool {
		_, err := getName(rn.client)
		return err == nil
	})

	// The apiserver stops answering: the leader cannot renew and withdraws at the renew
	// deadline, so that no route outlives its claim to the Lease.
	last := leader
	api.Signal(syscall.SIGSTOP)
	waitFor(t, 60*time.Second, "the leader withdraws once it cannot renew the lease", func() bool {
		st, err := getStatus(last)
		return err == nil && !st.BGP.Leader.Leader && !st.BGP.VIPs[0].Announced && st.BGP.Leader.Error != "" &&
			len(f.nexthops()) == 0
	})
	api.Signal(syscall.SIGCONT)
	waitFor(t, 60*time.Second, "a leader announces again once the apiserver answers", func() bool {
		leader = leaderOf(rn.masters)
		return leader != nil && equal(f.nexthops(), addrs(leader))
	})
}

// metric returns the value of an unlabelled metric on h's vipd, or "".
func metric(t *testing.T, h *netns.Host, name string) string {
	t.Helper()
	resp, err := nsHTTPClient(h, nil).Get("http://" + statusAt + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}
