package ctl

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	dto "github.com/prometheus/client_model/go"
)

// master reads one master's programs, each at once.
func (c *collector) master(ctx context.Context, m Master) MasterStatus {
	ms := MasterStatus{Name: m.Name}
	var mu sync.Mutex
	var wg sync.WaitGroup
	addCerts := func(cs []CertExpiry) {
		mu.Lock()
		ms.Certs = append(ms.Certs, cs...)
		mu.Unlock()
	}
	if m.Vipd != "" {
		wg.Go(func() {
			st, cs, err := c.vipd(ctx, m.Vipd)
			ms.Vipd, ms.VipdError = st, errText(err)
			addCerts(cs)
		})
	}
	if m.Lbproxy != "" {
		wg.Go(func() {
			st, cs, err := c.lbproxy(ctx, m.Lbproxy)
			ms.Lbproxy, ms.LbproxyError = st, errText(err)
			addCerts(cs)
		})
	}
	var fams map[string]*dto.MetricFamily
	if m.Apiserver != "" {
		wg.Go(func() {
			st, f, err := c.apiserver(ctx, m.Apiserver)
			ms.Apiserver, ms.ApiserverError, fams = st, errText(err), f
			addCerts(certExpiries("apiserver", f))
		})
	}
	var member *EtcdMember
	var etcdErr error
	if m.Etcd != "" {
		wg.Go(func() { member, etcdErr = c.etcd(ctx, m.Etcd) })
	}
	wg.Wait()
	switch {
	case m.Etcd != "":
		ms.Etcd, ms.EtcdError = member, errText(etcdErr)
	case fams != nil:
		ms.Etcd = etcdFromMetrics(fams)
	}
	sortCerts(ms.Certs)
	return ms
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// vipd reads /status, and /metrics for vipd_vip_conflict and the certificates.
func (c *collector) vipd(ctx context.Context, base string) (*VipdStatus, []CertExpiry, error) {
	var st VipdStatus
	if err := c.getJSON(ctx, base, "/status", &st); err != nil {
		return nil, nil, err
	}
	fams, err := c.metrics(ctx, base)
	if err != nil {
		return nil, nil, err
	}
	st.Conflicts = conflicts(fams)
	return &st, certExpiries("vipd", fams), nil
}

// lbproxy reads /status, and /metrics for the certificates.
func (c *collector) lbproxy(ctx context.Context, base string) (*LbproxyStatus, []CertExpiry, error) {
	var st LbproxyStatus
	if err := c.getJSON(ctx, base, "/status", &st); err != nil {
		return nil, nil, err
	}
	fams, err := c.metrics(ctx, base)
	if err != nil {
		return nil, nil, err
	}
	return &st, certExpiries("lbproxy", fams), nil
}

// apiserver reads /readyz?verbose, /version and /metrics. A /readyz that answers but not
// 200 is a status (not ready), not an error.
func (c *collector) apiserver(ctx context.Context, base string) (*APIServerStatus, map[string]*dto.MetricFamily, error) {
	code, body, err := c.get(ctx, base, "/readyz?verbose")
	if err != nil {
		return nil, nil, err
	}
	st := &APIServerStatus{Ready: code == http.StatusOK}
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return nil, nil, fmt.Errorf("/readyz: %d %s (check cert-file, key-file)", code, firstLine(body))
	case !st.Ready:
		st.NotReady = failedChecks(code, body)
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := c.getJSON(ctx, base, "/version", &v); err != nil {
		return nil, nil, err
	}
	st.GitVersion = v.GitVersion
	fams, err := c.metrics(ctx, base)
	if err != nil {
		return nil, nil, err
	}
	return st, fams, nil
}

// failedChecks is the [-] lines of a verbose /readyz, or its status and first line.
func failedChecks(code int, body []byte) string {
	var failed []string
	for l := range strings.SplitSeq(string(body), "\n") {
		if strings.HasPrefix(l, "[-]") {
			failed = append(failed, strings.TrimPrefix(l, "[-]"))
		}
	}
	if len(failed) == 0 {
		return fmt.Sprintf("%d %s", code, firstLine(body))
	}
	return strings.Join(failed, "; ")
}

// etcdFromMetrics is the embedded member as its apiserver's etcd_* metrics show it, or nil
// when there are none (an external etcd).
func etcdFromMetrics(fams map[string]*dto.MetricFamily) *EtcdMember {
	hasLeader, ok := single(fams, "etcd_server_has_leader")
	if !ok {
		return nil
	}
	m := &EtcdMember{Source: "metrics", HasLeader: hasLeader == 1}
	if v, ok := single(fams, "etcd_server_is_leader"); ok {
		m.Leader = v == 1
	}
	if v, ok := single(fams, "etcd_server_is_learner"); ok {
		m.Learner = v == 1
	}
	if v, ok := single(fams, "etcd_server_proposals_committed_total"); ok {
		m.RaftIndex = uint64(v)
	}
	if v, ok := single(fams, "etcd_mvcc_db_total_size_in_bytes"); ok {
		m.DBSize = int64(v)
	}
	if v, ok := single(fams, "etcd_server_quota_backend_bytes"); ok {
		m.DBQuota = int64(v)
	}
	// The member's ID, unless the process has run several members (the metric keeps every
	// ID it was set for): then it is unknown.
	if f := fams["etcd_server_id"]; f != nil && len(f.Metric) == 1 {
		m.ID = label(f.Metric[0], "server_id")
	}
	return m
}
