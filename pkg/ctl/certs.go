package ctl

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// DefaultCertDirs are where `hacpctl certs` looks without --dir: the Ansible layout's
// configuration and PKI, and the apiserver's generated certificates under its data dir.
var DefaultCertDirs = []string{"/etc/hacp", "/var/lib/hacp/pki"}

// CertFile is one certificate found on disk (a file may hold several: a CA bundle).
type CertFile struct {
	Path     string    `json:"path"`
	Index    int       `json:"index,omitempty"` // position in a bundle, from 0
	Subject  string    `json:"subject"`
	Issuer   string    `json:"issuer"`
	SANs     []string  `json:"sans,omitempty"`
	IsCA     bool      `json:"isCA"`
	NotAfter time.Time `json:"notAfter"`

	cert  *x509.Certificate
	count int // certificates in the file
}

// maxCertFile bounds what is read of a file to look for certificates in it.
const maxCertFile = 1 << 20

// ScanCerts lists every PEM certificate in the files under dirs (recursively), in path
// order. A directory that does not exist is skipped; a file that cannot be read is an error.
func ScanCerts(dirs []string) ([]CertFile, error) {
	var out []CertFile
	var errs []error
	seen := map[string]bool{}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil && path == dir && errors.Is(err, fs.ErrNotExist):
				return fs.SkipDir
			case err != nil:
				errs = append(errs, err)
				return nil
			case !d.Type().IsRegular() || seen[path]:
				return nil
			}
			seen[path] = true
			certs, err := readCerts(path)
			if err != nil {
				errs = append(errs, err)
			}
			out = append(out, certs...)
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, errors.Join(errs...)
}

// readCerts returns the certificates of the PEM file at path; none for a file without any.
func readCerts(path string) ([]CertFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCertFile))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !bytes.Contains(data, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, nil
	}
	var out []CertFile
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return out, fmt.Errorf("%s: certificate %d: %w", path, len(out)+1, err)
		}
		out = append(out, CertFile{Path: path, Index: len(out), Subject: c.Subject.String(), Issuer: c.Issuer.String(),
			SANs: sans(c), IsCA: c.IsCA, NotAfter: c.NotAfter, cert: c})
	}
	for i := range out {
		out[i].count = len(out)
	}
	return out, nil
}

// sans lists a certificate's subject alternative names as "DNS:x", "IP:y", "URI:z".
func sans(c *x509.Certificate) []string {
	var out []string
	for _, d := range c.DNSNames {
		out = append(out, "DNS:"+d)
	}
	for _, ip := range c.IPAddresses {
		out = append(out, "IP:"+ip.String())
	}
	for _, u := range c.URIs {
		out = append(out, "URI:"+u.String())
	}
	for _, e := range c.EmailAddresses {
		out = append(out, "email:"+e)
	}
	return out
}

// Expiring returns the certificates that expire within warn of now.
func Expiring(certs []CertFile, now time.Time, warn time.Duration) []CertFile {
	var out []CertFile
	for _, c := range certs {
		if c.NotAfter.Sub(now) < warn {
			out = append(out, c)
		}
	}
	return out
}

// WriteCerts lists the certificates as a table.
func WriteCerts(w io.Writer, certs []CertFile, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tSUBJECT\tISSUER\tSANS\tNOT AFTER\tDAYS LEFT")
	for _, c := range certs {
		path := c.Path
		if c.count > 1 {
			path = fmt.Sprintf("%s[%d]", path, c.Index)
		}
		s := strings.Join(c.SANs, ",")
		if s == "" {
			s = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", path, c.Subject, c.Issuer, s, c.NotAfter.UTC().Format(time.RFC3339),
			int(math.Floor(c.NotAfter.Sub(now).Hours()/24)))
	}
	return tw.Flush()
}
