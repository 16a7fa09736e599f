package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKeepLogs: every log of the run's directory lands in out/logs, a long one cut to its
// end, next to clock.txt; logs of an earlier run in out/logs are gone.
func TestKeepLogs(t *testing.T) {
	run, out := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(run, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", keptLogBytes) + "the end\n"
	files := map[string]string{"m2-vipd-1.log": "BFD session changed\n", "router-bfdd-2.log": long}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(run, "logs", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(out, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "logs", "old.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	epoch := time.Date(2026, 11, 29, 9, 33, 58, 426908481, time.UTC)
	if err := keepLogs(run, out, epoch); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(out, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "clock.txt m2-vipd-1.log router-bfdd-2.log" {
		t.Errorf("out/logs holds %v", names)
	}
	got, _ := os.ReadFile(filepath.Join(out, "logs", "router-bfdd-2.log"))
	if len(got) != keptLogBytes || !strings.HasSuffix(string(got), "the end\n") {
		t.Errorf("long log kept as %d bytes ending %q", len(got), got[max(0, len(got)-10):])
	}
	got, _ = os.ReadFile(filepath.Join(out, "logs", "m2-vipd-1.log"))
	if string(got) != files["m2-vipd-1.log"] {
		t.Errorf("short log kept as %q", got)
	}
	clock, _ := os.ReadFile(filepath.Join(out, "logs", "clock.txt"))
	if !strings.Contains(string(clock), "2026-11-29T09:33:58.426908481Z") {
		t.Errorf("clock.txt = %q", clock)
	}
}

func TestParseBGPStall(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bgpStall
		ok   bool
	}{
		{"", bgpStall{}, true},
		{"vipd:400ms", bgpStall{"vipd", 400 * time.Millisecond}, true},
		{"bfdd:500ms", bgpStall{"bfdd", 500 * time.Millisecond}, true},
		{"bgpd:1s", bgpStall{}, false},
		{"vipd", bgpStall{}, false},
		{"vipd:0s", bgpStall{}, false},
		{"vipd:11s", bgpStall{}, false},
		{"vipd:soon", bgpStall{}, false},
	} {
		got, err := parseBGPStall(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseBGPStall(%q) = %+v, %v", tc.in, got, err)
		}
	}
}
