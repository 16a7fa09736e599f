package ctl

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/certs"
)

func loadCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	cs, err := readCerts(path)
	if err != nil || len(cs) != 1 {
		t.Fatalf("%s: %v (%d certificates)", path, err, len(cs))
	}
	return cs[0].cert
}

func TestCertsCheck(t *testing.T) {
	dir := t.TempDir()
	if _, err := certs.Ensure(dir, certs.Options{Hosts: []string{"10.77.0.1", "m1"}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	found, err := ScanCerts([]string{dir, filepath.Join(dir, "missing")})
	if err != nil {
		t.Fatal(err)
	}
	var serving *CertFile
	for i, c := range found {
		if filepath.Base(c.Path) == certs.ServingCertFile {
			serving = &found[i]
		}
	}
	if serving == nil || !slices.Contains(serving.SANs, "IP:10.77.0.1") || !slices.Contains(serving.SANs, "DNS:m1") || serving.IsCA {
		t.Fatalf("serving certificate not listed as expected: %+v", found)
	}
	now := time.Now()
	if exp := Expiring(found, now, 30*24*time.Hour); len(exp) != 0 {
		t.Fatalf("nothing expires within 30 days of a fresh bundle, got %v", exp)
	}
	if exp := Expiring(found, now, 400*24*time.Hour); len(exp) == 0 {
		t.Fatal("the one-year leaves expire within 400 days")
	}
	var out bytes.Buffer
	if err := WriteCerts(&out, found, now); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), filepath.Join(dir, certs.ServingCertFile)) || !strings.Contains(out.String(), "IP:10.77.0.1") {
		t.Fatalf("listing:\n%s", out.String())
	}
}

func TestCertsRenew(t *testing.T) {
	dir := t.TempDir()
	if _, err := certs.Ensure(dir, certs.Options{Hosts: []string{"10.77.0.1", "m1"}}); err != nil {
		t.Fatal(err)
	}
	// A leaf whose CA key is elsewhere (the Ansible layout: the CA key stays on the
	// control machine) is left alone and reported.
	other := t.TempDir()
	for _, f := range []string{certs.CACertFile, certs.ServingCertFile} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(other, f), data, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	servingPath := filepath.Join(dir, certs.ServingCertFile)
	if err := os.Chmod(servingPath, 0o640); err != nil {
		t.Fatal(err)
	}
	old := loadCert(t, servingPath)

	rs, err := Renew([]string{other}, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Skipped == "" || !strings.Contains(rs[0].Skipped, "not on this host") {
		t.Fatalf("want the leaf without its CA key skipped, got %+v", rs)
	}

	now := time.Now().Add(200 * 24 * time.Hour) // renewing half-way through the year
	rs, err = Renew([]string{dir}, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	var renewed []string
	for _, r := range rs {
		if r.Skipped != "" {
			t.Errorf("%s skipped: %s", r.Path, r.Skipped)
		}
		renewed = append(renewed, filepath.Base(r.Path))
	}
	if !slices.Contains(renewed, certs.ServingCertFile) || !slices.Contains(renewed, certs.AdminCertFile) {
		t.Fatalf("renewed %v, want the serving and admin certificates", renewed)
	}

	fresh := loadCert(t, servingPath)
	ca := loadCert(t, filepath.Join(dir, certs.CACertFile))
	switch {
	case fresh.SerialNumber.Cmp(old.SerialNumber) == 0:
		t.Error("same serial number after renewal")
	case fresh.CheckSignatureFrom(ca) != nil:
		t.Error("the renewed certificate is not signed by the CA")
	case !slices.Equal(fresh.DNSNames, old.DNSNames) || len(fresh.IPAddresses) != len(old.IPAddresses) || !fresh.IPAddresses[0].Equal(old.IPAddresses[0]):
		t.Errorf("SANs changed: %v %v, were %v %v", fresh.DNSNames, fresh.IPAddresses, old.DNSNames, old.IPAddresses)
	case !slices.Equal(fresh.ExtKeyUsage, old.ExtKeyUsage) || fresh.KeyUsage != old.KeyUsage || fresh.Subject.String() != old.Subject.String():
		t.Errorf("usages or subject changed: %v %v %s", fresh.ExtKeyUsage, fresh.KeyUsage, fresh.Subject)
	case !fresh.NotAfter.After(old.NotAfter):
		t.Errorf("notAfter %s, want after the old %s", fresh.NotAfter, old.NotAfter)
	}
	if _, err := tls.LoadX509KeyPair(servingPath, filepath.Join(dir, certs.ServingKeyFile)); err != nil {
		t.Errorf("the renewed certificate does not match its (unchanged) key: %v", err)
	}
	if st, err := os.Stat(servingPath); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode after renewal: %v %v, want 0640", st.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
