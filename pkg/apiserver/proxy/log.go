package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// logOptions are pods/log's query parameters (PodLogOptions).
type logOptions struct {
	container                        string
	follow, previous, timestamps     bool
	sinceSeconds, tailLines, limitBs *int64
	sinceTime                        *time.Time
}

// parseLogOptions reads and validates the query as upstream (400 for a value that does not
// parse, 422 Invalid for one out of range).
func parseLogOptions(name string, q url.Values) (*logOptions, error) {
	o := &logOptions{container: q.Get("container")}
	var err error
	boolean := func(key string, dst *bool) {
		if v := q.Get(key); v != "" && err == nil {
			if *dst, err = strconv.ParseBool(v); err != nil {
				err = apierrors.NewBadRequest(fmt.Sprintf("%s: invalid value %q: must be true or false", key, v))
			}
		}
	}
	integer := func(key string) *int64 {
		v := q.Get(key)
		if v == "" || err != nil {
			return nil
		}
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil {
			err = apierrors.NewBadRequest(fmt.Sprintf("%s: invalid value %q: must be an integer", key, v))
			return nil
		}
		return &n
	}
	boolean("follow", &o.follow)
	boolean("previous", &o.previous)
	boolean("timestamps", &o.timestamps)
	o.sinceSeconds = integer("sinceSeconds")
	o.tailLines = integer("tailLines")
	o.limitBs = integer("limitBytes")
	if v := q.Get("sinceTime"); v != "" && err == nil {
		t, perr := time.Parse(time.RFC3339, v)
		if perr != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("sinceTime: invalid value %q: %v", v, perr))
		}
		o.sinceTime = &t
	}
	if err != nil {
		return nil, err
	}
	var errs field.ErrorList
	if o.tailLines != nil && *o.tailLines < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *o.tailLines, "must be greater than or equal to 0"))
	}
	if o.limitBs != nil && *o.limitBs < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *o.limitBs, "must be greater than 0"))
	}
	switch {
	case o.sinceSeconds != nil && o.sinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case o.sinceSeconds != nil && *o.sinceSeconds < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *o.sinceSeconds, "must be greater than 0"))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, name, errs)
	}
	return o, nil
}

// kubeletQuery is the kubelet's containerLogs query for o, as upstream's LogLocation.
func (o *logOptions) kubeletQuery() string {
	p := url.Values{}
	if o.follow {
		p.Add("follow", "true")
	}
	if o.previous {
		p.Add("previous", "true")
	}
	if o.timestamps {
		p.Add("timestamps", "true")
	}
	if o.sinceSeconds != nil {
		p.Add("sinceSeconds", strconv.FormatInt(*o.sinceSeconds, 10))
	}
	if o.sinceTime != nil {
		p.Add("sinceTime", o.sinceTime.Format(time.RFC3339))
	}
	if o.tailLines != nil {
		p.Add("tailLines", strconv.FormatInt(*o.tailLines, 10))
	}
	if o.limitBs != nil {
		p.Add("limitBytes", strconv.FormatInt(*o.limitBs, 10))
	}
	return p.Encode()
}

func (c *Connector) podLog(ctx context.Context, ns, name string, q url.Values) (http.Handler, error) {
	opts, err := parseLogOptions(name, q)
	if err != nil {
		return nil, err
	}
	pod, err := c.pod(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	container, err := podContainer(pod, opts.container)
	if err != nil {
		return nil, err
	}
	if pod.Spec.NodeName == "" {
		// Not scheduled yet: upstream streams nothing.
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusOK)
		}), nil
	}
	loc, err := c.kubeletLocation(ctx, pod.Spec.NodeName)
	if err != nil {
		return nil, err
	}
	loc.Path = "/containerLogs/" + url.PathEscape(ns) + "/" + url.PathEscape(name) + "/" + url.PathEscape(container)
	loc.RawQuery = opts.kubeletQuery()
	return &logStreamer{location: loc, transport: c.kubelet, pod: name}, nil
}

// logStreamer GETs a kubelet's log and streams it, each chunk flushed as it comes (upstream's
// LocationStreamer). A kubelet's error answer becomes a Status, as upstream's response checker
// makes it.
type logStreamer struct {
	location  *url.URL
	transport http.RoundTripper
	pod       string
}

// maxErrorBody is how much of a kubelet's error answer is read (upstream's maxReadLength).
const maxErrorBody = 50000

func (s *logStreamer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, s.location.String(), nil)
	if err != nil {
		writeStatus(w, unknownError(err))
		return
	}
	resp, err := s.transport.RoundTrip(req)
	if err != nil {
		if r.Context().Err() == nil {
			writeStatus(w, unknownError(err))
		}
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode < http.StatusOK || resp.StatusCode > http.StatusPartialContent {
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if err != nil {
			writeStatus(w, apierrors.NewInternalError(err))
			return
		}
		text := strings.TrimSpace(string(b))
		switch resp.StatusCode {
		case http.StatusInternalServerError:
			writeStatus(w, apierrors.NewInternalError(fmt.Errorf("%s", text)))
		case http.StatusBadRequest:
			writeStatus(w, apierrors.NewBadRequest(text))
		default:
			writeStatus(w, apierrors.NewGenericServerResponse(resp.StatusCode, "", corev1.Resource("pods/log"), s.pod, text, 0, false))
		}
		return
	}
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		ct = "text/plain"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}
