package ctl

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcd reads one member's Status, and the cluster's members and alarms, through its client
// URL with the etcd client certificate.
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
		Learner: st.IsLearner, RaftIndex: st.RaftIndex, DBSize: st.DbSize, Errors: st.Errors}
	members, err := cli.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("member list: %w", err)
	}
	alarms, err := cli.AlarmList(ctx)
	if err != nil {
		return nil, fmt.Errorf("alarm list: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, mem := range members.Members {
		c.names[mem.ID] = mem.Name
	}
	for _, a := range alarms.Alarms {
		c.alarms[a.MemberID] = append(c.alarms[a.MemberID], a.Alarm.String())
	}
	return m, nil
}

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
