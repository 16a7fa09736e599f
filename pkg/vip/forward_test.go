package vip

import (
	"net/netip"
	"strings"
	"testing"
)

func TestForwardRules(t *testing.T) {
	vips := []netip.Prefix{netip.MustParsePrefix("10.77.1.100/24"), netip.MustParsePrefix("fd00::100/64"), netip.MustParsePrefix("10.77.1.101/24")}
	got := forwardRules("hacp_vipd_handover_51", "eth0", vips, netip.MustParseAddr("10.77.1.11"))
	for _, want := range []string{
		"delete table ip hacp_vipd_handover_51\n",
		`iifname "eth0" ip daddr { 10.77.1.100, 10.77.1.101 } tcp flags & (syn | rst) == 0 ct state new dup to 10.77.1.11 device "eth0" drop`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rules lack %q:\n%s", want, got)
		}
	}
	if got := forwardRules("t", "eth0", vips[1:2], netip.MustParseAddr("10.77.1.11")); got != "" {
		t.Errorf("IPv6-only VIPs: rules %q, want none", got)
	}
}
