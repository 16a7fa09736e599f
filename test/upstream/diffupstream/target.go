package diffupstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"time"

	"k8s.io/client-go/rest"
)

// target is one server under test.
type target struct {
	name   string
	base   string
	client *http.Client
}

func newTarget(name string, rc *rest.Config) (*target, error) {
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("%s client: %w", name, err)
	}
	hc.Timeout = 30 * time.Second
	return &target{name: name, base: rc.Host, client: hc}, nil
}

// request is one HTTP request of the corpus.
type request struct {
	method, path string
	// contentType of body (JSON when empty); accept header (JSON when empty).
	contentType, accept string
	body                any
}

// answer is what a server answered: the status code and the decoded JSON body (the text
// when it is not JSON); err when nothing came back.
type answer struct {
	Code int    `json:"code"`
	Body any    `json:"body,omitempty"`
	Err  string `json:"err,omitempty"`
}

// object is the body as an object, or nil.
func (a answer) object() map[string]any {
	m, _ := a.Body.(map[string]any)
	return m
}

func (t *target) do(ctx context.Context, rq request) answer {
	var body io.Reader
	if rq.body != nil {
		b, ok := rq.body.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(rq.body); err != nil {
				return answer{Err: err.Error()}
			}
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, rq.method, t.base+rq.path, body)
	if err != nil {
		return answer{Err: err.Error()}
	}
	ct, accept := rq.contentType, rq.accept
	if ct == "" {
		ct = "application/json"
	}
	if accept == "" {
		accept = "application/json"
	}
	if body != nil {
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set("Accept", accept)
	resp, err := t.client.Do(req)
	if err != nil {
		return answer{Err: err.Error()}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{Code: resp.StatusCode, Err: err.Error()}
	}
	a := answer{Code: resp.StatusCode}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err == nil {
		a.Body = v
	} else if len(b) > 0 {
		a.Body = string(b)
	}
	return a
}

// pair sends each request to both servers and records the checks.
type pair struct {
	kube, hacp *target
	report     *Report
	ctx        context.Context
}

// send sends rq to both servers, kube-apiserver first.
func (p *pair) send(rq request) (kube, hacp answer) {
	return p.kube.do(p.ctx, rq), p.hacp.do(p.ctx, rq)
}

// compare records a check of the two values (already projected onto what is compared).
func (p *pair) compare(area, id string, kube, hacp any) {
	c := Check{ID: id, Area: area, Kube: deepCopy(kube), Hacp: deepCopy(hacp), Result: Same}
	for _, d := range DiffPaths("", c.Kube, c.Hacp) {
		c.Result = Differs
		c.paths = append(c.paths, d.Path)
		c.Diffs = append(c.Diffs, fmt.Sprintf("%s: kube-apiserver %s, hacp %s", d.Path, d.Want, d.Got))
	}
	if len(c.Diffs) > 20 {
		c.Diffs = append(c.Diffs[:20], fmt.Sprintf("... %d more", len(c.Diffs)-20))
	}
	p.report.Checks = append(p.report.Checks, c)
}

// statusView is what is compared of an answer that is a metav1.Status (an error): the code,
// reason, and the causes' fields and types; the message is kept for the reader, not compared.
func statusView(a answer) map[string]any {
	out := map[string]any{"code": a.Code}
	if a.Err != "" {
		out["err"] = a.Err
		return out
	}
	st := a.object()
	if st == nil || st["kind"] != "Status" {
		return out
	}
	out["reason"] = st["reason"]
	d, _ := st["details"].(map[string]any)
	causes, _ := d["causes"].([]any)
	var cs []string
	for _, c := range causes {
		cm, _ := c.(map[string]any)
		cs = append(cs, fmt.Sprintf("%v: %v", cm["field"], cm["reason"]))
	}
	sort.Strings(cs)
	if len(cs) > 0 {
		out["causes"] = toAny(cs)
	}
	return out
}

// statusMessage is the message of a Status answer, for the report.
func statusMessage(a answer) string {
	if st := a.object(); st != nil && st["kind"] == "Status" {
		m, _ := st["message"].(string)
		return m
	}
	return ""
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
