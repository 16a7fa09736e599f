// Package certmetrics exports hacp_cert_expiry_seconds, the time left until each certificate a
// program uses expires, for the alert that warns 30 days ahead. Files are read at scrape time,
// so a renewed certificate shows as soon as it is on disk.
package certmetrics

import (
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/hacp/hacp/internal/certreload"
	"github.com/prometheus/client_golang/prometheus"
)

var (
	expiryDesc = prometheus.NewDesc("hacp_cert_expiry_seconds",
		"Seconds until the certificate's notAfter (negative once expired), by role, file and subject.",
		[]string{"cert", "file", "subject"}, nil)
	errorDesc = prometheus.NewDesc("hacp_cert_file_error",
		"1 when a configured certificate file cannot be read or holds no parsable PEM certificate.",
		[]string{"cert", "file"}, nil)
)

// File is a PEM file of one or more certificates and the role it plays (the cert label, e.g.
// "serving", "etcd-client", "check-ca").
type File struct {
	Role string
	Path string
}

// Collector reports the certificates of a set of files. Files with an empty path are ignored,
// so callers can pass optional configuration fields as they are.
type Collector struct {
	files func() []File
	now   func() time.Time
}

// New returns a collector of files; register it on the program's metrics registry.
func New(files ...File) *Collector {
	return NewFunc(func() []File { return files })
}

// NewFunc returns a collector of the files files returns at each scrape, for a program whose
// configuration is reloaded.
func NewFunc(files func() []File) *Collector {
	return &Collector{files: files, now: time.Now}
}

// list is the files of this scrape, without empty paths and duplicates.
func (c *Collector) list() []File {
	var out []File
	seen := map[File]bool{}
	for _, f := range c.files() {
		if f.Path == "" || seen[f] {
			continue
		}
		seen[f] = true
		out = append(out, f)
	}
	return out
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- expiryDesc
	ch <- errorDesc
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	for _, f := range c.list() {
		certs, err := Read(f.Path)
		failed := 0.0
		if err != nil {
			failed = 1
		}
		ch <- prometheus.MustNewConstMetric(errorDesc, prometheus.GaugeValue, failed, f.Role, f.Path)
		for _, subject := range sortedKeys(certs) {
			left := certs[subject].Sub(now).Seconds()
			ch <- prometheus.MustNewConstMetric(expiryDesc, prometheus.GaugeValue, left, f.Role, f.Path, subject)
		}
	}
}

// Read returns the notAfter of every certificate in a PEM file by subject. A bundle may hold
// two certificates of one subject (a CA and its renewal during rotation); the one valid
// longest counts, since the other is not what breaks the day it expires.
func Read(path string) (map[string]time.Time, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("certmetrics: %w", err)
	}
	certs, err := certreload.ParsePEM(data)
	if err != nil {
		return nil, fmt.Errorf("certmetrics: %s: %w", path, err)
	}
	out := map[string]time.Time{}
	for _, cert := range certs {
		subject := cert.Subject.String()
		if t, ok := out[subject]; !ok || cert.NotAfter.After(t) {
			out[subject] = cert.NotAfter
		}
	}
	return out, nil
}

func sortedKeys(m map[string]time.Time) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
