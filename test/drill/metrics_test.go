package main

import (
	"testing"
	"time"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func ack(name string, start, end int) request {
	return request{Name: name, Start: ms(start), End: ms(end), OK: true}
}

func fail(name string, start, end int) request {
	return request{Name: name, Start: ms(start), End: ms(end), Err: "context deadline exceeded"}
}

func TestAPIDowntime(t *testing.T) {
	tests := []struct {
		name string
		log  eventLog
		want time.Duration
	}{
		{
			name: "gap across the fault",
			log: eventLog{Fault: ms(1000), End: ms(5000), Requests: []request{
				ack("a", 0, 10), ack("b", 900, 950), fail("c", 950, 1950), fail("d", 1950, 2950), ack("e", 2950, 3100), ack("f", 3100, 3150),
			}},
			want: ms(3100 - 950),
		},
		{
			name: "acknowledgement order, not request order",
			log: eventLog{Fault: ms(100), End: ms(1000), Requests: []request{
				ack("b", 50, 900), ack("a", 0, 60), ack("c", 900, 950),
			}},
			want: ms(900 - 60),
		},
		{
			name: "nothing acknowledged after the fault counts until the end",
			log: eventLog{Fault: ms(1000), End: ms(9000), Requests: []request{
				ack("a", 0, 500), ack("b", 500, 600), fail("c", 1000, 2000),
			}},
			want: ms(9000 - 600),
		},
		{
			name: "nothing acknowledged at all",
			log:  eventLog{Fault: ms(1000), End: ms(4000), Requests: []request{fail("a", 0, 1000)}},
			want: ms(4000),
		},
		{
			name: "steady writes",
			log: eventLog{Fault: ms(20), End: ms(100), Requests: []request{
				ack("a", 0, 10), ack("b", 10, 20), ack("c", 20, 30), ack("d", 30, 45),
			}},
			want: ms(15),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := apiDowntime(&tt.log); got != tt.want {
				t.Errorf("apiDowntime = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name     string
		log      eventLog
		wantN    int
		wantLast time.Duration
	}{
		{
			name: "failures before the fault do not count",
			log: eventLog{Fault: ms(1000), Requests: []request{
				fail("a", 0, 500), ack("b", 500, 600), fail("c", 900, 1900), fail("d", 1900, 2900), ack("e", 2900, 3000),
			}},
			wantN: 2, wantLast: ms(1900),
		},
		{
			name:  "none",
			log:   eventLog{Fault: ms(1000), Requests: []request{ack("a", 0, 10), ack("b", 1000, 1010)}},
			wantN: 0, wantLast: 0,
		},
		{
			name: "a request in flight at the fault that fails counts",
			log: eventLog{Fault: ms(1000), Requests: []request{
				fail("a", 990, 1990), ack("b", 1990, 2000), fail("c", 12000, 13000),
			}},
			wantN: 2, wantLast: ms(12000),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, last := failures(&tt.log)
			if n != tt.wantN || last != tt.wantLast {
				t.Errorf("failures = %d, %v; want %d, %v", n, last, tt.wantN, tt.wantLast)
			}
		})
	}
}

func TestWatchGap(t *testing.T) {
	reqs := []request{ack("a", 900, 990), ack("b", 990, 1010), fail("c", 1010, 2010), ack("d", 2010, 2100)}
	tests := []struct {
		name  string
		watch []watchEvent
		want  time.Duration
	}{
		{
			name:  "late event of an object written before the fault does not count",
			watch: []watchEvent{{"a", ms(995)}, {"b", ms(1500)}, {"d", ms(2300)}},
			want:  ms(1300),
		},
		{
			name:  "an object whose write failed but was applied counts",
			watch: []watchEvent{{"c", ms(2050)}, {"d", ms(2300)}},
			want:  ms(1050),
		},
		{
			name:  "a watch that delivers a write slipped through, then hangs",
			watch: []watchEvent{{"c", ms(1030)}, {"d", ms(16010)}},
			want:  ms(14000), // d's delay: written at 2010, delivered at 16010
		},
		{
			name:  "no event after the fault",
			watch: []watchEvent{{"a", ms(995)}},
			want:  -1,
		},
		{
			name:  "unknown names are ignored",
			watch: []watchEvent{{"settle-1", ms(1200)}},
			want:  -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := eventLog{Fault: ms(1000), Requests: reqs, Watch: tt.watch}
			if got := watchGap(&l); got != tt.want {
				t.Errorf("watchGap = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSplitBrain(t *testing.T) {
	both := []string{"m1", "m2"}
	tests := []struct {
		name        string
		samples     []vipSample
		from        time.Duration
		want        time.Duration
		wantOverlap time.Duration
	}{
		{
			name: "isolated holder does not count",
			samples: []vipSample{
				{At: ms(0), Holders: []string{"m1"}, Reachable: []string{"m1"}},
				{At: ms(100), Holders: both, Reachable: []string{"m2"}},
				{At: ms(500), Holders: []string{"m2"}, Reachable: []string{"m2"}},
			},
			want: 0,
		},
		{
			name: "two reachable holders after heal",
			samples: []vipSample{
				{At: ms(0), Holders: both, Reachable: []string{"m2"}},
				{At: ms(100), Holders: both, Reachable: both},
				{At: ms(110), Holders: both, Reachable: both},
				{At: ms(180), Holders: []string{"m1"}, Reachable: []string{"m1"}},
				{At: ms(200), Holders: []string{"m1"}, Reachable: []string{"m1"}},
			},
			want: ms(80),
		},
		{
			name: "only from the given time",
			samples: []vipSample{
				{At: ms(0), Holders: both, Reachable: both},
				{At: ms(50), Holders: both, Reachable: both},
				{At: ms(100), Holders: []string{"m2"}, Reachable: []string{"m2"}},
			},
			from: ms(50),
			want: ms(50),
		},
		{
			name:    "last sample has no duration",
			samples: []vipSample{{At: ms(0), Holders: both, Reachable: both}},
			want:    0,
		},
		{
			name: "a holder handing over is overlap, not split brain",
			samples: []vipSample{
				{At: ms(0), Holders: []string{"m1"}, Reachable: []string{"m1"}, Leaving: []string{"m1"}},
				{At: ms(10), Holders: both, Reachable: both, Leaving: []string{"m1"}},
				{At: ms(20), Holders: both, Reachable: both},
				{At: ms(30), Holders: []string{"m2"}, Reachable: []string{"m2"}},
			},
			want:        ms(10),
			wantOverlap: ms(10),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, overlap := splitBrain(tt.samples, tt.from)
			if got != tt.want || overlap != tt.wantOverlap {
				t.Errorf("splitBrain = %v, %v; want %v, %v", got, overlap, tt.want, tt.wantOverlap)
			}
		})
	}
}

func TestVIPFailover(t *testing.T) {
	m1 := []string{"m1"}
	tests := []struct {
		name string
		log  eventLog
		want time.Duration
	}{
		{
			name: "crashed holder keeps the address but is unreachable",
			log: eventLog{Fault: ms(1000), Faulted: "m1",
				VIP: []vipSample{
					{At: ms(900), Holders: m1, Reachable: m1},
					{At: ms(1010), Holders: m1},
					{At: ms(1400), Holders: []string{"m1", "m2"}, Reachable: []string{"m2"}},
				},
				Probes: []probe{{Start: ms(1350), End: ms(1450), OK: true}, {Start: ms(1400), End: ms(1420)}, {Start: ms(1410), End: ms(1720), OK: true}, {Start: ms(1450), End: ms(1470), OK: true}},
			},
			want: ms(470),
		},
		{
			name: "VIP never moves",
			log: eventLog{Fault: ms(1000), Faulted: "m1",
				VIP:    []vipSample{{At: ms(1010), Holders: m1, Reachable: m1}},
				Probes: []probe{{Start: ms(1100), End: ms(1110), OK: true}},
			},
			want: -1,
		},
		{
			name: "rejoin: back on the faulted host",
			log: eventLog{Fault: ms(1000), Faulted: "m1", WantBack: true,
				VIP: []vipSample{
					{At: ms(1010), Holders: []string{"m2"}, Reachable: []string{"m2"}},
					{At: ms(3000), Holders: []string{"m1", "m2"}, Reachable: []string{"m1", "m2"}},
					{At: ms(3100), Holders: m1, Reachable: m1},
				},
				Probes: []probe{{Start: ms(3100), End: ms(3120), OK: true}},
			},
			want: ms(2120),
		},
	}
	all, others := []string{"m1", "m2", "m3"}, []string{"m2", "m3"}
	tests = append(tests, []struct {
		name string
		log  eventLog
		want time.Duration
	}{
		{
			name: "anycast: the router still routes through the crashed master",
			log: eventLog{Fault: ms(1000), Faulted: "m1", Anycast: true,
				VIP: []vipSample{
					{At: ms(900), Holders: all, Reachable: all},
					{At: ms(1010), Holders: all, Reachable: others},
					{At: ms(9000), Holders: others, Reachable: others},
				},
				Probes: []probe{{Start: ms(1050), End: ms(1060), OK: true}, {Start: ms(9000), End: ms(9010), OK: true}},
			},
			want: ms(8010),
		},
		{
			name: "anycast: route never withdrawn",
			log: eventLog{Fault: ms(1000), Faulted: "m1", Anycast: true,
				VIP:    []vipSample{{At: ms(1010), Holders: all, Reachable: others}},
				Probes: []probe{{Start: ms(1050), End: ms(1060), OK: true}},
			},
			want: -1,
		},
		{
			name: "anycast rejoin: routed through the faulted host again",
			log: eventLog{Fault: ms(1000), Faulted: "m1", Anycast: true, WantBack: true,
				VIP: []vipSample{
					{At: ms(1010), Holders: others, Reachable: others},
					{At: ms(2000), Holders: all, Reachable: all},
				},
				Probes: []probe{{Start: ms(2000), End: ms(2030), OK: true}},
			},
			want: ms(1030),
		},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := vipFailover(&tt.log); got != tt.want {
				t.Errorf("vipFailover = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCompute(t *testing.T) {
	l := eventLog{
		Fault: ms(1000), Heal: ms(3000), End: ms(5000), Faulted: "m1",
		Requests: []request{ack("a", 0, 500), fail("b", 1000, 2000), ack("c", 2000, 2250), ack("d", 2250, 2300)},
		Watch:    []watchEvent{{"c", ms(2400)}},
		VIP: []vipSample{
			{At: ms(1000), Holders: []string{"m1"}},
			{At: ms(1200), Holders: []string{"m1", "m2"}, Reachable: []string{"m2"}},
			{At: ms(3000), Holders: []string{"m1", "m2"}, Reachable: []string{"m1", "m2"}},
			{At: ms(3050), Holders: []string{"m1"}, Reachable: []string{"m1"}},
			{At: ms(5000), Holders: []string{"m1"}, Reachable: []string{"m1"}},
		},
		Probes: []probe{{Start: ms(1300), End: ms(1320), OK: true}},
	}
	m := compute(&l, 1)
	if m.WritesAcked != 3 || m.WritesLost != 1 || m.FailedRequests != 1 || m.LastFailureS != 1 ||
		m.APIDowntimeS != 1.75 || m.WatchGapS != 1.4 || m.VIPFailoverS != 0.32 || m.SplitBrainS != 0.05 {
		t.Errorf("compute = %+v", m)
	}
	if m.SplitBrainAfterHeal == nil || *m.SplitBrainAfterHeal != 0.05 {
		t.Errorf("split brain after heal = %v, want 0.05", m.SplitBrainAfterHeal)
	}
}

func TestVIPBeforeHealthy(t *testing.T) {
	onM1 := func(at int) vipSample {
		return vipSample{At: ms(at), Holders: []string{"m1"}, Reachable: []string{"m1"}}
	}
	onM2 := func(at int) vipSample {
		return vipSample{At: ms(at), Holders: []string{"m2"}, Reachable: []string{"m2"}}
	}
	tests := []struct {
		name   string
		vip    []vipSample
		health []probe
		want   time.Duration
		ok     bool
	}{
		{"VIP waits for health", []vipSample{onM2(1000), onM1(3000)}, []probe{{Start: ms(1500)}, {Start: ms(2500), OK: true}}, 0, true},
		{"VIP back before health", []vipSample{onM2(1000), onM1(2000)}, []probe{{Start: ms(1500)}, {Start: ms(2600), OK: true}}, ms(600), true},
		{"VIP back, never healthy", []vipSample{onM2(1000), onM1(2000)}, []probe{{Start: ms(1500)}}, ms(3000), true},
		{"healthy, VIP stays away", []vipSample{onM2(1000)}, []probe{{Start: ms(2500), OK: true}}, 0, true},
		{"nothing happened", []vipSample{onM2(1000)}, nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := eventLog{Fault: ms(1000), End: ms(5000), Faulted: "m1", WantBack: true, VIP: tt.vip, FaultedHealth: tt.health}
			got, ok := vipBeforeHealthy(&l)
			if got != tt.want || ok != tt.ok {
				t.Errorf("vipBeforeHealthy = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestARPStale(t *testing.T) {
	l := eventLog{Fault: ms(1000), VIP: []vipSample{
		{At: ms(900), Holders: []string{"m1"}, Reachable: []string{"m1"}, ClientARP: "m2"}, // before the fault
		{At: ms(1000), Holders: []string{"m1"}, ClientARP: "m1"},                           // crashed holder: nobody reachable
		{At: ms(1300), Holders: []string{"m1", "m2"}, Reachable: []string{"m2"}, ClientARP: "m1"},
		{At: ms(1350), Holders: []string{"m2"}, Reachable: []string{"m2"}, ClientARP: "m1"},
		{At: ms(1400), Holders: []string{"m2"}, Reachable: []string{"m2"}}, // no entry
		{At: ms(1500), Holders: []string{"m2"}, Reachable: []string{"m2"}, ClientARP: "m2"},
		{At: ms(1600), Holders: []string{"m2", "m3"}, Reachable: []string{"m2", "m3"}, ClientARP: "m3"}, // split brain: not stale
		{At: ms(1700)},
	}}
	if got, want := arpStale(&l), ms(100); got != want {
		t.Errorf("arpStale = %v, want %v", got, want)
	}
}

// TestComputeAnycast: with every healthy master holding the VIP, several holders are not a
// split brain.
func TestComputeAnycast(t *testing.T) {
	all := []string{"m1", "m2", "m3"}
	l := eventLog{
		Fault: ms(1000), Heal: ms(3000), End: ms(5000), Faulted: "m1", Anycast: true,
		VIP: []vipSample{{At: ms(1000), Holders: all, Reachable: all}, {At: ms(5000), Holders: all, Reachable: all}},
	}
	m := compute(&l, 0)
	if m.SplitBrainS != 0 || m.SplitBrainAfterHeal != nil {
		t.Errorf("compute = %+v, want no split brain for anycast", m)
	}
}
