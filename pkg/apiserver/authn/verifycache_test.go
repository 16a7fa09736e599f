package authn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"
)

// newCert makes a certificate for cn valid until notAfter, signed by parent (self-signed
// when nil), for client auth.
func newCert(t *testing.T, cn string, notAfter time.Time, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// A chain's verdict is what verifying it gives, for its own pool, however often it is asked.
func TestVerifiesRemembered(t *testing.T) {
	ca, caKey := newCert(t, "ca", time.Now().Add(time.Hour), nil, nil)
	other, otherKey := newCert(t, "other", time.Now().Add(time.Hour), nil, nil)
	leaf, _ := newCert(t, "alice", time.Now().Add(time.Hour), ca, caKey)
	stranger, _ := newCert(t, "mallory", time.Now().Add(time.Hour), other, otherKey)
	pool, otherPool := x509.NewCertPool(), x509.NewCertPool()
	pool.AddCert(ca)
	otherPool.AddCert(other)
	for range 3 {
		for _, tc := range []struct {
			name  string
			cert  *x509.Certificate
			roots *x509.CertPool
			want  bool
		}{
			{"own CA", leaf, pool, true},
			{"another CA's pool", leaf, otherPool, false},
			{"another CA's certificate", stranger, pool, false},
			{"its CA's pool", stranger, otherPool, true},
		} {
			if got := verifies([]*x509.Certificate{tc.cert}, tc.roots); got != tc.want {
				t.Errorf("%s: verifies = %v, want %v", tc.name, got, tc.want)
			}
		}
	}
}

// A verdict is asked again after a minute, and when a certificate of the chain expires
// before that, once it has; the cache stays within its bound.
func TestVerifyCacheExpiry(t *testing.T) {
	now := time.Now()
	c := &verifyCache{verdicts: map[verdictKey]verdict{}, now: func() time.Time { return now }}
	ca, caKey := newCert(t, "ca", now.Add(time.Hour), nil, nil)
	long, _ := newCert(t, "long", now.Add(time.Hour), ca, caKey)
	short, _ := newCert(t, "short", now.Add(10*time.Second), ca, caKey)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	checks := map[string]int{}
	check := func(cert *x509.Certificate) func() bool {
		return func() bool { checks[cert.Subject.CommonName]++; return now.Before(cert.NotAfter) }
	}
	ask := func(cert *x509.Certificate) bool { return c.verify([]*x509.Certificate{cert}, pool, check(cert)) }
	for range 3 {
		if !ask(long) || !ask(short) {
			t.Fatal("valid certificates refused")
		}
	}
	if checks["long"] != 1 || checks["short"] != 1 {
		t.Fatalf("checked %v, want once each", checks)
	}
	now = now.Add(11 * time.Second)
	if ask(short) {
		t.Fatal("an expired certificate's verdict was kept past its expiry")
	}
	if !ask(long) || checks["long"] != 1 {
		t.Fatalf("long: checked %d times within the minute", checks["long"])
	}
	now = now.Add(time.Minute)
	if !ask(long) || checks["long"] != 2 {
		t.Fatalf("long: checked %d times, want again after a minute", checks["long"])
	}
	for i := range maxVerdicts + 10 {
		cert, _ := newCert(t, "x", now.Add(time.Hour), ca, caKey)
		c.verify([]*x509.Certificate{cert}, pool, func() bool { return i >= 0 })
	}
	if n := len(c.verdicts); n > maxVerdicts {
		t.Fatalf("%d verdicts kept, bound %d", n, maxVerdicts)
	}
}
