package flowcontrol

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// DebugPrefix is where DebugHandler serves kube-apiserver's API Priority and Fairness
// dumps: dump_priority_levels, dump_queues and dump_requests.
const DebugPrefix = "/debug/api_priority_and_fairness/"

// DebugHandler serves the dumps in upstream's text format: comma-and-tab separated columns
// aligned by a tabwriter, a header row first. The requests' FinalSeats are 0
// and AdditionalLatency 0s (hacp estimates no work after a request), and
// includeRequestDetails adds no columns.
func (c *Controller) DebugHandler() http.Handler {
	dumps := map[string]func(io.Writer){
		"dump_priority_levels": c.disp.dumpPriorityLevels,
		"dump_queues":          c.disp.dumpQueues,
		"dump_requests":        c.disp.dumpRequests,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dump, ok := dumps[strings.TrimPrefix(r.URL.Path, DebugPrefix)]
		if !ok {
			http.NotFound(w, r)
			return
		}
		tw := tabwriter.NewWriter(w, 8, 0, 1, ' ', 0)
		dump(tw)
		_ = tw.Flush()
	})
}

// row writes one line of columns.
func row(w io.Writer, cols ...string) {
	fmt.Fprint(w, strings.Join(cols, ",\t")+"\n")
}

// sortedLevels are the levels by name; the caller holds d.mu.
func (d *dispatcher) sortedLevels() []*level {
	names := make([]string, 0, len(d.levels))
	for name := range d.levels {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]*level, len(names))
	for i, n := range names {
		out[i] = d.levels[n]
	}
	return out
}

func (d *dispatcher) dumpPriorityLevels(w io.Writer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	row(w, "PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing", "WaitingRequests", "ExecutingRequests",
		"DispatchedRequests", "RejectedRequests", "TimedoutRequests", "CancelledRequests")
	for _, l := range d.sortedLevels() {
		active := 0
		for _, q := range l.queues {
			if len(q.waiters) > 0 {
				active++
			}
		}
		row(w, l.name, strconv.Itoa(active), strconv.FormatBool(l.inUse == 0 && l.waiting == 0), strconv.FormatBool(l.gone),
			strconv.Itoa(l.waiting), strconv.Itoa(len(l.running)), strconv.Itoa(l.dispatched), strconv.Itoa(l.rejected),
			strconv.Itoa(l.timedout), strconv.Itoa(l.cancelled))
	}
}

func (d *dispatcher) dumpQueues(w io.Writer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	row(w, "PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests", "SeatsInUse", "NextDispatchR",
		"InitialSeatsSum", "MaxSeatsSum", "TotalWorkSum")
	for _, l := range d.sortedLevels() {
		for i, q := range l.queues {
			executing, waitingSeats, work := 0, 0, 0.0
			for r := range l.running {
				if r.q == q {
					executing++
				}
			}
			for _, r := range q.waiters {
				waitingSeats += r.seats
				work += r.work()
			}
			row(w, l.name, strconv.Itoa(i), strconv.Itoa(len(q.waiters)), strconv.Itoa(executing), strconv.Itoa(q.inUse), seatSeconds(q.start),
				strconv.Itoa(waitingSeats), strconv.Itoa(waitingSeats), seatSeconds(work))
		}
	}
}

// seatSeconds formats virtual time or work as upstream's SeatSeconds: 8 decimals and "ss".
func seatSeconds(v float64) string { return strconv.FormatFloat(v, 'f', 8, 64) + "ss" }

func (d *dispatcher) dumpRequests(w io.Writer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	row(w, "PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue", "FlowDistingsher", "ArriveTime",
		"InitialSeats", "FinalSeats", "AdditionalLatency", "StartTime")
	dump := func(l *level, qi, ri int, r *waiter) {
		row(w, l.name, r.fs, strconv.Itoa(qi), strconv.Itoa(ri), r.flow, r.since.UTC().Format(time.RFC3339Nano),
			strconv.Itoa(r.seats), "0", "0s", r.started.UTC().Format(time.RFC3339Nano))
	}
	for _, l := range d.sortedLevels() {
		for qi, q := range l.queues {
			for ri, r := range q.waiters {
				dump(l, qi, ri, r)
			}
		}
		running := make([]*waiter, 0, len(l.running))
		for r := range l.running {
			running = append(running, r)
		}
		slices.SortFunc(running, func(a, b *waiter) int { return a.since.Compare(b.since) })
		for _, r := range running {
			dump(l, slices.Index(l.queues, r.q), -1, r)
		}
	}
}
