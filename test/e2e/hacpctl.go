package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// hacpctlStatus runs `hacpctl status` on m1 as Ansible set it up (/etc/hacp/hacpctl.yaml):
// healthy, exit 0; then a master other than m1 and the VIP holder crashes, and it exits
// non-zero naming that master; the master boots again and the status is healthy again.
func (e *e2e) hacpctlStatus(ctx context.Context) error {
	runner := e.hosts[0]
	var victim *host
	holders := e.holders()
	for _, h := range e.hosts[1:] {
		if len(holders) != 1 || holders[0] != h {
			victim = h
			break
		}
	}
	start := time.Now()
	out, ok, err := e.waitHacpctl(ctx, runner, func(out string, err error) bool { return err == nil })
	if !ok {
		return fmt.Errorf("hacpctl status on %s never healthy: %v\n%s", runner.Name, err, out)
	}
	for _, h := range e.hosts {
		if !strings.Contains(out, "\n"+h.Name+" ") {
			return fmt.Errorf("hacpctl status on %s does not list %s:\n%s", runner.Name, h.Name, out)
		}
	}
	if !strings.Contains(out, "OK: 3 masters healthy") || !strings.Contains(out, "held by ") {
		return fmt.Errorf("hacpctl status on %s exits 0 but does not say so:\n%s", runner.Name, out)
	}
	e.progress("hacpctl status on %s, exit 0 (%.1f s):\n%s", runner.Name, time.Since(start).Seconds(), out)

	if err := e.crash(victim); err != nil {
		return err
	}
	want := "hacpctl status: DEGRADED: " + victim.Name + ": "
	out, ok, err = e.waitHacpctl(ctx, runner, func(out string, err error) bool { return err != nil && strings.Contains(out, want) })
	if !ok {
		return fmt.Errorf("hacpctl status on %s with %s crashed: want non-zero and %q, got %v:\n%s", runner.Name, victim.Name, want, err, out)
	}
	e.progress("hacpctl status on %s with %s crashed: %v", runner.Name, victim.Name, err)
	e.measured("hacpctl status on %s: exit 0 on the healthy cluster, non-zero naming %s when it crashed", runner.Name, victim.Name)

	if err := e.revive(victim); err != nil {
		return err
	}
	if err := e.waitSettled(ctx, e.hosts, 120*time.Second); err != nil {
		return err
	}
	if out, ok, err := e.waitHacpctl(ctx, runner, func(out string, err error) bool { return err == nil }); !ok {
		return fmt.Errorf("hacpctl status on %s after %s came back: %v\n%s", runner.Name, victim.Name, err, out)
	}
	return nil
}

// waitHacpctl runs hacpctl status on h until done says so (given its output and error) or
// a minute passes, and returns the last output and error, and whether done said so.
func (e *e2e) waitHacpctl(ctx context.Context, h *host, done func(string, error) bool) (out string, ok bool, err error) {
	perr := poll(ctx, time.Minute, func() bool {
		out, err = e.ssh(h, "hacpctl status")
		return done(out, err)
	})
	return out, perr == nil, err
}
