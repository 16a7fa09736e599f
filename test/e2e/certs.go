package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// servedCert is one certificate a program serves or presents, and how to see it.
type servedCert struct {
	what string // "apiserver", "etcd client URL", ...
	file string // the renewed certificate in the control machine's pki dir
	seen func(h *host) (string, error)
}

// rotateCerts runs rotate-certs.yml under the writer and checks that it lost no write, that
// every program serves or presents the renewed certificate afterwards (serial numbers seen
// over TLS handshakes, or in lbproxy's metrics for its health-check client), and that none
// restarted (the units' main PIDs).
func (e *e2e) rotateCerts(ctx context.Context) error {
	certs := e.servedCerts()
	before, err := e.seenSerials(certs)
	if err != nil {
		return fmt.Errorf("before the rotation: %w", err)
	}
	pids, err := e.mainPIDs()
	if err != nil {
		return err
	}
	err = e.underWriter(ctx, "rotate-certs.yml", func() error {
		_, took, err := e.playbook("rotate-certs.yml")
		if err == nil {
			e.measured("rotate-certs.yml on %d masters: %s", len(e.hosts), took.Round(100*time.Millisecond))
		}
		return err
	})
	if err != nil {
		return err
	}
	after, err := e.seenSerials(certs)
	if err != nil {
		return fmt.Errorf("after the rotation: %w", err)
	}
	for _, h := range e.hosts {
		for _, c := range certs {
			key := h.Name + " " + c.what
			want, err := fileSerial(filepath.Join(e.out, "pki", fmt.Sprintf(c.file, h.Name)))
			if err != nil {
				return err
			}
			if after[key] != want || after[key] == before[key] {
				return fmt.Errorf("%s: serial %s after rotate-certs.yml (%s before), want the renewed %s", key, after[key], before[key], want)
			}
		}
	}
	pidsAfter, err := e.mainPIDs()
	if err != nil {
		return err
	}
	for k, v := range pids {
		if pidsAfter[k] != v {
			return fmt.Errorf("%s restarted during rotate-certs.yml: main PID %s before, %s after", k, v, pidsAfter[k])
		}
	}
	h := e.hosts[0]
	e.measured("rotate-certs.yml: on %s the apiserver serves serial %s (was %s), etcd's peer URL %s (was %s); %d programs on %d masters, none restarted",
		h.Name, after[h.Name+" apiserver"], before[h.Name+" apiserver"], after[h.Name+" etcd peer URL"], before[h.Name+" etcd peer URL"],
		len(certs), len(e.hosts))
	return nil
}

// servedCerts are the certificates rotate-certs.yml renews that a program shows: file names
// take the host name.
func (e *e2e) servedCerts() []servedCert {
	// sClient handshakes on the master itself (etcd's URLs want a client certificate, and
	// the client URL is on its loopback) with the pair /etc/hacp/pki/<pair>.crt and .key.
	sClient := func(loopback bool, port int, pair string) func(h *host) (string, error) {
		return func(h *host) (string, error) {
			addr := h.Addr
			if loopback {
				addr = "127.0.0.1"
			}
			out, err := e.ssh(h, fmt.Sprintf("openssl s_client -connect %s:%d -cert /etc/hacp/pki/%s.crt -key /etc/hacp/pki/%s.key"+
				" </dev/null 2>/dev/null | openssl x509 -noout -serial", addr, port, pair, pair))
			if err != nil {
				return "", err
			}
			return normalSerial(strings.TrimPrefix(strings.TrimSpace(out), "serial=")), nil
		}
	}
	return []servedCert{
		{what: "apiserver", file: "apiserver-%s.crt", seen: e.apiserverSerial},
		{what: "etcd client URL", file: "etcd-server-%s.crt", seen: sClient(true, 2379, "apiserver-etcd-client")},
		{what: "etcd peer URL", file: "etcd-peer-%s.crt", seen: sClient(false, 2380, "etcd-peer")},
		{what: "lbproxy health-check client", file: "lbproxy-check-%s.crt", seen: e.lbproxyCheckSerial},
	}
}

// apiserverSerial is the serial of the certificate h's apiserver serves on a new handshake
// from the control namespace.
func (e *e2e) apiserverSerial(h *host) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := dialCtl(ctx, "tcp", net.JoinHostPort(h.Addr, "6443"))
	if err != nil {
		return "", err
	}
	defer raw.Close()
	conn := tls.Client(raw, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only the serial is read
	if err := conn.HandshakeContext(ctx); err != nil {
		return "", fmt.Errorf("%s: handshake with the apiserver: %w", h.Name, err)
	}
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Text(16), nil
}

// lbproxyCheckSerial is the serial of the client certificate h's lbproxy health checks
// present, from its metrics.
func (e *e2e) lbproxyCheckSerial(h *host) (string, error) {
	const series = `hacp_cert_loaded_expiry_seconds{cert="check-client",serial="`
	out, err := e.ssh(h, "curl -sSf --max-time 5 http://127.0.0.1:9443/metrics | grep -F '"+series+"'")
	if err != nil {
		return "", err
	}
	line := strings.TrimSpace(out)
	if strings.Count(line, "\n") > 0 {
		return "", fmt.Errorf("%s: lbproxy shows more than one check-client certificate: %s", h.Name, line)
	}
	serial, _, _ := strings.Cut(strings.TrimPrefix(line, series), `"`)
	return normalSerial(serial), nil
}

// seenSerials asks every host for every certificate's serial, by "host what".
func (e *e2e) seenSerials(certs []servedCert) (map[string]string, error) {
	out := map[string]string{}
	for _, h := range e.hosts {
		for _, c := range certs {
			s, err := c.seen(h)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", h.Name, c.what, err)
			}
			if s == "" {
				return nil, fmt.Errorf("%s %s: no serial seen", h.Name, c.what)
			}
			out[h.Name+" "+c.what] = s
		}
	}
	return out, nil
}

// mainPIDs returns every hacp unit's main PID on every host, by "host unit".
func (e *e2e) mainPIDs() (map[string]string, error) {
	out := map[string]string{}
	for _, h := range e.hosts {
		for _, u := range units {
			pid, err := e.ssh(h, "systemctl show -p MainPID --value "+u)
			if err != nil {
				return nil, err
			}
			if pid = strings.TrimSpace(pid); pid == "0" || pid == "" {
				return nil, fmt.Errorf("%s: %s is not running", h.Name, u)
			}
			out[h.Name+" "+u] = pid
		}
	}
	return out, nil
}

// fileSerial is the serial of the PEM certificate in path, as normalSerial.
func fileSerial(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return "", fmt.Errorf("%s: no PEM certificate", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return c.SerialNumber.Text(16), nil
}

// normalSerial is a hex serial as big.Int prints it (lower case, no leading zeros), whether
// openssl's (upper case, zero-padded) or lbproxy's.
func normalSerial(hex string) string {
	n, ok := new(big.Int).SetString(strings.TrimSpace(hex), 16)
	if !ok {
		return ""
	}
	return n.Text(16)
}
