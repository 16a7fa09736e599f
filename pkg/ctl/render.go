package ctl

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for a terminal: one line per master and component, who
// holds each VIP, each lbproxy's backends, then the verdict.
func WriteText(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MASTER\tVIPD\tLBPROXY\tAPISERVER\tETCD\tCERTS")
	for _, m := range r.Masters {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, vipdCell(m), lbproxyCell(m), apiserverCell(m), etcdCell(m), certsCell(m))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, v := range r.VIPs {
		held := "held by"
		if v.Mode == "bgp" {
			held = "announced by"
		}
		who := strings.Join(v.Holders, ", ")
		if who == "" {
			who = "none"
		}
		if v.VRID != 0 {
			fmt.Fprintf(w, "VIP %s (vrid %d): %s %s\n", v.VIP, v.VRID, held, who)
		} else {
			fmt.Fprintf(w, "VIP %s: %s %s\n", v.VIP, held, who)
		}
	}
	writeBackends(w, r)
	if r.Healthy {
		_, err := fmt.Fprintf(w, "OK: %d masters healthy\n", len(r.Masters))
		return err
	}
	fmt.Fprintf(w, "DEGRADED (%d):\n", len(r.Problems))
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
	return nil
}

// Reason is the one-line verdict for stderr: the first problem, and how many more.
func (r *Report) Reason() string {
	if r.Healthy {
		return ""
	}
	s := r.Problems[0].String()
	if n := len(r.Problems) - 1; n > 0 {
		s += fmt.Sprintf(" (and %d more)", n)
	}
	return s
}

func vipdCell(m MasterStatus) string {
	switch {
	case m.VipdError != "":
		return "unreachable"
	case m.Vipd == nil:
		return "-"
	}
	var parts []string
	for _, in := range m.Vipd.Instances {
		parts = append(parts, fmt.Sprintf("%s prio %d", in.State, in.EffectivePriority))
	}
	if b := m.Vipd.BGP; b != nil {
		up := 0
		for _, p := range b.Peers {
			if p.State == "established" {
				up++
			}
		}
		announced := 0
		for _, v := range b.VIPs {
			if v.Announced {
				announced++
			}
		}
		parts = append(parts, fmt.Sprintf("bgp %d/%d peers up, %d/%d announced", up, len(b.Peers), announced, len(b.VIPs)))
	}
	if len(m.Vipd.Conflicts) > 0 {
		parts = append(parts, "CONFLICT")
	}
	return strings.Join(parts, ", ")
}

func lbproxyCell(m MasterStatus) string {
	switch {
	case m.LbproxyError != "":
		return "unreachable"
	case m.Lbproxy == nil:
		return "-"
	}
	up := 0
	for _, b := range m.Lbproxy.Backends {
		if b.State == "UP" {
			up++
		}
	}
	return fmt.Sprintf("%d/%d up, %d sessions", up, len(m.Lbproxy.Backends), m.Lbproxy.ActiveConns)
}

func apiserverCell(m MasterStatus) string {
	switch {
	case m.ApiserverError != "":
		return "unreachable"
	case m.Apiserver == nil:
		return "-"
	case m.Apiserver.Ready:
		return "ready " + m.Apiserver.GitVersion
	}
	return "NOT READY " + m.Apiserver.GitVersion
}

func etcdCell(m MasterStatus) string {
	switch {
	case m.EtcdError != "":
		return "unreachable"
	case m.Etcd == nil:
		return "-"
	}
	e := m.Etcd
	role := "follower"
	switch {
	case e.Leader:
		role = "leader"
	case e.Learner:
		role = "learner"
	case !e.HasLeader:
		role = "NO LEADER"
	}
	s := fmt.Sprintf("%s, index %d, lag %d, db %s", role, e.RaftIndex, e.Lag, size(e.DBSize))
	if len(e.Alarms) > 0 {
		s += ", ALARM " + strings.Join(e.Alarms, " ")
	}
	return s
}

func certsCell(m MasterStatus) string {
	if len(m.Certs) == 0 {
		return "-"
	}
	least := time.Duration(1<<63 - 1)
	bad := 0
	for _, c := range m.Certs {
		if c.Error {
			bad++
			continue
		}
		least = min(least, c.Left)
	}
	s := fmt.Sprintf("%d, first expires in %s", len(m.Certs), days(least))
	if bad > 0 {
		s += fmt.Sprintf(", %d unreadable", bad)
	}
	return s
}

// writeBackends writes each backend's state on every lbproxy that answered.
func writeBackends(w io.Writer, r *Report) {
	var cols []MasterStatus
	rows := map[string]map[string]string{}
	for _, m := range r.Masters {
		if m.Lbproxy == nil {
			continue
		}
		cols = append(cols, m)
		for _, b := range m.Lbproxy.Backends {
			if rows[b.Addr] == nil {
				rows[b.Addr] = map[string]string{}
			}
			rows[b.Addr][m.Name] = fmt.Sprintf("%s %d", b.State, b.ActiveConns)
		}
	}
	if len(cols) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "BACKEND (state sessions)")
	for _, m := range cols {
		fmt.Fprint(tw, "\tlbproxy@"+m.Name)
	}
	fmt.Fprintln(tw)
	for _, addr := range slices.Sorted(maps.Keys(rows)) {
		fmt.Fprint(tw, addr)
		for _, m := range cols {
			cell := rows[addr][m.Name]
			if cell == "" {
				cell = "-"
			}
			fmt.Fprint(tw, "\t"+cell)
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
}

// size writes a byte count in KiB, MiB or GiB.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n/1024)
}
