package main

import "testing"

func TestNormalSerial(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"openssl, zero-padded upper case", "0A1B2C", "a1b2c"},
		{"lbproxy's metrics", "a1b2c", "a1b2c"},
		{"with a newline", "A1B2C\n", "a1b2c"},
		{"not hex", "serial=", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := normalSerial(tc.in); got != tc.want {
				t.Errorf("normalSerial(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
