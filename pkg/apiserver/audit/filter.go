package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/request"
	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// maxErrorBody is how much of a failed response is kept to read its Status from.
const maxErrorBody = 1 << 20

// Auditor records requests by a policy into a sink.
type Auditor struct {
	policy *Policy
	sink   Sink
}

// New returns an auditor; a nil *Auditor audits nothing.
func New(policy *Policy, sink Sink) *Auditor { return &Auditor{policy: policy, sink: sink} }

type idKey struct{}

type requestID struct {
	id       string
	received time.Time
}

// WithAuditID gives every request its audit ID, the client's Audit-ID header when it sent
// one (as upstream's WithAuditInit), else a new UUID, and returns it in the Audit-ID
// response header, audited or not. It goes first in the chain, so that the received
// timestamp is the request's arrival.
func WithAuditID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(HeaderAuditID)
		if id == "" {
			id = uuid.NewString()
		}
		w.Header().Set(HeaderAuditID, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), idKey{}, requestID{id, time.Now()})))
	})
}

// IDFrom returns the request's audit ID.
func IDFrom(ctx context.Context) string {
	rid, _ := ctx.Value(idKey{}).(requestID)
	return rid.id
}

type eventKey struct{}

// LogImpersonatedUser records the user a request impersonates (the impersonation filter
// calls it; the event's user stays the authenticated one, as upstream).
func LogImpersonatedUser(ctx context.Context, u *request.User) {
	st, _ := ctx.Value(eventKey{}).(*state)
	if st == nil || u == nil {
		return
	}
	st.ev.ImpersonatedUser = userInfo(u)
}

// state is one audited request.
type state struct {
	a    *Auditor
	cfg  RequestConfig
	ev   Event
	ann  *request.Annotations
	info *request.Info
}

func (a *Auditor) newState(r *http.Request, u *request.User) *state {
	info, _ := request.InfoFrom(r.Context())
	if a == nil || a.policy == nil {
		return nil
	}
	cfg := a.policy.Evaluate(u, info)
	if cfg.Level == LevelNone {
		return nil
	}
	rid, _ := r.Context().Value(idKey{}).(requestID)
	if rid.id == "" {
		rid = requestID{uuid.NewString(), time.Now()}
	}
	st := &state{a: a, cfg: cfg, info: info}
	uri := r.RequestURI
	if uri == "" {
		uri = r.URL.RequestURI()
	}
	st.ev = Event{Kind: "Event", APIVersion: APIVersion, Level: cfg.Level, AuditID: types.UID(rid.id), RequestURI: uri,
		SourceIPs: sourceIPs(r), UserAgent: r.UserAgent(), RequestReceivedTimestamp: metav1.NewMicroTime(rid.received)}
	if u != nil {
		st.ev.User = *userInfo(u)
	}
	if info != nil {
		st.ev.Verb = info.Verb
		if info.IsResourceRequest {
			st.ev.ObjectRef = &ObjectReference{Resource: info.Resource, Namespace: info.Namespace, Name: info.Name,
				APIGroup: info.APIGroup, APIVersion: info.APIVersion, Subresource: info.Subresource}
		}
	} else {
		st.ev.Verb = strings.ToLower(r.Method)
	}
	return st
}

// emit writes the event at stage s unless the policy omits that stage.
func (st *state) emit(s Stage) {
	if st.cfg.Omits(s) {
		return
	}
	st.ev.Stage = s
	st.ev.StageTimestamp = metav1.NewMicroTime(time.Now())
	if s == StageRequestReceived {
		st.ev.StageTimestamp = st.ev.RequestReceivedTimestamp
	}
	st.ev.Annotations = st.ann.Map()
	st.a.sink.Process(&st.ev)
}

// WithFailedAuthentication records requests that failed authentication (401) before
// failed answers them: one ResponseStarted event with the code, as upstream's
// WithFailedAuthenticationAudit. The policy sees them without a user.
func (a *Auditor) WithFailedAuthentication(failed http.Handler) http.Handler {
	if a == nil {
		return failed
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if st := a.newState(r, nil); st != nil {
			st.ev.ResponseStatus = &metav1.Status{Code: http.StatusUnauthorized}
			st.emit(StageResponseStarted)
		}
		failed.ServeHTTP(w, r)
	})
}

// WithAudit records each request the policy selects: RequestReceived, ResponseStarted for
// long-running requests (watches), ResponseComplete, or Panic. It goes after
// authentication, and gives the request its audit annotations (request.AddAnnotation).
func (a *Auditor) WithAudit(next http.Handler) http.Handler {
	if a == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := request.UserFrom(r.Context())
		st := a.newState(r, u)
		if st == nil {
			next.ServeHTTP(w, r)
			return
		}
		ctx, ann := request.WithAnnotations(r.Context())
		st.ann = ann
		ctx = context.WithValue(ctx, eventKey{}, st)
		// As upstream, the RequestReceived event has neither the body nor a created object's
		// name: the handler has not decoded it yet.
		obj, name := st.readRequest(r)
		st.emit(StageRequestReceived)
		if name != "" && st.ev.ObjectRef.Name == "" {
			st.ev.ObjectRef.Name = name
		}
		if !st.cfg.Level.Less(LevelRequest) {
			st.ev.RequestObject = obj
		}

		long := st.info.LongRunning()
		rw := &responseWriter{ResponseWriter: w, st: st, long: long,
			keepBody: st.cfg.Level == LevelRequestResponse && !long && st.ev.ObjectRef != nil}
		defer func() {
			if v := recover(); v != nil {
				st.ev.ResponseStatus = &metav1.Status{Code: http.StatusInternalServerError, Status: metav1.StatusFailure,
					Reason: metav1.StatusReasonInternalError, Message: fmt.Sprintf("APIServer panic'd: %v", v)}
				st.emit(StagePanic)
				panic(v)
			}
			rw.complete()
		}()
		next.ServeHTTP(rw, r.WithContext(ctx))
	})
}

// readRequest reads the body of a write (and puts it back): the object a create names, and
// the body as JSON at Request level and above.
func (st *state) readRequest(r *http.Request) (obj json.RawMessage, name string) {
	if r.Body == nil || r.Body == http.NoBody || st.info == nil || !st.info.IsResourceRequest {
		return nil, ""
	}
	switch st.info.Verb {
	case "create", "update", "patch":
	default:
		return nil, ""
	}
	if st.cfg.Level.Less(LevelRequest) && st.info.Verb != "create" {
		return nil, ""
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 3<<20+1))
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil || len(body) == 0 {
		return nil, ""
	}
	obj = toJSON(body, r.Header.Get("Content-Type"), st.cfg.OmitManagedFields)
	if obj != nil && st.info.Verb == "create" {
		var m struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if json.Unmarshal(obj, &m) == nil {
			name = m.Metadata.Name
		}
	}
	return obj, name
}

var protoSerializer = protobuf.NewSerializer(registry.Scheme, registry.Scheme)

// toJSON returns a JSON, YAML or Kubernetes protobuf body as compact JSON, without
// metadata.managedFields when omitManaged; nil when it cannot.
func toJSON(body []byte, contentType string, omitManaged bool) json.RawMessage {
	mt, _, _ := mime.ParseMediaType(contentType)
	var out []byte
	switch {
	case mt == "application/vnd.kubernetes.protobuf":
		obj, gvk, err := protoSerializer.Decode(body, nil, nil)
		if err != nil {
			return nil
		}
		obj.GetObjectKind().SetGroupVersionKind(*gvk)
		if out, err = json.Marshal(obj); err != nil {
			return nil
		}
	case strings.HasSuffix(mt, "yaml"):
		var err error
		if out, err = yaml.YAMLToJSON(body); err != nil {
			return nil
		}
	default:
		var b bytes.Buffer
		if json.Compact(&b, body) != nil {
			return nil
		}
		out = b.Bytes()
	}
	if omitManaged {
		out = dropManagedFields(out)
	}
	return out
}

// dropManagedFields removes metadata.managedFields from an object or a list's items.
func dropManagedFields(data []byte) []byte {
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return data
	}
	drop := func(o any) {
		if obj, ok := o.(map[string]any); ok {
			if md, ok := obj["metadata"].(map[string]any); ok {
				delete(md, "managedFields")
			}
		}
	}
	drop(m)
	if items, ok := m["items"].([]any); ok {
		for _, it := range items {
			drop(it)
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return data
	}
	return out
}

// responseWriter notes the code, keeps the body when the event records it or when it is a
// failure's Status, and writes ResponseStarted for long-running requests.
type responseWriter struct {
	http.ResponseWriter
	st       *state
	long     bool
	keepBody bool
	code     int
	body     bytes.Buffer
	started  bool
}

func (w *responseWriter) WriteHeader(code int) {
	w.start(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) start(code int) {
	if w.started {
		return
	}
	w.started = true
	w.code = code
	if w.long {
		w.st.ev.ResponseStatus = &metav1.Status{Code: int32(code)}
		w.st.emit(StageResponseStarted)
	}
}

func (w *responseWriter) Write(b []byte) (int, error) {
	w.start(http.StatusOK)
	if !w.long && (w.keepBody || (w.code >= 400 && w.body.Len() < maxErrorBody)) {
		w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *responseWriter) Flush() {
	w.start(http.StatusOK)
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	// Through the writers under this one (metrics' recorder) to net/http's.
	conn, buf, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, fmt.Errorf("audit: the response writer cannot hijack: %w", err)
	}
	w.start(http.StatusSwitchingProtocols)
	return conn, buf, nil
}

func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// complete writes ResponseComplete (and ResponseStarted for a long-running request that
// never answered), with the response's status and, at RequestResponse, its body.
func (w *responseWriter) complete() {
	st := w.st
	if !w.started {
		if w.long {
			st.ev.ResponseStatus = &metav1.Status{Code: http.StatusOK, Status: metav1.StatusSuccess, Message: "Connection closed early"}
			st.emit(StageResponseStarted)
		}
		w.code = http.StatusOK
	}
	status := &metav1.Status{Code: int32(w.code)}
	if w.body.Len() > 0 {
		obj := toJSON(w.body.Bytes(), w.Header().Get("Content-Type"), st.cfg.OmitManagedFields)
		if w.code >= 400 && obj != nil {
			var s metav1.Status
			if json.Unmarshal(obj, &s) == nil && s.Kind == "Status" {
				s.TypeMeta = metav1.TypeMeta{}
				status = &s
			}
		}
		if w.keepBody && obj != nil {
			st.ev.ResponseObject = obj
			if st.ev.ObjectRef != nil && st.info.Verb == "create" && w.code < 300 {
				st.nameFrom(obj)
			}
		}
	}
	st.ev.ResponseStatus = status
	st.emit(StageResponseComplete)
}

// nameFrom fills the object reference's name, UID and resourceVersion from a created
// object.
func (st *state) nameFrom(obj json.RawMessage) {
	var m metav1.PartialObjectMetadata
	if json.Unmarshal(obj, &m) != nil {
		return
	}
	a, err := meta.Accessor(&m)
	if err != nil {
		return
	}
	if st.ev.ObjectRef.Name == "" {
		st.ev.ObjectRef.Name = a.GetName()
	}
	st.ev.ObjectRef.UID = a.GetUID()
	st.ev.ObjectRef.ResourceVersion = a.GetResourceVersion()
}

func userInfo(u *request.User) *authnv1.UserInfo {
	ui := &authnv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		ui.Extra = make(map[string]authnv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			ui.Extra[k] = v
		}
	}
	return ui
}

// sourceIPs is upstream's utilnet.SourceIPs: X-Forwarded-For, X-Real-Ip, then the peer.
func sourceIPs(r *http.Request) []string {
	var ips []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if ip := net.ParseIP(s); ip != nil {
			for _, have := range ips {
				if have == ip.String() {
					return
				}
			}
			ips = append(ips, ip.String())
		}
	}
	for _, s := range strings.Split(r.Header.Get("X-Forwarded-For"), ",") {
		add(s)
	}
	add(r.Header.Get("X-Real-Ip"))
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	add(host)
	return ips
}
