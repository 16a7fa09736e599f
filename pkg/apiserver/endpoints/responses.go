// Package endpoints serves the registry over HTTP: it derives go-restful
// routes from the verbs each store implements, negotiates JSON, YAML and
// Table output, decodes and patches request bodies, streams watches and
// publishes discovery.
package endpoints

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/tableconvert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// outputKind is what the client asked to receive.
type outputKind int

const (
	outObject outputKind = iota
	outTable
	outPartialMetadata
)

// protobufType is the media type of Kubernetes' protobuf encoding, which client-go's typed
// clients send and ask for first.
const protobufType = "application/vnd.kubernetes.protobuf"

// output is the negotiated response format.
type output struct {
	yaml  bool
	proto bool // protobuf, for objects that have a protobuf form (every built-in kind; not Table)
	kind  outputKind
}

// negotiate picks the response format from Accept. It fails with 406 when
// nothing acceptable can be produced.
func negotiate(r *http.Request) (output, error) {
	accept := r.Header.Get("Accept")
	if accept == "" {
		return output{}, nil
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		var o output
		switch mt {
		case "application/json", "*/*", "application/*":
		case "application/yaml":
			o.yaml = true
		case protobufType:
			o.proto = true
		default:
			continue
		}
		switch params["as"] {
		case "":
		case "Table":
			if params["g"] != "meta.k8s.io" || (params["v"] != "v1" && params["v"] != "v1beta1") {
				continue
			}
			o.kind = outTable
		case "PartialObjectMetadata", "PartialObjectMetadataList":
			if params["g"] != "meta.k8s.io" || (params["v"] != "v1" && params["v"] != "v1beta1") {
				continue
			}
			o.kind = outPartialMetadata
		default:
			continue
		}
		if o.proto && o.kind == outTable {
			continue // Table has no protobuf form
		}
		return o, nil
	}
	return output{}, &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
		Message: "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf, application/json;as=Table;v=v1;g=meta.k8s.io",
	}}
}

// transform turns obj into what the client asked for (Table, metadata or itself).
func (o output) transform(r *http.Request, obj runtime.Object) (runtime.Object, error) {
	switch o.kind {
	case outTable:
		if _, ok := obj.(*metav1.Status); ok {
			return obj, nil
		}
		opts := metav1.TableOptions{IncludeObject: metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject"))}
		switch opts.IncludeObject {
		case "", metav1.IncludeNone, metav1.IncludeMetadata, metav1.IncludeObject:
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("includeObject must be one of None, Metadata or Object, not %q", opts.IncludeObject))
		}
		convert := tableconvert.ToTable
		if p, ok := r.Context().Value(printerKey{}).(*tableconvert.Printer); ok {
			convert = p.ToTable
		}
		t, err := convert(obj, opts)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		t.Kind, t.APIVersion = "Table", "meta.k8s.io/v1"
		return t, nil
	case outPartialMetadata:
		return partialMetadata(obj)
	}
	return obj, nil
}

func partialMetadata(obj runtime.Object) (runtime.Object, error) {
	if meta.IsListType(obj) {
		items, err := meta.ExtractList(obj)
		if err != nil {
			return nil, err
		}
		la, _ := meta.ListAccessor(obj)
		out := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/v1"}}
		out.ResourceVersion, out.Continue, out.RemainingItemCount = la.GetResourceVersion(), la.GetContinue(), la.GetRemainingItemCount()
		for _, it := range items {
			p, err := partialMetadata(it)
			if err != nil {
				return nil, err
			}
			out.Items = append(out.Items, *p.(*metav1.PartialObjectMetadata))
		}
		return out, nil
	}
	a, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	// Through the accessor, so typed and unstructured objects give the same answer. It shares
	// obj's labels, annotations and the other maps and slices (often the watch cache's own,
	// read by every watcher): the result is only encoded, never changed.
	p := meta.AsPartialObjectMetadata(a)
	p.TypeMeta = metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}
	return p, nil
}

// writeObject writes obj with status code in the negotiated format.
func writeObject(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object) {
	o, err := negotiate(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	obj, err = o.transform(r, obj)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if o.proto && writeProto(w, code, obj) {
		return
	}
	writeEncoded(w, o.yaml, code, obj)
}

// encodeProto encodes obj in the protobuf envelope (magic prefix and runtime.Unknown), as
// upstream does. It fails for objects without a protobuf form.
func encodeProto(obj runtime.Object) ([]byte, error) {
	_, env, err := encodeProtoRoom(obj, 0)
	return env, err
}

// encodeProtoRoom is encodeProto with room free bytes before the envelope: buf is the
// whole allocation and env is buf[room:], or, when the serializer did not write one
// buffer of its own allocating, buf is nil and env a copy of what it wrote.
func encodeProtoRoom(obj runtime.Object, room int) (buf, env []byte, err error) {
	if obj.GetObjectKind().GroupVersionKind().Empty() {
		gvks, _, err := registry.Scheme.ObjectKinds(obj)
		if err != nil {
			return nil, nil, err
		}
		obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	}
	c := protoCapture{room: room}
	if err := protoSerializer.EncodeWithAllocator(obj, &c, &c); err != nil {
		return nil, nil, err
	}
	if c.writes == 1 && c.allocs == 1 && len(c.out) > 0 && len(c.buf) > room && &c.out[0] == &c.buf[room] {
		n := room + len(c.out)
		return c.buf[:n:n], c.out[:len(c.out):len(c.out)], nil
	}
	return nil, bytes.Clone(c.out), nil
}

// protoCapture is the protobuf serializer's allocator and writer at once: it allocates
// fresh buffers with room bytes free before them (remembering the last one whole), and keeps
// what the serializer writes without copying it when that is one Write (the serializer
// writes an object once, from the buffer it allocated).
type protoCapture struct {
	room   int
	buf    []byte
	allocs int
	out    []byte
	writes int
}

func (c *protoCapture) Allocate(n uint64) []byte {
	c.allocs++
	c.buf = make([]byte, uint64(c.room)+n)
	return c.buf[c.room:]
}

func (c *protoCapture) Write(p []byte) (int, error) {
	c.writes++
	if c.writes == 1 {
		c.out = p
	} else {
		c.out = append(c.out[:len(c.out):len(c.out)], p...)
	}
	return len(p), nil
}

// writeProto writes obj as protobuf and reports whether it could. The callers fall back to
// JSON, which every client that asks for protobuf also accepts.
func writeProto(w http.ResponseWriter, code int, obj runtime.Object) bool {
	data, err := encodeProto(obj)
	if err != nil {
		return false
	}
	w.Header().Set("Content-Type", protobufType)
	w.WriteHeader(code)
	_, _ = w.Write(data)
	return true
}

func writeEncoded(w http.ResponseWriter, asYAML bool, code int, obj any) {
	data, err := encodeBodyJSON(listWithoutItemKinds(obj))
	if err != nil {
		http.Error(w, fmt.Sprintf("encode response: %v", err), http.StatusInternalServerError)
		return
	}
	data = append(data, '\n')
	ct := "application/json"
	if asYAML {
		y, err := yaml.JSONToYAML(data)
		if err != nil {
			http.Error(w, fmt.Sprintf("encode response: %v", err), http.StatusInternalServerError)
			return
		}
		data, ct = y, "application/yaml"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// ErrorStatus converts any error into an upstream-shaped Status.
func ErrorStatus(err error) *metav1.Status {
	var st metav1.Status
	if s, ok := err.(apierrors.APIStatus); ok {
		st = s.Status()
	} else if se := new(apierrors.StatusError); asStatusError(err, &se) {
		st = se.Status()
	} else {
		st = apierrors.NewInternalError(err).Status()
	}
	st.Kind, st.APIVersion = "Status", "v1"
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	return &st
}

// writeError writes err as a Status; Retry-After is set when the Status says so.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	st := ErrorStatus(err)
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(st.Details.RetryAfterSeconds))
	}
	var o output
	if r != nil {
		o, _ = negotiate(r)
	}
	if o.proto && writeProto(w, int(st.Code), st) {
		return
	}
	writeEncoded(w, o.yaml, int(st.Code), st)
}

// WriteStatusError writes err as a metav1.Status JSON response (for filters).
func WriteStatusError(w http.ResponseWriter, r *http.Request, err error) { writeError(w, r, err) }

var _ = registry.DryRun
