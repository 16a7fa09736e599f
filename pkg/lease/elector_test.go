package lease

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
)

// The elector's tests run against a real apiserver with its own embedded etcd.

func startAPIServer(t *testing.T) (*server.Server, *Credentials) {
	t.Helper()
	s := servertest.New(t, nil)
	creds, err := LoadKubeconfig(s.KubeconfigPath(), "")
	if err != nil {
		t.Fatal(err)
	}
	return s, creds
}

// testConfig is a candidate with short timers (the lease duration is whole seconds).
func testConfig(creds *Credentials, id string) Config {
	return Config{Credentials: creds, Namespace: "kube-system", Name: "vipd-test", Identity: id,
		Duration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond}
}

// candidate is a running elector and a record of its leadership.
type candidate struct {
	e      *Elector
	cancel context.CancelFunc
	done   chan struct{}
	leader atomic.Bool
	gained atomic.Int32
	lost   atomic.Int32
}

func startCandidate(t *testing.T, cfg Config) *candidate {
	t.Helper()
	c := &candidate{done: make(chan struct{})}
	cfg.OnChange = func(l bool) {
		c.leader.Store(l)
		if l {
			c.gained.Add(1)
		} else {
			c.lost.Add(1)
		}
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.e = e
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		defer close(c.done)
		e.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-c.done })
	return c
}

// stop ends the candidate's Run without releasing the Lease (as a crash would).
func (c *candidate) stop() {
	c.cancel()
	<-c.done
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func getLease(t *testing.T, creds *Credentials) *coordinationv1.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := newClient(creds, "kube-system", "vipd-test").get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func leaders(cs []*candidate) int {
	n := 0
	for _, c := range cs {
		if c.e.Leader() {
			n++
		}
	}
	return n
}

// TestElectRenewRelease: of three candidates exactly one leads and keeps renewing; when it
// releases the Lease another takes over at once (the lease duration here is far longer than
// the test's patience), and the Lease's holder and transitions say so.
func TestElectRenewRelease(t *testing.T) {
	_, creds := startAPIServer(t)
	var cs []*candidate
	for i := range 3 {
		cfg := testConfig(creds, fmt.Sprintf("m%d", i+1))
		cfg.Duration = time.Hour
		cs = append(cs, startCandidate(t, cfg))
	}
	waitFor(t, "one leader", func() bool { return leaders(cs) == 1 })
	var first *candidate
	for _, c := range cs {
		if c.e.Leader() {
			first = c
		}
	}
	l := getLease(t, creds)
	if holderOf(l) != first.e.cfg.Identity || *l.Spec.LeaseDurationSeconds != 3600 {
		t.Fatalf("lease holder %q duration %d, want %s and 3600", holderOf(l), *l.Spec.LeaseDurationSeconds, first.e.cfg.Identity)
	}
	renewed := l.Spec.RenewTime.Time
	waitFor(t, "the leader renews", func() bool { return getLease(t, creds).Spec.RenewTime.After(renewed) })
	if n := leaders(cs); n != 1 {
		t.Fatalf("%d leaders while the first renews", n)
	}
	waitFor(t, "every candidate sees the leader as holder", func() bool {
		for _, c := range cs {
			if c.e.Status().Holder != first.e.cfg.Identity {
				return false
			}
		}
		return true
	})
	if n := leaders(cs); n != 1 {
		t.Fatalf("%d leaders", n)
	}

	first.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := first.e.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if first.e.Leader() {
		t.Fatal("still leader after Release")
	}
	waitFor(t, "another candidate takes the released lease", func() bool { return leaders(cs) == 1 })
	l = getLease(t, creds)
	if h := holderOf(l); h == first.e.cfg.Identity || h == "" {
		t.Fatalf("holder after release: %q", h)
	}
	if *l.Spec.LeaseTransitions != 1 {
		t.Fatalf("leaseTransitions %d, want 1", *l.Spec.LeaseTransitions)
	}
}

// TestExpiry: a leader that stops renewing without releasing (a crash) loses the Lease to a
// candidate once the lease duration has passed since the candidate last saw it change.
func TestExpiry(t *testing.T) {
	_, creds := startAPIServer(t)
	a := startCandidate(t, testConfig(creds, "a"))
	waitFor(t, "a leads", func() bool { return a.e.Leader() })
	b := startCandidate(t, testConfig(creds, "b"))
	waitFor(t, "b sees a's lease", func() bool { return b.e.Status().Holder == "a" })
	a.stop()
	waitFor(t, "b takes over the expired lease", func() bool { return b.e.Leader() })
	if h := holderOf(getLease(t, creds)); h != "b" {
		t.Fatalf("holder %q, want b", h)
	}
}

// TestConcurrentTakeover: candidates racing for a free Lease (absent, then released) all
// read it and write it with its resourceVersion; the apiserver lets exactly one write
// through each time and the others see a conflict (or the winner's fresh Lease).
func TestConcurrentTakeover(t *testing.T) {
	_, creds := startAPIServer(t)
	var es []*Elector
	for i := range 6 {
		e, err := New(testConfig(creds, fmt.Sprintf("c%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	for round := range 10 {
		var wins atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, len(es))
		for _, e := range es {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				won, err := e.tryAcquireOrRenew(ctx, time.Now())
				if err != nil {
					errs <- err
				}
				if won {
					wins.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		if n := wins.Load(); n != 1 {
			t.Fatalf("round %d: %d candidates won the free lease, want 1", round, n)
		}
		// Free it again for the next round.
		for _, e := range es {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := e.release(ctx); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
		if h := holderOf(getLease(t, creds)); h != "" {
			t.Fatalf("round %d: holder %q after release", round, h)
		}
	}
}

// TestStaleWriteConflicts: an update carrying a resourceVersion that is no longer current
// is refused, and the elector reports it as a lost race, not an error.
func TestStaleWriteConflicts(t *testing.T) {
	_, creds := startAPIServer(t)
	e, err := New(testConfig(creds, "a"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if won, err := e.tryAcquireOrRenew(ctx, time.Now()); !won || err != nil {
		t.Fatalf("first acquire: %v %v", won, err)
	}
	stale := getLease(t, creds)
	if won, err := e.tryAcquireOrRenew(ctx, time.Now()); !won || err != nil {
		t.Fatalf("renew: %v %v", won, err)
	}
	other := "b"
	stale.Spec.HolderIdentity = &other
	if _, err := e.c.update(ctx, stale); err != errConflict {
		t.Fatalf("update with a stale resourceVersion: %v, want a conflict", err)
	}
	if h := holderOf(getLease(t, creds)); h != "a" {
		t.Fatalf("holder %q after the refused write", h)
	}
}

// TestStepDown: a leader steps down when it becomes ineligible (and releases the Lease, so
// the other candidate leads at once), and when it cannot renew before the renew deadline
// because its apiserver is gone.
func TestStepDown(t *testing.T) {
	s, creds := startAPIServer(t)
	var eligible atomic.Bool
	eligible.Store(true)
	cfgA := testConfig(creds, "a")
	cfgA.Eligible = eligible.Load
	cfgA.Duration = time.Hour
	a := startCandidate(t, cfgA)
	waitFor(t, "a leads", func() bool { return a.e.Leader() })
	cfgB := testConfig(creds, "b")
	cfgB.Duration = time.Hour
	b := startCandidate(t, cfgB)
	waitFor(t, "b sees a's lease", func() bool { return b.e.Status().Holder == "a" })

	eligible.Store(false)
	a.e.Wake()
	waitFor(t, "a steps down", func() bool { return !a.leader.Load() && a.lost.Load() == 1 })
	waitFor(t, "b takes the released lease", func() bool { return b.e.Leader() })
	eligible.Store(true)

	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b steps down once it cannot renew", func() bool { return !b.leader.Load() && b.lost.Load() == 1 })
	if st := b.e.Status(); st.Error == "" {
		t.Fatalf("status without the failed request's error: %+v", st)
	}
}

// TestLoadKubeconfig reads client-go's format: inline data, files relative to the
// kubeconfig, a token, the server override; and says what is wrong with a bad file.
func TestLoadKubeconfig(t *testing.T) {
	s, creds := startAPIServer(t)
	if creds.Server != strings.TrimSuffix(s.URL(), "/") || len(creds.TLS.Certificates) != 1 || creds.TLS.RootCAs == nil {
		t.Fatalf("admin kubeconfig: server %q, %d client certificates, CA %v", creds.Server, len(creds.TLS.Certificates), creds.TLS.RootCAs != nil)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(body string) string {
		p := filepath.Join(dir, "kc")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `apiVersion: v1
kind: Config
current-context: x
clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443/", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {tokenFile: token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
`
	c, err := LoadKubeconfig(write(good), "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Server != "https://10.0.0.1:6443" || c.Token != "abc" || !c.TLS.InsecureSkipVerify {
		t.Fatalf("got server %q token %q insecure %v", c.Server, c.Token, c.TLS.InsecureSkipVerify)
	}
	if c, err = LoadKubeconfig(write(good), "https://127.0.0.1:6443"); err != nil || c.Server != "https://127.0.0.1:6443" {
		t.Fatalf("server override: %v %v", c, err)
	}
	for name, tc := range map[string]struct{ body, want string }{
		"no context":  {strings.Replace(good, "current-context: x", "current-context: y", 1), `no context "y"`},
		"bad CA file": {strings.Replace(good, "insecure-skip-tls-verify: true", "certificate-authority: ca.crt", 1), "no PEM certificate"},
		"bad data":    {strings.Replace(good, "tokenFile: token", "client-certificate-data: '%%%'", 1), "not base64"},
		"not yaml":    {"{{{", "kubeconfig"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := LoadKubeconfig(write(tc.body), ""); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := LoadKubeconfig(filepath.Join(dir, "missing"), ""); err == nil {
		t.Fatal("missing file accepted")
	}
}
