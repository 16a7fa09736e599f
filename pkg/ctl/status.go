package ctl

import (
	"context"
	"sync"
	"time"
)

// Report is the status of every master, what hacpctl status prints.
type Report struct {
	Time    time.Time      `json:"time"`
	Masters []MasterStatus `json:"masters"`
	// VIPs says who holds each virtual address (VRRP mode) or announces it (BGP mode).
	VIPs []VIPHolders `json:"vips"`
	// Problems are what makes the cluster degraded, the most telling first; none when
	// Healthy.
	Problems []Problem `json:"problems"`
	Healthy  bool      `json:"healthy"`
}

// MasterStatus is what one master's programs report. A component that could not be read
// has its error and no value.
type MasterStatus struct {
	Name           string           `json:"name"`
	Vipd           *VipdStatus      `json:"vipd,omitempty"`
	VipdError      string           `json:"vipdError,omitempty"`
	Lbproxy        *LbproxyStatus   `json:"lbproxy,omitempty"`
	LbproxyError   string           `json:"lbproxyError,omitempty"`
	Apiserver      *APIServerStatus `json:"apiserver,omitempty"`
	ApiserverError string           `json:"apiserverError,omitempty"`
	Etcd           *EtcdMember      `json:"etcd,omitempty"`
	EtcdError      string           `json:"etcdError,omitempty"`
	// Certs are the certificates the programs report in hacp_cert_expiry_seconds.
	Certs []CertExpiry `json:"certs,omitempty"`
}

// VipdStatus is the part of vipd's /status (and /metrics) hacpctl shows.
type VipdStatus struct {
	Mode string `json:"mode"`
	// Healthy is false while vipd's health check (through the local lbproxy) fails.
	Healthy bool `json:"healthy"`
	Check   *struct {
		LastError string `json:"lastError,omitempty"`
	} `json:"check,omitempty"`
	Instances []VRRPInstance `json:"instances"`
	BGP       *BGPStatus     `json:"bgp,omitempty"`
	// Conflicts are the vipd_vip_conflict series that are not 0: another host answers for
	// a VIP this vipd holds, or sends adverts it drops.
	Conflicts []string `json:"conflicts,omitempty"`
}

// VRRPInstance is one VRRP instance in vipd's /status.
type VRRPInstance struct {
	Name              string   `json:"name"`
	VRID              uint8    `json:"vrid"`
	VIPs              []string `json:"vips"`
	State             string   `json:"state"`
	Priority          uint8    `json:"priority"`
	EffectivePriority uint8    `json:"effectivePriority"`
	MasterAddr        string   `json:"masterAddr,omitempty"`
	Fault             string   `json:"fault,omitempty"`
}

// BGPStatus is vipd's BGP mode in /status.
type BGPStatus struct {
	VIPs []struct {
		Prefix    string `json:"prefix"`
		Announced bool   `json:"announced"`
		Reason    string `json:"reason,omitempty"`
	} `json:"vips"`
	Peers []struct {
		Address string `json:"address"`
		State   string `json:"state"`
	} `json:"peers"`
}

// LbproxyStatus is the part of lbproxy's /status hacpctl shows.
type LbproxyStatus struct {
	ActiveConns int64 `json:"activeConns"`
	Backends    []struct {
		Addr        string `json:"addr"`
		State       string `json:"state"`
		ActiveConns int    `json:"activeConns"`
		Check       struct {
			LastError string `json:"lastError,omitempty"`
		} `json:"check"`
	} `json:"backends"`
}

// APIServerStatus is the apiserver's /readyz and /version.
type APIServerStatus struct {
	Ready      bool   `json:"ready"`
	NotReady   string `json:"notReady,omitempty"` // the failed checks of /readyz?verbose
	GitVersion string `json:"gitVersion"`
}

// EtcdMember is one etcd member as its Status (or its apiserver's etcd_* metrics) tells.
type EtcdMember struct {
	ID        string   `json:"id,omitempty"`
	Leader    bool     `json:"leader"`
	HasLeader bool     `json:"hasLeader"`
	Learner   bool     `json:"learner"`
	RaftIndex uint64   `json:"raftIndex"`
	Lag       uint64   `json:"lag"` // Raft entries behind the leader's commit index
	DBSize    int64    `json:"dbSize"`
	DBQuota   int64    `json:"dbQuota,omitempty"` // the backend quota: NOSPACE beyond it
	Alarms    []string `json:"alarms,omitempty"`
	Errors    []string `json:"errors,omitempty"`
	Source    string   `json:"source"` // "etcd" (client) or "metrics" (the apiserver's)
}

// CertExpiry is one hacp_cert_expiry_seconds series.
type CertExpiry struct {
	Program string        `json:"program"`
	Role    string        `json:"role"`
	File    string        `json:"file"`
	Subject string        `json:"subject,omitempty"`
	Left    time.Duration `json:"left"`
	Error   bool          `json:"error,omitempty"` // hacp_cert_file_error
}

// VIPHolders is who holds one virtual address.
type VIPHolders struct {
	VIP     string   `json:"vip"`
	VRID    uint8    `json:"vrid,omitempty"`
	Holders []string `json:"holders"`
	Mode    string   `json:"mode"`
}

// Collect reads every master's programs at once and judges the result.
func Collect(ctx context.Context, cfg *Config) (*Report, error) {
	c, err := newCollector(cfg)
	if err != nil {
		return nil, err
	}
	r := &Report{Time: time.Now(), Masters: make([]MasterStatus, len(cfg.Masters))}
	var wg sync.WaitGroup
	for i, m := range cfg.Masters {
		wg.Go(func() { r.Masters[i] = c.master(ctx, m) })
	}
	wg.Wait()
	c.fillLag(r)
	r.VIPs = holders(r)
	r.Problems = judge(r, cfg)
	r.Healthy = len(r.Problems) == 0
	return r, nil
}
