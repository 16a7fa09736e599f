package ctl

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hacp/hacp/pkg/apiserver/certs"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
)

// TestStatusRealAPIServer reads a real apiserver (/readyz, /version, /metrics with the admin
// certificate) and its embedded etcd member (Status, MemberList, AlarmList with the
// apiserver's etcd client certificate).
func TestStatusRealAPIServer(t *testing.T) {
	var dir string
	s := servertest.New(t, func(c *server.Config) { dir = c.DataDir })
	pki := filepath.Join(dir, "pki")
	cfg := DefaultConfig()
	cfg.CAFile = filepath.Join(pki, certs.CACertFile)
	cfg.CertFile, cfg.KeyFile = filepath.Join(pki, certs.AdminCertFile), filepath.Join(pki, certs.AdminKeyFile)
	cfg.EtcdCAFile = filepath.Join(pki, certs.EtcdCACertFile)
	cfg.EtcdCertFile, cfg.EtcdKeyFile = filepath.Join(pki, certs.EtcdClientCertFile), filepath.Join(pki, certs.EtcdClientKeyFile)
	cfg.Masters = []Master{{Name: "m1", Apiserver: s.URL(), Etcd: s.EtcdClientURL()}}
	cfg.Timeout = 5 * time.Second

	var r *Report
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		if r, err = Collect(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		if r.Healthy || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling for readiness, not synchronising
	}
	if !r.Healthy {
		t.Fatalf("want healthy, got %v", r.Problems)
	}
	m := r.Masters[0]
	if m.Apiserver == nil || !m.Apiserver.Ready || m.Apiserver.GitVersion == "" {
		t.Fatalf("apiserver: %+v (%s)", m.Apiserver, m.ApiserverError)
	}
	if e := m.Etcd; e == nil || e.Source != "etcd" || !e.Leader || !e.HasLeader || e.RaftIndex == 0 || e.DBSize == 0 || e.ID == "" {
		t.Fatalf("etcd: %+v (%s)", m.Etcd, m.EtcdError)
	}
	if len(m.Certs) == 0 {
		t.Fatal("no certificate from hacp_cert_expiry_seconds")
	}

	// An alarm on the member (raised by hand: a real NOSPACE needs a full db) is a problem.
	id, _ := strconv.ParseUint(m.Etcd.ID, 16, 64)
	alarm := &etcdserverpb.AlarmRequest{Action: etcdserverpb.AlarmRequest_ACTIVATE, MemberID: id, Alarm: etcdserverpb.AlarmType_NOSPACE}
	if _, err := etcdserverpb.NewMaintenanceClient(s.EtcdClient().ActiveConnection()).Alarm(context.Background(), alarm); err != nil {
		t.Fatal(err)
	}
	r, err := Collect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(r.Problems, func(p Problem) bool { return p.String() == "m1: etcd: alarm NOSPACE" }) {
		t.Fatalf("with a NOSPACE alarm, problems %v", r.Problems)
	}
	if _, err := s.EtcdClient().AlarmDisarm(context.Background(), &clientv3.AlarmMember{MemberID: id, Alarm: etcdserverpb.AlarmType_NOSPACE}); err != nil {
		t.Fatal(err)
	}

	// The same member through the apiserver's etcd_* metrics, as for a remote master.
	cfg.Masters[0].Etcd = ""
	if r, err := Collect(context.Background(), cfg); err != nil {
		t.Fatal(err)
	} else if e := r.Masters[0].Etcd; e == nil || e.Source != "metrics" || !e.Leader || e.RaftIndex == 0 || (e.ID != m.Etcd.ID && e.ID != "") {
		// etcd's metrics are the process's: after an earlier test's member (-count), the ID
		// is ambiguous and left out.
		t.Fatalf("etcd from metrics: %+v, want the member %s", e, m.Etcd.ID)
	}

	// Without the admin certificate the apiserver refuses: an error, not a healthy report.
	cfg.CertFile, cfg.KeyFile = "", ""
	r, err = Collect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Healthy || r.Masters[0].ApiserverError == "" {
		t.Fatalf("want the apiserver refused, got %+v", r.Masters[0])
	}
}
