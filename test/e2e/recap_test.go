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

func TestEncPrefix(t *testing.T) {
	for _, tc := range []struct{ name, raw, want string }{
		{"aescbc", "k8s:enc:aescbc:v1:key-20261128140000:\x01\x02:\x03", "k8s:enc:aescbc:v1:key-20261128140000:"},
		{"kms v2", "k8s:enc:kms:v2:vault:\x00\x01", "k8s:enc:kms:v2:vault:"},
		{"identity protobuf", "k8s\x00\n\x0c\n\x02v1\x12\x06Secret", "k8s\x00\n\x0c\n\x02v1\x12\x06Secr"},
		{"short", "{}", "{}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := encPrefix(tc.raw); got != tc.want {
				t.Errorf("encPrefix(%q) = %q, want %q", tc.raw, got, tc.want)
			}
		})
	}
}
