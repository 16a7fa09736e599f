package ctl

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcd reads one member's Status through its client URL with the etcd client certificate:
// leader, Raft index, db size and quota, learner, and the alarms the member knows of. Status
// is answered by the member alone, so it works without quorum too; the member list, which
// names the members an alarm is about, is read serializably for the same reason.
func (c *collector) etcd(ctx context.Context, endpoint string) (*EtcdMember, error) {
	if c.etcdTLS == nil {
		return nil, errors.New("no etcd-cert-file and etcd-key-file in the configuration to reach " + endpoint)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: c.etcdTLS.Clone(),
		DialTimeout: c.cfg.Timeout, Logger: zap.NewNop(), Context: ctx})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	st, err := cli.Status(ctx, endpoint)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	id := st.Header.GetMemberId()
	m := &EtcdMember{Source: "etcd", ID: strconv.FormatUint(id, 16), Leader: st.Leader == id, HasLeader: st.Leader != 0,
		Learner: st.IsLearner, RaftIndex: st.RaftIndex, DBSize: st.DbSize, DBQuota: st.DbSizeQuota}
	c.mu.Lock()
	defer c.mu.Unlock()
	if members, err := cli.MemberList(ctx, clientv3.WithSerializable()); err == nil {
		for _, mem := range members.Members {
			c.names[mem.ID] = mem.Name
		}
	}
	for _, e := range st.Errors {
		if a := alarmRe.FindStringSubmatch(e); a != nil {
			mid, _ := strconv.ParseUint(a[1], 10, 64)
			c.alarms[mid] = append(c.alarms[mid], a[2])
		} else if e != rpctypes.ErrNoLeader.Error() { // HasLeader says that
			m.Errors = append(m.Errors, e)
		}
	}
	return m, nil
}

// alarmRe matches an alarm in a Status response's errors (pb.AlarmMember's text form).
var alarmRe = regexp.MustCompile(`memberID:(\d+)\s+alarm:([A-Z_]+)`)

// fillLag sets each member's lag behind the leader's commit index, and the alarms the
// members listed on the member they are about.
func (c *collector) fillLag(r *Report) {
	var leaderIndex uint64
	for _, m := range r.Masters {
		if m.Etcd != nil && m.Etcd.Leader {
			leaderIndex = max(leaderIndex, m.Etcd.RaftIndex)
		}
	}
	byID := map[string]*EtcdMember{}
	for i := range r.Masters {
		e := r.Masters[i].Etcd
		if e == nil {
			continue
		}
		if leaderIndex > e.RaftIndex {
			e.Lag = leaderIndex - e.RaftIndex
		}
		if e.ID != "" {
			byID[e.ID] = e
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, as := range c.alarms {
		slices.Sort(as)
		as = slices.Compact(as)
		key := strconv.FormatUint(id, 16)
		if e := byID[key]; e != nil {
			e.Alarms = as
			continue
		}
		// A member no listed master reports (or whose apiserver hides its ID): put the
		// alarm on the first member read through etcd, naming the member.
		name := c.names[id]
		if name == "" {
			name = key
		}
		for i := range r.Masters {
			if e := r.Masters[i].Etcd; e != nil && e.Source == "etcd" {
				for _, a := range as {
					e.Alarms = append(e.Alarms, a+" on member "+name)
				}
				break
			}
		}
	}
}

func sortCerts(cs []CertExpiry) {
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].Program != cs[j].Program {
			return cs[i].Program < cs[j].Program
		}
		if cs[i].Role != cs[j].Role {
			return cs[i].Role < cs[j].Role
		}
		return cs[i].Subject < cs[j].Subject
	})
}
