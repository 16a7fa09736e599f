package netns

import (
	"net/netip"
	"os"
	"strings"
	"testing"
)

// envRerunAddr tells a test binary started by RerunInHost that it is the run inside the
// host, and the host's address.
const envRerunAddr = "HACP_NETNS_RERUN_ADDR"

// RerunInHost runs the calling top-level test again, alone, in its own test binary inside a
// new host namespace (prefix+"h" at subnet.2 on a bridge), for a test whose whole process
// must sit in a namespace: an in-process server that dials addresses of 10.77.0.0/16, which
// the machine's own namespace must not route. In that run it returns the host's address and
// true. In the calling run it waits for that run, fails (or skips) as it did, and returns
// false: the test then returns at once.
func RerunInHost(t *testing.T, prefix, subnet string) (netip.Addr, bool) {
	t.Helper()
	if a := os.Getenv(envRerunAddr); a != "" {
		addr, err := netip.ParseAddr(a)
		if err != nil {
			t.Fatalf("netns: %s=%q: %v", envRerunAddr, a, err)
		}
		return addr, true
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := New(t, prefix, subnet).AddHost("h", 2)
	cmd := h.Command(t.Context(), exe, "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envRerunAddr+"="+h.Addr.String())
	out, err := cmd.CombinedOutput()
	switch {
	case strings.Contains(string(out), "--- SKIP: "+t.Name()+" "):
		t.Skipf("skipped in host %s:\n%s", h.NS, out)
	case err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()+" "):
		t.Fatalf("in host %s (%s): %v:\n%s", h.NS, h.Addr, err, out)
	}
	return netip.Addr{}, false
}
