package main

import (
	"fmt"
	"strings"
	"syscall"
	"time"
)

// bgpStall is --bgp-stall: in hacp-bgp's kill-master, 1 s after the crash, the surviving
// masters' vipd ("vipd") or the router's bfdd ("bfdd") are stopped (SIGSTOP) for a while,
// which both ends of the BFD sessions take for a failure: the false BFD Down a host starved
// of CPU causes, made to happen inside the recording window.
type bgpStall struct {
	who string // "vipd" or "bfdd"; "": none
	dur time.Duration
}

// stallDelay is when, after the crash, the stall starts: after the router dropped m1.
const stallDelay = time.Second

func parseBGPStall(s string) (bgpStall, error) {
	if s == "" {
		return bgpStall{}, nil
	}
	who, d, ok := strings.Cut(s, ":")
	dur, err := time.ParseDuration(d)
	if !ok || (who != "vipd" && who != "bfdd") || err != nil || dur <= 0 || dur > 10*time.Second {
		return bgpStall{}, fmt.Errorf("want vipd:DURATION or bfdd:DURATION (at most 10s), got %q", s)
	}
	return bgpStall{who: who, dur: dur}, nil
}

// stall runs --bgp-stall after a crash of m1, in the background.
func (c *cluster) stall() {
	st := c.d.opts.bgpStall
	if st.who == "" || !c.spec.BGP {
		return
	}
	var procs []*proc
	c.mu.Lock()
	if st.who == "bfdd" {
		for _, p := range c.frr {
			if p.Name == "bfdd" {
				procs = append(procs, p)
			}
		}
	} else {
		for _, m := range c.d.masters[1:] {
			if ps := c.plane[m.Name]; len(ps) > 0 {
				procs = append(procs, ps[len(ps)-1]) // vipd starts last (stopVipdFirst)
			}
		}
	}
	c.mu.Unlock()
	go func() {
		time.Sleep(stallDelay)
		c.d.progress("%s: --bgp-stall: %s stopped for %v", c.spec.Name, st.who, st.dur)
		for _, p := range procs {
			p.Signal(syscall.SIGSTOP)
		}
		time.Sleep(st.dur)
		for _, p := range procs {
			p.Signal(syscall.SIGCONT)
		}
	}()
}
