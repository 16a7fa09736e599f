package vip

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"time"
)

// A VIP handed over between two live masters leaves connections behind: they were opened
// with the old master, and from the new master's gratuitous ARP on their clients' packets
// come here, where no socket knows them and the kernel would answer with a reset (a request
// caught between its handshake and its response fails). For the handover drain, while the
// old master keeps the VIP bound (deprecated), the new master passes such packets back to it:
// an nftables rule duplicates every TCP packet to a VIP that conntrack sees as a new flow
// but is no SYN (a packet of a connection this host does not have) to the old master's
// address on the same segment, and drops the original. The old master's kernel delivers it
// to its socket. New connections, and this host's own, are untouched.

// forwardTable is the nftables table of one instance's handover forwarding.
func forwardTable(vrid uint8) string { return fmt.Sprintf("hacp_vipd_handover_%d", vrid) }

// forwardRules returns the nft script that installs the forwarding of packets for vips to
// old on iface (replacing an older one of the same instance).
func forwardRules(table, iface string, vips []netip.Prefix, old netip.Addr) string {
	var addrs []string
	for _, p := range vips {
		if p.Addr().Is4() {
			addrs = append(addrs, p.Addr().String())
		}
	}
	if len(addrs) == 0 || !old.Is4() {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "table ip %s {}\ndelete table ip %s\n", table, table)
	fmt.Fprintf(&b, "table ip %s {\n\tchain pre {\n\t\ttype filter hook prerouting priority -150; policy accept;\n", table)
	fmt.Fprintf(&b, "\t\tiifname %q ip daddr { %s } tcp flags & (syn | rst) == 0 ct state new dup to %s device %q drop\n",
		iface, strings.Join(addrs, ", "), old, iface)
	b.WriteString("\t}\n}\n")
	return b.String()
}

// nft runs nft -f - with script.
func nft(ctx context.Context, script string) error {
	cmd := exec.CommandContext(ctx, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("vip: nft: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// forwardFor passes the packets of connections this host does not know to old for d, then
// removes the rule. It returns at once if forwarding is off or nft is missing (logged once).
func (in *instance) forwardFor(old netip.Addr, d time.Duration) {
	if !in.g.HandoverForward {
		return
	}
	script := forwardRules(forwardTable(in.r.VRID), in.r.Iface, in.allVIPs(), old)
	if script == "" {
		return
	}
	if _, err := exec.LookPath("nft"); err != nil {
		if in.d.nftMissing.CompareAndSwap(false, true) {
			in.log.Warn("nft not found: connections a handover leaves behind are reset instead of passed to the old master (install nftables or set --handover-forward=false)")
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := nft(ctx, script); err != nil {
		in.log.Error("cannot pass the old master's connections back to it", "old", old.String(), "err", err.Error())
		return
	}
	in.log.Info("passing packets of connections this host does not know to the old master", "old", old.String(), "for", d.String())
	go func() {
		select {
		case <-time.After(d):
		case <-in.done:
		}
		in.stopForward()
	}()
}

// stopForward removes the handover forwarding, if any (also one a killed predecessor left).
func (in *instance) stopForward() {
	if !in.g.HandoverForward {
		return
	}
	if _, err := exec.LookPath("nft"); err != nil {
		return
	}
	t := forwardTable(in.r.VRID)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := nft(ctx, fmt.Sprintf("table ip %s {}\ndelete table ip %s\n", t, t)); err != nil {
		in.log.Warn("cannot remove the handover forwarding", "table", t, "err", err.Error())
	}
}
