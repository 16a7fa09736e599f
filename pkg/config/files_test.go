package config

import (
	"encoding/pem"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hacp/hacp/internal/testpki"
)

func TestHostChecks(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ca")
	certPEM, keyPEM := ca.Serving(t, "server")
	_, otherKeyPEM := ca.Serving(t, "other")
	cert := testpki.WriteFile(t, dir, "server.crt", certPEM)
	key := testpki.WriteFile(t, dir, "server.key", keyPEM)
	otherKey := testpki.WriteFile(t, dir, "other.key", otherKeyPEM)
	caFile := testpki.WriteFile(t, dir, "ca.crt", ca.PEM)
	notPEM := testpki.WriteFile(t, dir, "not.pem", []byte("not a certificate\n"))
	badDER := testpki.WriteFile(t, dir, "bad.crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("garbage")}))
	missing := filepath.Join(dir, "missing")

	tests := []struct {
		name string
		err  error
		want string // "" for no error
	}{
		{"readable", CheckReadable("f", cert), ""},
		{"empty path is not checked", CheckReadable("f", ""), ""},
		{"missing file", CheckReadable("f", missing), "f: cannot read " + missing + ": no such file or directory"},
		{"directory", CheckReadable("f", dir), "f: cannot read " + dir + ": is a directory"},
		{"CA bundle", CheckCertificates("ca", caFile), ""},
		{"no PEM", CheckCertificates("ca", notPEM), "ca: " + notPEM + " holds no PEM certificate"},
		{"certificate does not parse", CheckCertificates("ca", badDER), "ca: " + badDER + ": certificate 1 does not parse: "},
		{"key pair", CheckKeyPair("cert", cert, "key", key), ""},
		{"key of another certificate", CheckKeyPair("cert", cert, "key", otherKey), "cert: " + cert + " and " + otherKey + " (key): private key does not match public key"},
		{"missing key", CheckKeyPair("cert", cert, "key", missing), "key: cannot read " + missing + ": no such file or directory"},
		{"certificate that is not one", CheckKeyPair("cert", notPEM, "key", key), "cert: " + notPEM + " holds no PEM certificate"},
		{"command found", CheckCommand("notify", "sh -c true"), ""},
		{"command missing", CheckCommand("notify", missing+" arg"), "notify: cannot run " + missing + ": no such file or directory"},
		{"interface exists", CheckInterface("iface", "lo"), ""},
		{"interface missing", CheckInterface("iface", "nosuch0"), `iface: interface "nosuch0" does not exist on this host`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			switch {
			case tt.want == "" && tt.err != nil:
				t.Errorf("error %q, want none", tt.err)
			case tt.want == "":
			case tt.err == nil:
				t.Errorf("no error, want %q", tt.want)
			case !strings.HasPrefix(tt.err.Error(), tt.want):
				t.Errorf("error %q, want %q", tt.err, tt.want)
			}
		})
	}
}
