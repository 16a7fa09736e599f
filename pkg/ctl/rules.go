package ctl

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Problem is one reason the cluster is degraded. Master is empty for a problem of the
// whole cluster (no VIP holder).
type Problem struct {
	Master    string `json:"master,omitempty"`
	Component string `json:"component"`
	Message   string `json:"message"`
}

func (p Problem) String() string {
	if p.Master == "" {
		return p.Component + ": " + p.Message
	}
	return p.Master + ": " + p.Component + ": " + p.Message
}

// holders lists who holds each VIP: VRRP instances in MASTER state, or BGP masters that
// announce it.
func holders(r *Report) []VIPHolders {
	byKey := map[string]*VIPHolders{}
	var keys []string
	add := func(key string, h VIPHolders, holder string) {
		v := byKey[key]
		if v == nil {
			h.Holders = []string{}
			v = &h
			byKey[key] = v
			keys = append(keys, key)
		}
		if holder != "" {
			v.Holders = append(v.Holders, holder)
		}
	}
	for _, m := range r.Masters {
		if m.Vipd == nil {
			continue
		}
		for _, in := range m.Vipd.Instances {
			holder := ""
			if in.State == "MASTER" {
				holder = m.Name
			}
			add(fmt.Sprintf("vrrp/%d/%s", in.VRID, strings.Join(in.VIPs, ",")), VIPHolders{VIP: strings.Join(in.VIPs, ","), VRID: in.VRID, Mode: "vrrp"}, holder)
		}
		if m.Vipd.BGP != nil {
			for _, v := range m.Vipd.BGP.VIPs {
				holder := ""
				if v.Announced {
					holder = m.Name
				}
				add("bgp/"+v.Prefix, VIPHolders{VIP: v.Prefix, Mode: "bgp"}, holder)
			}
		}
	}
	out := make([]VIPHolders, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out
}

// judge lists what is degraded: unreachable masters first (the likeliest cause of the
// rest), then the VIPs, then each master's components in order.
func judge(r *Report, cfg *Config) []Problem {
	var first, rest []Problem
	for _, m := range r.Masters {
		if p, ok := unreachable(m); ok {
			first = append(first, p)
			continue
		}
		rest = append(rest, masterProblems(m, cfg)...)
	}
	var vips []Problem
	for _, v := range r.VIPs {
		switch {
		case len(v.Holders) == 0 && v.Mode == "bgp":
			vips = append(vips, Problem{Component: "vip", Message: fmt.Sprintf("%s is announced by no master", v.VIP)})
		case len(v.Holders) == 0:
			vips = append(vips, Problem{Component: "vip", Message: fmt.Sprintf("%s (vrid %d) is held by no master", v.VIP, v.VRID)})
		case len(v.Holders) > 1 && v.Mode == "vrrp":
			vips = append(vips, Problem{Component: "vip", Message: fmt.Sprintf("%s (vrid %d) is held by %d masters: %s", v.VIP, v.VRID, len(v.Holders), strings.Join(v.Holders, ", "))})
		}
	}
	return append(append(first, vips...), rest...)
}

// unreachable is the problem of a master none of whose programs answered.
func unreachable(m MasterStatus) (Problem, bool) {
	type comp struct{ name, err string }
	var failed []comp
	n := 0
	for _, c := range []comp{{"vipd", m.VipdError}, {"lbproxy", m.LbproxyError}, {"apiserver", m.ApiserverError}, {"etcd", m.EtcdError}} {
		if c.err != "" {
			failed = append(failed, c)
		}
	}
	if m.Vipd != nil || m.VipdError != "" {
		n++
	}
	if m.Lbproxy != nil || m.LbproxyError != "" {
		n++
	}
	if m.Apiserver != nil || m.ApiserverError != "" {
		n++
	}
	if (m.Etcd != nil && m.Etcd.Source == "etcd") || m.EtcdError != "" {
		n++
	}
	if len(failed) == 0 || len(failed) < n {
		return Problem{}, false
	}
	names := make([]string, len(failed))
	for i, c := range failed {
		names[i] = c.name
	}
	return Problem{Master: m.Name, Component: strings.Join(names, ", "), Message: "unreachable: " + failed[0].err}, true
}

// masterProblems are the problems of one master that answered at least in part.
func masterProblems(m MasterStatus, cfg *Config) []Problem {
	var ps []Problem
	add := func(comp, format string, args ...any) {
		ps = append(ps, Problem{Master: m.Name, Component: comp, Message: fmt.Sprintf(format, args...)})
	}
	for _, c := range []struct{ name, err string }{{"vipd", m.VipdError}, {"lbproxy", m.LbproxyError}, {"apiserver", m.ApiserverError}, {"etcd", m.EtcdError}} {
		if c.err != "" {
			add(c.name, "unreachable: %s", c.err)
		}
	}
	if v := m.Vipd; v != nil {
		if !v.Healthy {
			why := ""
			if v.Check != nil {
				why = suffix(v.Check.LastError)
			}
			add("vipd", "health check failing%s", why)
		}
		for _, in := range v.Instances {
			if in.State == "FAULT" {
				add("vipd", "instance %s is FAULT: %s", in.Name, in.Fault)
			}
		}
		if v.BGP != nil {
			for _, p := range v.BGP.Peers {
				if p.State != "established" {
					add("vipd", "BGP session with %s is %s", p.Address, p.State)
				}
			}
		}
		for _, c := range v.Conflicts {
			add("vipd", "VIP conflict (vipd_vip_conflict %s): another host claims the VIP", c)
		}
	}
	if l := m.Lbproxy; l != nil {
		for _, b := range l.Backends {
			if b.State == "DOWN" {
				add("lbproxy", "backend %s%s is DOWN%s", b.Addr, masterOf(b.Addr, cfg), suffix(b.Check.LastError))
			}
		}
	}
	if a := m.Apiserver; a != nil && !a.Ready {
		add("apiserver", "not ready: %s", a.NotReady)
	}
	if e := m.Etcd; e != nil {
		ps = append(ps, etcdProblems(m.Name, e, cfg)...)
	}
	for _, c := range m.Certs {
		switch {
		case c.Error:
			add(c.Program, "certificate %s (%s) cannot be read", c.Role, c.File)
		case c.Left <= 0:
			add(c.Program, "certificate %s (%s) expired %s ago", c.Role, c.File, days(-c.Left))
		case c.Left < cfg.CertWarn:
			add(c.Program, "certificate %s (%s) expires in %s", c.Role, c.File, days(c.Left))
		}
	}
	return ps
}

// dbQuotaPercent is the share of its quota an etcd db may fill before it is a problem.
const dbQuotaPercent = 80

func etcdProblems(master string, e *EtcdMember, cfg *Config) []Problem {
	var ps []Problem
	add := func(format string, args ...any) {
		ps = append(ps, Problem{Master: master, Component: "etcd", Message: fmt.Sprintf(format, args...)})
	}
	if !e.HasLeader {
		add("member has no leader")
	}
	for _, a := range e.Alarms {
		add("alarm %s", a)
	}
	for _, s := range e.Errors {
		add("member error: %s", s)
	}
	if e.DBQuota > 0 && e.DBSize*100 >= e.DBQuota*dbQuotaPercent {
		add("db %s is %d%% of its %s quota (NOSPACE, read-only, at 100%%: compact and defragment)", size(e.DBSize), e.DBSize*100/e.DBQuota, size(e.DBQuota))
	}
	if e.Lag > cfg.EtcdMaxLag {
		add("%d Raft entries behind the leader (etcd-max-lag %d)", e.Lag, cfg.EtcdMaxLag)
	}
	return ps
}

// masterOf is " (name)" of the master whose apiserver is at addr (host:port), or "".
func masterOf(addr string, cfg *Config) string {
	for _, m := range cfg.Masters {
		if u, err := url.Parse(m.Apiserver); err == nil && m.Apiserver != "" && u.Host == addr {
			return " (" + m.Name + ")"
		}
	}
	return ""
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// days writes a duration as days, or hours below two days.
func days(d time.Duration) string {
	if d < 48*time.Hour {
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}
