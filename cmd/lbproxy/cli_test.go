package main

import (
	"encoding/pem"
	"testing"
)

// TestCommandLine checks the whole output of bad command lines: one line, exit 2.
func TestCommandLine(t *testing.T) {
	badCert := writeFile(t, "bad.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("garbage")})))
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown flag", []string{"--no-such-flag"}, 2, "lbproxy: flag --no-such-flag: unknown flag; see --help\n"},
		{"misspelt flag", []string{"--backend", "127.0.0.1:1", "--chek-interval", "1s"}, 2, "lbproxy: flag --chek-interval: unknown flag (did you mean --check-interval?); see --help\n"},
		{"duration without a unit", []string{"--backend", "127.0.0.1:1", "--check-interval", "2"}, 2, "lbproxy: flag --check-interval: invalid value \"2\": a duration needs a unit, e.g. 2s\n"},
		{"duration without a unit in a file", []string{"--config", writeFile(t, "d.yaml", "backend: [127.0.0.1:1]\ncheck-interval: 2\n")}, 2, ""},
		{"CA certificate that does not parse", []string{"--backend", "127.0.0.1:1", "--check-ca", badCert, "--check-config"}, 2, ""},
	}
	// The file's name is only known here.
	tests[3].want = "lbproxy: " + tests[3].args[1] + ":2: check-interval: cannot unmarshal !!int `2` into time.Duration (a duration needs a unit, e.g. 2s)\n"
	tests[4].want = "lbproxy: flag --check-ca: " + badCert + ": certificate 1 does not parse: x509: malformed certificate\n"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := lbproxy(t, tt.args...)
			if code != tt.code || out != tt.want {
				t.Errorf("exit %d, output %q; want exit %d, %q", code, out, tt.code, tt.want)
			}
		})
	}
}
