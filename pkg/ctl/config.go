// Package ctl is hacpctl's logic: `status` gathers what every master's vipd, lbproxy,
// apiserver and etcd member report into one view and judges it healthy or degraded;
// `certs` lists, checks and renews the local master's certificate files.
package ctl

import (
	"errors"
	"flag"
	"net/url"
	"strconv"
	"time"

	"github.com/hacp/hacp/pkg/config"
)

// DefaultConfigFile is where hacpctl looks for its configuration without --config; the
// Ansible roles write it on every master.
const DefaultConfigFile = "/etc/hacp/hacpctl.yaml"

// Config is hacpctl.yaml: the masters and the credentials to read their status with.
type Config struct {
	// Masters are the masters to look at, each with its programs' status endpoints.
	Masters []Master `yaml:"masters"`

	// CAFile verifies the apiservers' and the TLS status listeners' certificates;
	// CertFile and KeyFile are the client certificate hacpctl shows them.
	CAFile   string `yaml:"ca-file"`
	CertFile string `yaml:"cert-file"`
	KeyFile  string `yaml:"key-file"`
	// The etcd members' client URLs: their CA and the client certificate the apiserver uses.
	EtcdCAFile   string `yaml:"etcd-ca-file"`
	EtcdCertFile string `yaml:"etcd-cert-file"`
	EtcdKeyFile  string `yaml:"etcd-key-file"`

	Timeout    time.Duration `yaml:"timeout"`
	CertWarn   time.Duration `yaml:"cert-warn"`
	EtcdMaxLag uint64        `yaml:"etcd-max-lag"`
	Output     string        `yaml:"output"`
}

// Master is one master's endpoints. Empty ones are not looked at.
type Master struct {
	Name string `yaml:"name"`
	// Apiserver is the base URL of its apiserver (https://10.0.0.1:6443): /readyz,
	// /version, and /metrics for certificate expiry and, without Etcd, the embedded
	// member's etcd_* metrics.
	Apiserver string `yaml:"apiserver"`
	// Vipd and Lbproxy are their status addresses as URLs: http:// for the plain one on
	// loopback (this master only), https:// for --status-tls-addr (client certificate).
	Vipd    string `yaml:"vipd"`
	Lbproxy string `yaml:"lbproxy"`
	// Etcd is its etcd member's client URL, when hacpctl can reach it (the local one:
	// https://127.0.0.1:2379).
	Etcd string `yaml:"etcd"`
}

// DefaultConfig returns the defaults: a 30-day certificate warning, 3 s per request.
func DefaultConfig() *Config {
	return &Config{Timeout: 3 * time.Second, CertWarn: 30 * 24 * time.Hour, EtcdMaxLag: 1000, Output: "text"}
}

// AddFlags binds the status command's flags.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Output, "o", c.Output, "output `format`: text or json (same as --output)")
	fs.StringVar(&c.Output, "output", c.Output, "output `format`: text or json")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "time each request to a master's program may take")
	fs.DurationVar(&c.CertWarn, "cert-warn", c.CertWarn, "a certificate expiring within this `duration` makes the status degraded")
	fs.Uint64Var(&c.EtcdMaxLag, "etcd-max-lag", c.EtcdMaxLag, "an etcd member more than this many Raft entries behind the leader makes the status degraded")
}

// Validate checks the values; the errors are config.FieldErrors tied to their line.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) { errs = append(errs, config.FieldErrorf(key, format, args...)) }
	if c.Output != "text" && c.Output != "json" {
		bad("output", "want text or json, got %q", c.Output)
	}
	if c.Timeout <= 0 {
		bad("timeout", "must be positive, got %s", c.Timeout)
	}
	if c.CertWarn < 0 {
		bad("cert-warn", "must not be negative, got %s", c.CertWarn)
	}
	if len(c.Masters) == 0 {
		bad("masters", "list at least one master (name and endpoints)")
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		bad("cert-file", "cert-file and key-file go together")
	}
	if (c.EtcdCertFile == "") != (c.EtcdKeyFile == "") {
		bad("etcd-cert-file", "etcd-cert-file and etcd-key-file go together")
	}
	names := map[string]bool{}
	for i, m := range c.Masters {
		key := "masters." + strconv.Itoa(i)
		if m.Name == "" {
			bad(key+".name", "every master needs a name")
		} else if names[m.Name] {
			bad(key+".name", "master %q is listed twice", m.Name)
		}
		names[m.Name] = true
		for _, e := range [][2]string{{"apiserver", m.Apiserver}, {"vipd", m.Vipd}, {"lbproxy", m.Lbproxy}, {"etcd", m.Etcd}} {
			k, v := e[0], e[1]
			if v == "" {
				continue
			}
			if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad(key+"."+k, "want an http:// or https:// URL, got %q", v)
			}
		}
		if m.Apiserver == "" && m.Vipd == "" && m.Lbproxy == "" && m.Etcd == "" {
			bad(key, "master %q has no endpoint (apiserver, vipd, lbproxy or etcd)", m.Name)
		}
	}
	return errors.Join(errs...)
}
