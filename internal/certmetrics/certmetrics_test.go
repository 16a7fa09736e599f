package certmetrics

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// certPEM makes a self-signed certificate of cn valid until notAfter.
func certPEM(t *testing.T, cn string, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: notAfter, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func write(t *testing.T, dir, name string, data ...[]byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	var all []byte
	for _, d := range data {
		all = append(all, d...)
	}
	if err := os.WriteFile(path, all, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCollector(t *testing.T) {
	dir := t.TempDir()
	serving := write(t, dir, "serving.crt", certPEM(t, "apiserver", now.Add(90*time.Second)))
	// A CA bundle during rotation: the old CA (expired) and its renewal share the subject;
	// another CA sits beside them.
	bundle := write(t, dir, "ca.crt", certPEM(t, "hacp-ca", now.Add(-10*time.Second)), certPEM(t, "hacp-ca", now.Add(3600*time.Second)),
		certPEM(t, "other-ca", now.Add(60*time.Second)))
	garbage := write(t, dir, "garbage.crt", []byte("not a certificate\n"))
	c := New(File{"serving", serving}, File{"client-ca", bundle}, File{"check-ca", ""}, File{"serving", serving},
		File{"bad", garbage}, File{"gone", filepath.Join(dir, "missing.crt")})
	c.now = func() time.Time { return now }

	want := `
# HELP hacp_cert_expiry_seconds Seconds until the certificate's notAfter (negative once expired), by role, file and subject.
# TYPE hacp_cert_expiry_seconds gauge
hacp_cert_expiry_seconds{cert="client-ca",file="DIR/ca.crt",subject="CN=hacp-ca"} 3600
hacp_cert_expiry_seconds{cert="client-ca",file="DIR/ca.crt",subject="CN=other-ca"} 60
hacp_cert_expiry_seconds{cert="serving",file="DIR/serving.crt",subject="CN=apiserver"} 90
# HELP hacp_cert_file_error 1 when a configured certificate file cannot be read or holds no parsable PEM certificate.
# TYPE hacp_cert_file_error gauge
hacp_cert_file_error{cert="bad",file="DIR/garbage.crt"} 1
hacp_cert_file_error{cert="client-ca",file="DIR/ca.crt"} 0
hacp_cert_file_error{cert="gone",file="DIR/missing.crt"} 1
hacp_cert_file_error{cert="serving",file="DIR/serving.crt"} 0
`
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(strings.ReplaceAll(want, "DIR", dir))); err != nil {
		t.Fatal(err)
	}

	// A renewed file is what the next scrape reports, without a new collector.
	write(t, dir, "serving.crt", certPEM(t, "apiserver", now.Add(365*24*time.Hour)))
	got, err := Read(serving)
	if err != nil {
		t.Fatal(err)
	}
	if d := got["CN=apiserver"].Sub(now); d != 365*24*time.Hour {
		t.Fatalf("renewed certificate: %v left, want 8760h", d)
	}
	if n, err := testutil.GatherAndCount(reg, "hacp_cert_expiry_seconds"); err != nil || n != 3 {
		t.Fatalf("after renewal: %d series, %v; want 3", n, err)
	}
	if v := testutil.ToFloat64(onlySeries(t, c, "serving")); v != 365*24*3600 {
		t.Fatalf("after renewal: serving expires in %v s, want %v", v, 365*24*3600)
	}
}

// onlySeries wraps the collector's expiry series of role as a collector of one metric.
func onlySeries(t *testing.T, c *Collector, role string) prometheus.Collector {
	t.Helper()
	var files []File
	for _, f := range c.list() {
		if f.Role == role {
			files = append(files, f)
		}
	}
	one := New(files...)
	one.now = c.now
	return expiryOnly{one}
}

type expiryOnly struct{ *Collector }

func (e expiryOnly) Collect(ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric)
	go func() { e.Collector.Collect(all); close(all) }()
	for m := range all {
		if m.Desc() == expiryDesc {
			ch <- m
		}
	}
}
