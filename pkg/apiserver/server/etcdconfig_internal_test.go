package server

import (
	"testing"

	"go.etcd.io/etcd/server/v3/etcdserver"
)

// TestEtcdSnapshotCatchUpEntriesReachesEtcd: etcd-snapshot-catchup-entries is what the
// embedded member runs with, read back from etcd's own server config: hacp's default 1000,
// a value given, and etcd's default for 0.
func TestEtcdSnapshotCatchUpEntriesReachesEtcd(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  *uint64
		want uint64
	}{
		{"default", nil, defaultEtcdCatchUpEntries},
		{"given", ptr(uint64(250)), 250},
		{"zero is etcd's default", ptr(uint64(0)), etcdserver.DefaultSnapshotCatchUpEntries},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startInternal(t, func(s *Server) {
				if tc.set != nil {
					s.cfg.EtcdSnapshotCatchUpEntries = *tc.set
				}
			})
			if got := s.etcd.SnapshotCatchUpEntries(); got != tc.want {
				t.Errorf("embedded etcd runs with SnapshotCatchUpEntries %d, want %d", got, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
