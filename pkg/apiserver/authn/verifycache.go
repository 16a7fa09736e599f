package authn

import (
	"crypto/x509"
	"sync"
	"time"
)

// Verifying a client certificate's chain (an ECDSA or RSA signature check per link) was a
// third of the apiserver's CPU for a 100-item list from the watch cache. Every request of
// one connection carries the very same certificates (net/http keeps one TLS state per
// connection), so the verdict for a chain and a pool is remembered for a minute at most,
// and never past the time any certificate of the chain expires.

// verifyTTL is how long a verdict is kept.
const verifyTTL = time.Minute

// maxVerdicts bounds the verdicts kept (each keeps its certificates alive); when full,
// all are forgotten.
const maxVerdicts = 1024

// verdictKey names a chain (by its leaf's identity and the number of certificates, which
// are one connection's) and the pool it was verified against.
type verdictKey struct {
	leaf  *x509.Certificate
	n     int
	roots *x509.CertPool
}

type verdict struct {
	ok    bool
	until time.Time
}

type verifyCache struct {
	mu       sync.Mutex
	verdicts map[verdictKey]verdict
	now      func() time.Time
}

var verifications = &verifyCache{verdicts: map[verdictKey]verdict{}, now: time.Now}

// verify reports whether certs[0] chains to roots for client auth, from a recent verdict
// for the same certificates and pool when there is one.
func (c *verifyCache) verify(certs []*x509.Certificate, roots *x509.CertPool, check func() bool) bool {
	key := verdictKey{leaf: certs[0], n: len(certs), roots: roots}
	now := c.now()
	c.mu.Lock()
	v, ok := c.verdicts[key]
	c.mu.Unlock()
	if ok && now.Before(v.until) {
		return v.ok
	}
	v = verdict{ok: check(), until: now.Add(verifyTTL)}
	for _, cert := range certs {
		if cert.NotAfter.Before(v.until) {
			v.until = cert.NotAfter
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.verdicts) >= maxVerdicts {
		clear(c.verdicts)
	}
	c.verdicts[key] = v
	return v.ok
}
