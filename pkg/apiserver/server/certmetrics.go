package server

import (
	"path/filepath"
	"strings"

	"github.com/hacp/hacp/internal/certmetrics"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// registerCertMetrics adds hacp_cert_expiry_seconds for every certificate the server uses: the
// configured files and the ones it generated under cert-dir (etcd's included), and, with
// embedded etcd, the member's own etcd_* metrics.
func (s *Server) registerCertMetrics() error {
	files := []certmetrics.File{
		{Role: "serving", Path: s.cfg.TLSCertFile},
		{Role: "client-ca", Path: s.cfg.ClientCAFile},
		{Role: "requestheader-client-ca", Path: s.cfg.RequestHeaderClientCAFile},
		{Role: "proxy-client", Path: s.cfg.ProxyClientCertFile},
		{Role: "etcd-client", Path: s.cfg.EtcdCertFile},
		{Role: "etcd-ca", Path: s.cfg.EtcdCAFile},
		{Role: "etcd-member", Path: s.cfg.EtcdMemberCertFile},
		{Role: "etcd-trusted-ca", Path: s.cfg.EtcdTrustedCAFile},
		{Role: "etcd-peer", Path: s.cfg.EtcdPeerCertFile},
		{Role: "etcd-peer-ca", Path: s.cfg.EtcdPeerTrustedCAFile},
	}
	dir := s.certDir()
	for _, pattern := range []string{"*.crt", "*/*.crt"} {
		generated, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, f := range generated {
			rel, _ := filepath.Rel(dir, f)
			files = append(files, certmetrics.File{Role: "generated:" + strings.TrimSuffix(rel, ".crt"), Path: f})
		}
	}
	s.metrics.embeddedEtcd.Store(s.etcd != nil)
	return registerOnce(s.metrics.registry, certmetrics.New(files...))
}

// etcdGatherer is the embedded etcd member's metrics: the etcd_* families of the default
// registry, where etcd's packages register them (the rest of it would duplicate the server's
// go_* and process_* collectors).
type etcdGatherer struct{ m *metrics }

func (g etcdGatherer) Gather() ([]*dto.MetricFamily, error) {
	if !g.m.embeddedEtcd.Load() {
		return nil, nil
	}
	all, err := prometheus.DefaultGatherer.Gather()
	var out []*dto.MetricFamily
	for _, mf := range all {
		if strings.HasPrefix(mf.GetName(), "etcd_") {
			out = append(out, mf)
		}
	}
	return out, err
}
