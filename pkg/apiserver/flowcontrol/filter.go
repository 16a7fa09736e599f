package flowcontrol

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/request"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// Handler is the APIPriorityAndFairness filter: it classifies each request (after
// authentication and impersonation) and lets it through when its priority level has seats
// for it, in fair turn with the other flows of that level; the exempt level passes at once.
// Long-running requests other than watches are not held; a watch waits for a seat like
// any request but gives it back once it starts streaming (upstream holds it for the
// watch's initialization only). Responses carry the X-Kubernetes-PF-FlowSchema-UID and
// X-Kubernetes-PF-PriorityLevel-UID headers; rejected requests get 429 with Retry-After.
func (c *Controller) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, okInfo := request.InfoFrom(r.Context())
		u, okUser := request.UserFrom(r.Context())
		if !okInfo || !okUser {
			next.ServeHTTP(w, r)
			return
		}
		watch := info.IsResourceRequest && info.Verb == "watch"
		if info.LongRunning() && !watch {
			next.ServeHTTP(w, r)
			return
		}
		since := time.Now()
		fs, pl, waiter, reason := c.admit(u, info)
		w.Header().Set(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, string(fs.UID))
		w.Header().Set(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID, string(pl.UID))
		if pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt {
			c.metrics.waited(pl.Name, fs.Name, since, true, "")
			if watch {
				c.metrics.executed(pl.Name, fs.Name, true, time.Now())
				next.ServeHTTP(w, r)
				return
			}
			c.disp.exempt(pl.Name, 1)
			defer c.disp.exempt(pl.Name, -1)
			c.execute(pl.Name, fs.Name, func() { next.ServeHTTP(w, r) })
			return
		}
		if waiter != nil {
			var ok bool
			if ok, reason = c.disp.await(r.Context(), waiter, c.opts.WaitLimit); ok {
				c.metrics.waited(pl.Name, fs.Name, since, true, "")
				c.serveSeated(w, r, next, fs.Name, waiter, watch)
				return
			}
		}
		c.metrics.waited(pl.Name, fs.Name, since, false, reason)
		tooManyRequests(w, c.retry.dropped(pl.Name))
	})
}

// admit classifies a request and, unless its level is exempt, queues it (or rejects it,
// with the reason), under the config lock.
func (c *Controller) admit(u *request.User, info *request.Info) (*flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration, *waiter, string) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	fs, pl := c.cfg.Load().classify(u, info)
	if pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt {
		return fs, pl, nil, ""
	}
	flow := distinguisher(fs, u, info)
	w, reason := c.disp.enqueue(pl.Name, fs.Name, flowHash(fs.Name, flow), flow, c.seats(info))
	return fs, pl, w, reason
}

// serveSeated serves a request that has its seats, and gives them back when it is done
// (a watch: before it starts streaming).
func (c *Controller) serveSeated(w http.ResponseWriter, r *http.Request, next http.Handler, fs string, waiter *waiter, watch bool) {
	pl := waiter.lvl.name
	if watch {
		start := time.Now()
		c.disp.finish(waiter)
		c.metrics.executed(pl, fs, true, start)
		next.ServeHTTP(w, r)
		return
	}
	defer c.disp.finish(waiter)
	seats := c.metrics.seats.WithLabelValues(pl, fs)
	seats.Add(float64(waiter.seats))
	defer seats.Sub(float64(waiter.seats))
	c.execute(pl, fs, func() { next.ServeHTTP(w, r) })
}

// execute runs serve counted as executing at its level, and records how long it took.
func (c *Controller) execute(pl, fs string, serve func()) {
	g := c.metrics.executing.WithLabelValues(pl, fs)
	g.Inc()
	defer g.Dec()
	defer c.metrics.executed(pl, fs, false, time.Now())
	serve()
}

// tooManyRequests is upstream's APF rejection: 429, Retry-After (seconds), and a
// plain-text body (not a Status, unlike most of kube-apiserver's errors).
func tooManyRequests(w http.ResponseWriter, retryAfter int64) {
	w.Header().Set("Retry-After", strconv.FormatInt(retryAfter, 10))
	http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
}

// flowHash is upstream's hash of a flow: the first 8 bytes of SHA-256 over the schema's
// name, a zero byte and the distinguisher.
func flowHash(fs, distinguisher string) uint64 {
	h := sha256.New()
	h.Write([]byte(fs))
	h.Write([]byte{0})
	h.Write([]byte(distinguisher))
	return binary.LittleEndian.Uint64(h.Sum(nil)[:8])
}

// objectsPerSeat is upstream's list work estimate: one seat per 100 objects listed.
const objectsPerSeat = 100

// seats is the work of a request: one seat, and for a list one per 100 objects of its
// resource stored (all of them, as upstream counts a list served from the watch cache),
// the level's most seats when the count is not known. The level caps it.
func (c *Controller) seats(info *request.Info) int {
	if !info.IsResourceRequest || info.Verb != "list" {
		return 1
	}
	if c.opts.Count == nil {
		return math.MaxInt32
	}
	n, ok := c.opts.Count(info.APIGroup, info.Resource)
	if !ok {
		return math.MaxInt32
	}
	return max(1, (n+objectsPerSeat-1)/objectsPerSeat)
}
