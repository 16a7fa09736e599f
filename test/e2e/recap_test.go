package main

import "testing"

func TestParseRecap(t *testing.T) {
	out := `TASK [x] ***
changed: [m1]

PLAY RECAP *********************************************************************
m1                         : ok=30   changed=29   unreachable=0    failed=0    skipped=13   rescued=0    ignored=0
m2                         : ok=20   changed=0    unreachable=1    failed=2    skipped=13   rescued=0    ignored=0

Monday 23 November 2026  12:53:10 +0000 (0:00:01.234)       0:11:09.100 *******
`
	got := parseRecap(out)
	want := map[string]recap{
		"m1": {OK: 30, Changed: 29},
		"m2": {OK: 20, Changed: 0, Unreachable: 1, Failed: 2},
	}
	if len(got) != len(want) {
		t.Fatalf("parseRecap: %d hosts %v, want %d", len(got), got, len(want))
	}
	for h, w := range want {
		if got[h] != w {
			t.Errorf("%s: %+v, want %+v", h, got[h], w)
		}
	}
	if len(parseRecap("changed: [m1]\n")) != 0 {
		t.Error("lines before PLAY RECAP must not count")
	}
}
