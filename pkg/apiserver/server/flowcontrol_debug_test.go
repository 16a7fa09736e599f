package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	"k8s.io/client-go/kubernetes"
)

// dumpRows reads one of the APF debug dumps as the admin and splits it into rows of
// trimmed columns, the header first.
func dumpRows(t *testing.T, e *httpEnv, name string) [][]string {
	t.Helper()
	resp, body := e.do(e.admin, "GET", "/debug/api_priority_and_fairness/"+name, "", nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", name, resp.StatusCode, body)
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
		cols := strings.Split(line, ",")
		for i := range cols {
			cols[i] = strings.TrimSpace(cols[i])
		}
		rows = append(rows, cols)
	}
	return rows
}

// rowOf is the first row whose first column is name.
func rowOf(rows [][]string, name string) []string {
	for _, r := range rows[1:] {
		if r[0] == name {
			return r
		}
	}
	return nil
}

// TestFlowControlDebugDumps: /debug/api_priority_and_fairness/dump_priority_levels,
// dump_queues and dump_requests show, in upstream's columns, a one-seat level with one
// request executing and one queued; a user without the non-resource URL's get is refused.
func TestFlowControlDebugDumps(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) { c.MaxRequestsInflight, c.MaxMutatingRequestsInflight = 1, 1 })
	e := newHTTPEnv(t, s)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	const user = "dump-user"
	fsUID, _ := tinyLevel(t, cs, user)
	as := map[string]string{"Impersonate-User": user}
	eventually(t, "dump-user's requests classified to the tiny level", func() bool {
		r, _ := e.do(e.admin, "GET", "/api/v1/namespaces/default/configmaps", "", nil, as)
		return r.StatusCode == 200 && r.Header.Get("X-Kubernetes-PF-FlowSchema-UID") == fsUID
	})
	if r, _ := e.do(e.admin, "GET", "/debug/api_priority_and_fairness/dump_priority_levels", "", nil, map[string]string{"Impersonate-User": "alice"}); r.StatusCode != http.StatusForbidden {
		t.Errorf("dump_priority_levels as alice: %d, want 403", r.StatusCode)
	}
	// A create whose body trickles in holds the one seat; a list waits in the queue.
	pr, pw := io.Pipe()
	held := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", s.URL()+"/api/v1/namespaces/default/configmaps", pr)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Impersonate-User", user)
		resp, err := e.admin.Do(req)
		if err != nil {
			held <- 0
			return
		}
		resp.Body.Close()
		held <- resp.StatusCode
	}()
	if _, err := pw.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap",`)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the held create executing", func() bool {
		r := rowOf(dumpRows(t, e, "dump_priority_levels"), "tiny")
		return r != nil && r[5] == "1"
	})
	queued := make(chan int, 1)
	go func() {
		r, _ := e.do(e.admin, "GET", "/api/v1/namespaces/default/configmaps", "", nil, as)
		queued <- r.StatusCode
	}()
	eventually(t, "a request in the queue", func() bool {
		r := rowOf(dumpRows(t, e, "dump_priority_levels"), "tiny")
		return r != nil && r[4] == "1"
	})
	levels := dumpRows(t, e, "dump_priority_levels")
	if got, want := strings.Join(levels[0], ","), "PriorityLevelName,ActiveQueues,IsIdle,IsQuiescing,WaitingRequests,ExecutingRequests,DispatchedRequests,RejectedRequests,TimedoutRequests,CancelledRequests"; got != want {
		t.Errorf("dump_priority_levels header %q, want %q", got, want)
	}
	if got := strings.Join(rowOf(levels, "tiny")[:6], ","); got != "tiny,1,false,false,1,1" {
		t.Errorf("tiny level: %q, want one active queue, busy, not quiescing, one waiting, one executing", got)
	}
	queues := dumpRows(t, e, "dump_queues")
	if got, want := strings.Join(queues[0], ","), "PriorityLevelName,Index,PendingRequests,ExecutingRequests,SeatsInUse,NextDispatchR,InitialSeatsSum,MaxSeatsSum,TotalWorkSum"; got != want {
		t.Errorf("dump_queues header %q, want %q", got, want)
	}
	if got := strings.Join(rowOf(queues, "tiny")[:5], ","); got != "tiny,0,1,1,1" {
		t.Errorf("tiny queue: %q, want index 0 with one pending, one executing, one seat in use", got)
	}
	reqs := dumpRows(t, e, "dump_requests")
	if got, want := strings.Join(reqs[0], ","), "PriorityLevelName,FlowSchemaName,QueueIndex,RequestIndexInQueue,FlowDistingsher,ArriveTime,InitialSeats,FinalSeats,AdditionalLatency,StartTime"; got != want {
		t.Errorf("dump_requests header %q, want %q", got, want)
	}
	var tiny []string
	for _, r := range reqs[1:] {
		if r[0] == "tiny" {
			tiny = append(tiny, strings.Join(append(r[1:5:5], r[6]), ","))
		}
	}
	if got := strings.Join(tiny, " "); got != "tiny,0,0,,1 tiny,0,-1,,1" {
		t.Errorf("tiny requests (schema, queue, index, flow, seats): %q, want the queued one then the executing one", got)
	}
	if _, err := pw.Write([]byte(`"metadata":{"name":"held"}}`)); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if code := <-held; code != http.StatusCreated {
		t.Fatalf("held create: %d", code)
	}
	if code := <-queued; code != http.StatusOK {
		t.Fatalf("queued list: %d", code)
	}
}
