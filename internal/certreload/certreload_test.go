package certreload

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/testpki"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type pair struct {
	cert, key []byte
	serial    string
}

func issue(t *testing.T, ca *testpki.CA) pair {
	t.Helper()
	c, k := ca.Serving(t, "server")
	block, _ := pem.Decode(c)
	parsed, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return pair{cert: c, key: k, serial: Serial(parsed)}
}

func write(t *testing.T, dir string, certPEM, keyPEM []byte) (string, string) {
	t.Helper()
	return testpki.WriteFile(t, dir, "tls.crt", certPEM), testpki.WriteFile(t, dir, "tls.key", keyPEM)
}

func TestKeyPairReload(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	first, second, third := issue(t, ca), issue(t, ca), issue(t, ca)
	cases := []struct {
		name      string
		cert, key []byte
		wantErr   string
		want      string // serial in use after Reload
		changed   bool
	}{
		{"unchanged files keep the pair", first.cert, first.key, "", first.serial, false},
		{"a renewed pair is swapped in", second.cert, second.key, "", second.serial, true},
		{"a half-written certificate keeps the old pair", second.cert[:len(second.cert)/2], second.key, "failed to find", first.serial, false},
		{"a certificate without its key keeps the old pair", second.cert, first.key, "does not match", first.serial, false},
		{"a key without its certificate keeps the old pair", first.cert, third.key, "does not match", first.serial, false},
		{"an empty key file keeps the old pair", second.cert, nil, "failed to find", first.serial, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			certFile, keyFile := write(t, dir, first.cert, first.key)
			k, err := NewKeyPair("serving", certFile, keyFile, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			write(t, dir, tc.cert, tc.key)
			changed, err := k.Reload()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Reload error %v, want %q", err, tc.wantErr)
			}
			if changed != tc.changed {
				t.Errorf("changed %v, want %v", changed, tc.changed)
			}
			got, _ := k.GetCertificate(nil)
			if s := Serial(got.Leaf); s != tc.want {
				t.Errorf("serving serial %s, want %s", s, tc.want)
			}
			if c, _ := k.GetClientCertificate(nil); c != got {
				t.Error("GetClientCertificate and GetCertificate differ")
			}
		})
	}
}

func TestNewKeyPairRejectsMismatch(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	a, b := issue(t, ca), issue(t, ca)
	certFile, keyFile := write(t, t.TempDir(), a.cert, b.key)
	if _, err := NewKeyPair("serving", certFile, keyFile, nil); err == nil {
		t.Fatal("a mismatched pair loaded")
	}
}

func TestCABundleReload(t *testing.T) {
	oldCA, newCA := testpki.NewCA(t, "old"), testpki.NewCA(t, "new")
	both := append(append([]byte{}, oldCA.PEM...), newCA.PEM...)
	cases := []struct {
		name    string
		data    []byte
		wantErr bool
		want    []*x509.Certificate
	}{
		{"both CAs during a rotation", both, false, []*x509.Certificate{oldCA.Cert, newCA.Cert}},
		{"the new CA alone", newCA.PEM, false, []*x509.Certificate{newCA.Cert}},
		{"a half-written bundle keeps the old one", both[:len(oldCA.PEM)+len(newCA.PEM)/2], true, []*x509.Certificate{oldCA.Cert}},
		{"an empty file keeps the old one", nil, true, []*x509.Certificate{oldCA.Cert}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := testpki.WriteFile(t, dir, "ca.crt", oldCA.PEM)
			b, err := NewCABundle("client-ca", file, nil)
			if err != nil {
				t.Fatal(err)
			}
			testpki.WriteFile(t, dir, "ca.crt", tc.data)
			if _, err := b.Reload(); (err != nil) != tc.wantErr {
				t.Fatalf("Reload error %v, want error %v", err, tc.wantErr)
			}
			got := b.Loaded()
			if len(got) != len(tc.want) {
				t.Fatalf("%d certificates in use, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if !got[i].Equal(tc.want[i]) {
					t.Errorf("certificate %d is %s, want %s", i, got[i].Subject, tc.want[i].Subject)
				}
			}
			for _, c := range tc.want {
				if _, err := c.Verify(x509.VerifyOptions{Roots: b.Pool()}); err != nil {
					t.Errorf("%s does not verify against the pool in use: %v", c.Subject, err)
				}
			}
			if tc.wantErr && !bytes.Equal(b.PEM(), oldCA.PEM) {
				t.Error("PEM in use is not the old bundle")
			}
		})
	}
}

func TestSetMetricsAndLogs(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	first, second := issue(t, ca), issue(t, ca)
	dir := t.TempDir()
	certFile, keyFile := write(t, dir, first.cert, first.key)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	k, err := NewKeyPair("serving", certFile, keyFile, log)
	if err != nil {
		t.Fatal(err)
	}
	set := NewSet(log, k)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(set)

	write(t, dir, second.cert, first.key) // the certificate copied, the key not yet
	for range 3 {
		set.ReloadNow()
	}
	if n := strings.Count(logs.String(), "do not load"); n != 1 {
		t.Errorf("the failure was logged %d times, want once:\n%s", n, logs.String())
	}
	expectMetrics(t, reg, first.serial, 1)
	if n := testutil.CollectAndCount(set, "hacp_cert_reload_failed"); n != 1 {
		t.Errorf("%d reload_failed series, want 1", n)
	}

	write(t, dir, second.cert, second.key)
	if n := set.ReloadNow(); n != 1 {
		t.Fatalf("%d items changed, want 1", n)
	}
	if !strings.Contains(logs.String(), "serial="+second.serial) {
		t.Errorf("no INFO line with the new serial %s:\n%s", second.serial, logs.String())
	}
	expectMetrics(t, reg, second.serial, 0)
}

func expectMetrics(t *testing.T, reg *prometheus.Registry, serial string, failed float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var serials []string
	gotFailed := -1.0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "hacp_cert_loaded_expiry_seconds":
				if m.GetGauge().GetValue() <= 0 {
					t.Errorf("expiry %v, want positive", m.GetGauge().GetValue())
				}
				for _, l := range m.GetLabel() {
					if l.GetName() == "serial" {
						serials = append(serials, l.GetValue())
					}
				}
			case "hacp_cert_reload_failed":
				gotFailed = m.GetGauge().GetValue()
			}
		}
	}
	if len(serials) != 1 || serials[0] != serial {
		t.Errorf("loaded serials %v, want [%s]", serials, serial)
	}
	if gotFailed != failed {
		t.Errorf("hacp_cert_reload_failed %v, want %v", gotFailed, failed)
	}
}

func TestSetRunReloadsOnTrigger(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	first, second := issue(t, ca), issue(t, ca)
	dir := t.TempDir()
	certFile, keyFile := write(t, dir, first.cert, first.key)
	k, err := NewKeyPair("serving", certFile, keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	set := NewSet(slog.New(slog.DiscardHandler), k)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { set.Run(ctx, time.Hour); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	write(t, dir, second.cert, second.key)
	set.Trigger() // what SIGHUP does; the hourly poll never comes in this test
	deadline := time.Now().Add(10 * time.Second)
	for Serial(k.Certificate().Leaf) != second.serial {
		if time.Now().After(deadline) {
			t.Fatalf("serial %s after Trigger, want %s", Serial(k.Certificate().Leaf), second.serial)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
