package ctl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// collector reads the masters' programs with the configured credentials.
type collector struct {
	cfg     *Config
	http    *http.Client
	etcdTLS *tls.Config // nil without etcd credentials

	mu     sync.Mutex
	alarms map[uint64][]string // etcd alarms by member ID, as any member listed them
	names  map[uint64]string   // etcd member names by ID
}

func newCollector(cfg *Config) (*collector, error) {
	tc, err := clientTLS(cfg.CAFile, cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, err
	}
	c := &collector{cfg: cfg, alarms: map[uint64][]string{}, names: map[uint64]string{},
		http: &http.Client{Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}}}
	if cfg.EtcdCertFile != "" {
		if c.etcdTLS, err = clientTLS(cfg.EtcdCAFile, cfg.EtcdCertFile, cfg.EtcdKeyFile); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// clientTLS is a client configuration trusting caFile (the system's CAs when empty) and
// showing the certificate in certFile, when given.
func clientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		data, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("read CA: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
		}
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("load client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// get fetches base+path; a status other than 200 is an error unless accept says so.
func (c *collector) get(ctx context.Context, base, path string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json, text/plain;version=0.0.4;q=0.9")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, shortError(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return 0, nil, shortError(err)
	}
	return resp.StatusCode, body, nil
}

// shortError drops the request's method and URL from a client error: the report names the
// master and the component already.
func shortError(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "\": "); i >= 0 && strings.HasPrefix(msg, "Get \"") {
		msg = msg[i+3:]
	}
	return fmt.Errorf("%s", msg)
}

func (c *collector) getJSON(ctx context.Context, base, path string, out any) error {
	code, body, err := c.get(ctx, base, path)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("%s: %d %s", path, code, firstLine(body))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// metrics fetches and parses base's /metrics.
func (c *collector) metrics(ctx context.Context, base string) (map[string]*dto.MetricFamily, error) {
	code, body, err := c.get(ctx, base, "/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %d %s", code, firstLine(body))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return nil, fmt.Errorf("/metrics: %w", err)
	}
	return fams, nil
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// value returns the value of a gauge, counter or untyped sample.
func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// single returns the value of the first sample of the family name, and whether there is one.
func single(fams map[string]*dto.MetricFamily, name string) (float64, bool) {
	f := fams[name]
	if f == nil || len(f.Metric) == 0 {
		return 0, false
	}
	return value(f.Metric[0]), true
}

// certExpiries reads hacp_cert_expiry_seconds and hacp_cert_file_error of one program.
func certExpiries(program string, fams map[string]*dto.MetricFamily) []CertExpiry {
	var out []CertExpiry
	if f := fams["hacp_cert_expiry_seconds"]; f != nil {
		for _, m := range f.Metric {
			out = append(out, CertExpiry{Program: program, Role: label(m, "cert"), File: label(m, "file"), Subject: label(m, "subject"),
				Left: time.Duration(value(m) * float64(time.Second))})
		}
	}
	if f := fams["hacp_cert_file_error"]; f != nil {
		for _, m := range f.Metric {
			if value(m) != 0 {
				out = append(out, CertExpiry{Program: program, Role: label(m, "cert"), File: label(m, "file"), Error: true})
			}
		}
	}
	return out
}

// conflicts lists the vipd_vip_conflict series that are not 0, as "label=value ..." text.
func conflicts(fams map[string]*dto.MetricFamily) []string {
	f := fams["vipd_vip_conflict"]
	if f == nil {
		return nil
	}
	var out []string
	for _, m := range f.Metric {
		if value(m) == 0 {
			continue
		}
		var ls []string
		for _, l := range m.Label {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(ls)
		out = append(out, strings.Join(ls, " "))
	}
	return out
}
