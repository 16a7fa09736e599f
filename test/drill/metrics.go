package main

import (
	"math"
	"slices"
	"time"
)

// The event logs a scenario records, all times relative to the drill's start, and the pure
// functions that turn them into the reported metrics.

// request is one write by the client through the VIP with a 1 s timeout: a create, or an
// update, patch or delete of an object it created.
type request struct {
	Op    string        `json:"op,omitempty"` // "" is a create (older logs)
	Key   string        `json:"key,omitempty"`
	Value string        `json:"value,omitempty"`
	Name  string        `json:"name"`
	Start time.Duration `json:"start"`
	End   time.Duration `json:"end"`
	OK    bool          `json:"ok"`
	Err   string        `json:"err,omitempty"`
}

// watchEvent is an object delivered by the client's informer.
type watchEvent struct {
	Name string        `json:"name"`
	At   time.Duration `json:"at"`
}

// vipSample is who held the VIP at one instant, and which of those holders the rest of the
// network could reach (link up).
type vipSample struct {
	At        time.Duration `json:"at"`
	Holders   []string      `json:"holders"`
	Reachable []string      `json:"reachable"`
	// ClientARP is the master whose MAC the client's neighbour entry for the VIP names
	// ("" when the client has no usable entry).
	ClientARP string `json:"client_arp,omitempty"`
	// Leaving are the holders whose VIP is deprecated: vipd handing it over (LEAVING),
	// still receiving on it but no longer claiming it.
	Leaving []string `json:"leaving,omitempty"`
}

// probe is one TLS handshake through the VIP from the client host (or, for the rejoining
// master's health, one GET /healthz).
type probe struct {
	Start time.Duration `json:"start"`
	End   time.Duration `json:"end"`
	OK    bool          `json:"ok"`
}

// eventLog is everything recorded during one scenario.
type eventLog struct {
	Fault    time.Duration // when the fault (or the rejoin) was injected
	Heal     time.Duration // partition-master: when the partition healed; 0 otherwise
	End      time.Duration // when recording stopped
	Faulted  string        // the host the fault hit ("m1")
	WantBack bool          // rejoin: the VIP is expected to move back to Faulted
	// Anycast: every healthy master holds the VIP (BGP mode) and the samples' Holders are
	// the masters the router sends it to; several at once is the design, not a split brain.
	Anycast  bool `json:",omitempty"`
	Requests []request
	// The writer's request in flight when recording ended (its outcome is unknown): not in
	// the metrics, but its object is in doubt for writes_lost.
	CutOff []request `json:",omitempty"`
	Watch  []watchEvent
	VIP    []vipSample
	Probes []probe
	// rejoin: /healthz of the faulted master's own apiserver, from the client.
	FaultedHealth []probe
	// --proxy-paths: the flunders created through the VIP (aggregated API) and the ones the
	// flunder informer reported added.
	FlunderRequests []request    `json:",omitempty"`
	FlunderWatch    []watchEvent `json:",omitempty"`
}

// metrics is one scenario's row in report.json. Times are in seconds; -1 means the event
// did not happen before recording stopped (the VIP never moved, no event arrived).
type metrics struct {
	VIPFailoverS float64 `json:"vip_failover_s"`
	APIDowntimeS float64 `json:"api_downtime_s"`
	WritesAcked  int     `json:"writes_acked"`
	WritesLost   int     `json:"writes_lost"`
	WatchGapS    float64 `json:"watch_gap_s"`
	SplitBrainS  float64 `json:"split_brain_s"`
	// Time during which a master handing the VIP over (deprecated, LEAVING) and the one
	// taking it both had it bound: make-before-break's overlap, not a split brain.
	HandoverOverlapS float64 `json:"handover_overlap_s"`
	FailedRequests   int     `json:"failed_requests"`
	LastFailureS     float64 `json:"last_failure_s"`
	// partition-master only: writes the isolated master acknowledged (must be 0), and how
	// long two reachable hosts held the VIP after the heal.
	IsolatedWrites      *int     `json:"isolated_writes_accepted,omitempty"`
	SplitBrainAfterHeal *float64 `json:"split_brain_after_heal_s,omitempty"`
	// Time after the fault during which the VIP sat on one reachable master but the
	// client's neighbour entry still named another: the client's packets to the VIP went
	// to a host that no longer had it (a gratuitous ARP not taken).
	ClientARPStaleS float64 `json:"client_arp_stale_s"`
	// rejoin only: how long the VIP sat on the rejoining master before its own apiserver
	// was healthy (0: it waited, as it should).
	VIPBeforeHealthyS *float64 `json:"vip_before_healthy_s,omitempty"`
	// kill-master with --control-plane: seconds from the fault until the controller-manager's
	// and the scheduler's Leases were acquired again (0: a survivor held it and it never
	// lapsed), and how long a scale-up from 3 to 6 pods made after that took to be Running.
	CMLeaseTakeoverS    *float64 `json:"cm_lease_takeover_s,omitempty"`
	SchedLeaseTakeoverS *float64 `json:"scheduler_lease_takeover_s,omitempty"`
	ScaleUpAfterFaultS  *float64 `json:"scale_up_after_fault_s,omitempty"`
	// --proxy-paths: watch_gap_s of the informer on sample-apiserver's flunders (through the
	// VIP and the aggregation layer), the flunders created (acknowledged), those of them the
	// informer never reported, and the creates that failed after the fault.
	FlunderWatchGapS      *float64 `json:"flunder_watch_gap_s,omitempty"`
	FlundersAcked         *int     `json:"flunders_acked,omitempty"`
	FlundersUnseen        *int     `json:"flunders_unseen,omitempty"`
	FlunderFailedRequests *int     `json:"flunder_failed_requests,omitempty"`
}

func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }

// apiDowntime is the longest gap between two consecutive acknowledged writes (by
// acknowledgement time) in the log, and from the last acknowledgement to the end if no write
// was acknowledged after the fault.
func apiDowntime(l *eventLog) time.Duration {
	var acks []time.Duration
	for _, r := range l.Requests {
		if r.OK {
			acks = append(acks, r.End)
		}
	}
	slices.Sort(acks)
	var longest time.Duration
	for i := 1; i < len(acks); i++ {
		longest = max(longest, acks[i]-acks[i-1])
	}
	if len(acks) == 0 || acks[len(acks)-1] < l.Fault {
		from := time.Duration(0)
		if len(acks) > 0 {
			from = acks[len(acks)-1]
		}
		longest = max(longest, l.End-from)
	}
	return longest
}

// failures counts the requests that failed or timed out at or after the fault, and returns
// the time of the last one relative to the fault (0 when none failed).
func failures(l *eventLog) (n int, last time.Duration) {
	for _, r := range l.Requests {
		if r.OK || r.End < l.Fault {
			continue
		}
		n++
		last = max(last, r.End-l.Fault)
	}
	return n, last
}

// watchGap is how long the informer's watch left new data undelivered after the fault: the
// larger of the time from the fault to the first event for an object whose write started
// after the fault (the watch delivers again) and the longest delay from such a write's start
// to its event (a watch that delivered a write which slipped through before the fault took
// hold, then hung on a dead path until TCP gave up). Events for objects written before the
// fault do not count. -1 if no object written after the fault was delivered.
func watchGap(l *eventLog) time.Duration {
	started := make(map[string]time.Duration, len(l.Requests))
	for _, r := range l.Requests {
		if r.Op == "" || r.Op == opCreate { // the informer reports additions
			started[r.Name] = r.Start
		}
	}
	first, longest := time.Duration(-1), time.Duration(0)
	seen := make(map[string]bool, len(l.Watch))
	for _, e := range l.Watch {
		s, ok := started[e.Name]
		if !ok || s < l.Fault || e.At < l.Fault || seen[e.Name] {
			continue
		}
		seen[e.Name] = true // the first event of an object is its delivery
		if first < 0 || e.At-l.Fault < first {
			first = e.At - l.Fault
		}
		longest = max(longest, e.At-s)
	}
	if first < 0 {
		return -1
	}
	return max(first, longest)
}

// splitBrain sums the time during which two or more hosts claimed the VIP (held it, not
// deprecated) while the network could reach at least two of them, counting only samples at
// or after from; overlap sums the time during which two reachable hosts held it but one of
// them was handing it over (deprecated). Each sample stands for the time until the next one.
func splitBrain(samples []vipSample, from time.Duration) (split, overlap time.Duration) {
	for i := 0; i+1 < len(samples); i++ {
		s := samples[i]
		if s.At < from || len(s.Holders) < 2 {
			continue
		}
		claiming, reachable := 0, 0
		for _, h := range s.Holders {
			if slices.Contains(s.Reachable, h) {
				reachable++
				if !slices.Contains(s.Leaving, h) {
					claiming++
				}
			}
		}
		switch {
		case claiming >= 2:
			split += samples[i+1].At - s.At
		case reachable >= 2:
			overlap += samples[i+1].At - s.At
		}
	}
	return split, overlap
}

// vipFailover is the time from the fault until the VIP sits on exactly one reachable host
// other than the faulted one (rejoin: on the faulted host again) and a probe through the
// VIP that started after the move has succeeded. -1 if that never happened.
func vipFailover(l *eventLog) time.Duration {
	moved := time.Duration(-1)
	for _, s := range l.VIP {
		if s.At < l.Fault || len(s.Holders) == 0 {
			continue
		}
		var on []string
		for _, h := range s.Holders {
			// A master handing the VIP over (deprecated) no longer holds it.
			if slices.Contains(s.Reachable, h) && !slices.Contains(s.Leaving, h) {
				on = append(on, h)
			}
		}
		if l.Anycast {
			// Where the router sends the VIP, reachable or not: a route through a dead
			// master is the fault still hurting, until the router drops it.
			if slices.Contains(s.Holders, l.Faulted) != l.WantBack || len(on) == 0 {
				continue
			}
		} else if len(on) != 1 || (on[0] == l.Faulted) != l.WantBack {
			continue
		}
		moved = s.At
		break
	}
	if moved < 0 {
		return -1
	}
	best := time.Duration(-1)
	for _, p := range l.Probes {
		if p.OK && p.Start >= moved && (best < 0 || p.End < best) {
			best = p.End
		}
	}
	if best < 0 {
		return -1
	}
	return best - l.Fault
}

// vipBeforeHealthy is, for a rejoin, how long the VIP was on the faulted master before
// that master's own apiserver first answered /healthz (0 if the VIP waited for it). ok is
// false when there is nothing to judge: the VIP never came back and the master never
// became healthy.
func vipBeforeHealthy(l *eventLog) (d time.Duration, ok bool) {
	back := time.Duration(-1)
	for _, s := range l.VIP {
		if s.At >= l.Fault && slices.Contains(s.Holders, l.Faulted) {
			back = s.At
			break
		}
	}
	healthy := time.Duration(-1)
	for _, p := range l.FaultedHealth {
		if p.OK && p.Start >= l.Fault {
			healthy = p.Start
			break
		}
	}
	switch {
	case back < 0:
		return 0, healthy >= 0
	case healthy < 0:
		return l.End - back, true
	case back < healthy:
		return healthy - back, true
	}
	return 0, true
}

// arpStale sums the time after the fault during which exactly one reachable master held
// the VIP while the client's neighbour entry for it named a different master.
func arpStale(l *eventLog) time.Duration {
	var total time.Duration
	for i := 0; i+1 < len(l.VIP); i++ {
		s := l.VIP[i]
		if s.At < l.Fault || s.ClientARP == "" {
			continue
		}
		var on []string
		for _, h := range s.Holders {
			if slices.Contains(s.Reachable, h) {
				on = append(on, h)
			}
		}
		if len(on) == 1 && on[0] != s.ClientARP {
			total += l.VIP[i+1].At - s.At
		}
	}
	return total
}

// compute derives a scenario's metrics from its log; lost is the number of acknowledged
// writes missing when read back.
func compute(l *eventLog, lost int) metrics {
	m := metrics{WritesLost: lost}
	for _, r := range l.Requests {
		if r.OK {
			m.WritesAcked++
		}
	}
	m.APIDowntimeS = seconds(apiDowntime(l))
	n, last := failures(l)
	m.FailedRequests, m.LastFailureS = n, seconds(last)
	m.WatchGapS = orMinusOne(watchGap(l))
	m.VIPFailoverS = orMinusOne(vipFailover(l))
	if !l.Anycast {
		split, overlap := splitBrain(l.VIP, l.Fault)
		m.SplitBrainS, m.HandoverOverlapS = seconds(split), seconds(overlap)
	}
	m.ClientARPStaleS = seconds(arpStale(l))
	if l.WantBack {
		if d, ok := vipBeforeHealthy(l); ok {
			v := seconds(d)
			m.VIPBeforeHealthyS = &v
		}
	}
	if len(l.FlunderRequests) > 0 {
		computeFlunders(l, &m)
	}
	if l.Heal > 0 && !l.Anycast {
		split, _ := splitBrain(l.VIP, l.Heal)
		v := seconds(split)
		m.SplitBrainAfterHeal = &v
	}
	return m
}

func orMinusOne(d time.Duration) float64 {
	if d < 0 {
		return -1
	}
	return seconds(d)
}

// computeFlunders fills the flunder metrics: the watch gap as watchGap computes it for
// ConfigMaps, the acknowledged creates, those never reported by the informer, and the
// creates that failed after the fault.
func computeFlunders(l *eventLog, m *metrics) {
	fl := eventLog{Fault: l.Fault, Requests: l.FlunderRequests, Watch: l.FlunderWatch}
	gap := orMinusOne(watchGap(&fl))
	seen := map[string]bool{}
	for _, e := range l.FlunderWatch {
		seen[e.Name] = true
	}
	acked, unseen := 0, 0
	for _, q := range l.FlunderRequests {
		if q.OK {
			acked++
			if !seen[q.Name] {
				unseen++
			}
		}
	}
	failed, _ := failures(&fl)
	m.FlunderWatchGapS, m.FlundersAcked, m.FlundersUnseen, m.FlunderFailedRequests = &gap, &acked, &unseen, &failed
}
