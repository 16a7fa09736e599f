package endpoints

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/request"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/watch"
)

// scope is what a handler knows about the path it serves.
type scope struct {
	names       *registry.Names
	storage     registry.Storage // main resource or subresource
	kind        schema.GroupVersionKind
	subresource string
	namespaced  bool
	typed       bool // built-in Go type: strategic merge patch allowed
	stop        func() <-chan struct{}
	parent      registry.Storage // a subresource's main resource
	// cachedEncodings: the objects read are the watch cache's, whose encodings are cached
	// by their stored state (listencode.go).
	cachedEncodings bool

	fmOnce sync.Once // fieldManager
	fm     *managedfields.FieldManager
	fmErr  error
}

func (s *scope) gr() schema.GroupResource { return s.names.GroupResource() }

func (s *scope) get(w http.ResponseWriter, r *http.Request, ns, name string) {
	opts := &metav1.GetOptions{}
	if err := decodeQuery(r, opts); err != nil {
		writeError(w, r, err)
		return
	}
	obj, err := s.storage.(registry.Getter).Get(r.Context(), ns, name, opts)
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.writeCached(w, r, obj)
}

func (s *scope) list(w http.ResponseWriter, r *http.Request, ns string, forceWatch bool) {
	opts := &metav1.ListOptions{}
	if err := decodeQuery(r, opts); err != nil {
		writeError(w, r, err)
		return
	}
	// Whether this is a watch is the request's verb, as authorization, audit and the filters
	// saw it (request.Info), never a second reading of the query.
	opts.Watch = forceWatch || request.IsWatch(r)
	if opts.Watch {
		s.watch(w, r, ns, opts)
		return
	}
	if s.listCached(w, r, ns, opts) {
		return
	}
	obj, err := s.storage.(registry.Lister).List(r.Context(), ns, opts)
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.writeCached(w, r, obj)
}

func (s *scope) create(w http.ResponseWriter, r *http.Request, ns, name string) {
	opts := &metav1.CreateOptions{}
	if err := decodeQuery(r, opts); err != nil {
		writeError(w, r, err)
		return
	}
	if err := checkOptions(opts.DryRun, opts.FieldManager); err != nil {
		writeError(w, r, err)
		return
	}
	obj, err := s.decodeBody(w, r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	obj = s.trackUpdate(nil, obj, managerOrUserAgent(opts.FieldManager, r.UserAgent()))
	out, err := s.storage.(registry.Creater).Create(r.Context(), ns, name, obj, opts)
	if tooLargeWithManagedFields(err, obj) {
		out, err = s.storage.(registry.Creater).Create(r.Context(), ns, name, obj, opts)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	code := http.StatusCreated
	if st, ok := out.(*metav1.Status); ok && st.Code != 0 {
		code = int(st.Code)
	}
	writeObject(w, r, code, out)
}

func (s *scope) decodeBody(w http.ResponseWriter, r *http.Request) (runtime.Object, error) {
	data, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if isProtobuf(r) {
		return decodeProto(data, s.kind, s.storage.New)
	}
	data, err = toJSON(r, data)
	if err != nil {
		return nil, err
	}
	return s.decodeJSON(w, r, data)
}

// decodeJSON decodes a JSON body for this scope; fields a custom resource's schema does not
// know are refused with fieldValidation=Strict, reported as warnings with Warn (the
// default) and pruned either way, as upstream.
func (s *scope) decodeJSON(w http.ResponseWriter, r *http.Request, data []byte) (runtime.Object, error) {
	obj, err := decodeObject(w, r, data, s.kind, s.storage.New)
	if err != nil {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	d, isStore := s.storage.(interface{ Definition() *registry.Kind })
	if !ok || !isStore || d.Definition().PruneUnknown == nil {
		return obj, nil
	}
	// Pruned here, as upstream's decoder does (the store prunes again after admission).
	unknown := d.Definition().PruneUnknown(u.Object)
	if s.subresource == "status" {
		unknown = slices.DeleteFunc(unknown, func(p string) bool { return !strings.HasPrefix(p, "status") })
	}
	if len(unknown) == 0 {
		return obj, nil
	}
	validation, _ := fieldValidation(r)
	msgs := make([]string, len(unknown))
	for i, p := range unknown {
		msgs[i] = fmt.Sprintf("unknown field %q", p)
	}
	switch validation {
	case "Strict":
		return nil, apierrors.NewBadRequest("strict decoding error: " + strings.Join(msgs, ", "))
	case "Warn":
		for _, m := range msgs {
			addWarning(w, m)
		}
	}
	return obj, nil
}

func checkOptions(dryRun []string, fieldManager string) error {
	for _, d := range dryRun {
		if d != metav1.DryRunAll {
			return apierrors.NewBadRequest(fmt.Sprintf("dryRun: unsupported value %q, only All is supported", d))
		}
	}
	if len(fieldManager) > 128 {
		return apierrors.NewBadRequest("fieldManager: must be at most 128 characters")
	}
	return nil
}

func (s *scope) update(w http.ResponseWriter, r *http.Request, ns, name string) {
	opts := &metav1.UpdateOptions{}
	if err := decodeQuery(r, opts); err != nil {
		writeError(w, r, err)
		return
	}
	if err := checkOptions(opts.DryRun, opts.FieldManager); err != nil {
		writeError(w, r, err)
		return
	}
	obj, err := s.decodeBody(w, r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := checkName(obj, name); err != nil {
		writeError(w, r, err)
		return
	}
	manager := managerOrUserAgent(opts.FieldManager, r.UserAgent())
	untracked := false
	var tracked runtime.Object // what the last attempt tried to store
	update := func() (runtime.Object, bool, error) {
		return s.storage.(registry.Updater).Update(r.Context(), ns, name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			tracked = dropManagedFields(s.trackUpdate(cur, obj.DeepCopyObject(), manager), untracked)
			return tracked, nil
		}, opts)
	}
	out, created, err := update()
	if tooLargeWithManagedFields(err, tracked) {
		untracked = true
		out, created, err = update()
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	writeObject(w, r, code, out)
}

func checkName(obj runtime.Object, name string) error {
	a, ok := obj.(metav1.Object)
	if !ok {
		return nil
	}
	if a.GetName() != name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", a.GetName(), name))
	}
	return nil
}

const (
	jsonPatchType      = "application/json-patch+json"
	mergePatchType     = "application/merge-patch+json"
	strategicPatchType = "application/strategic-merge-patch+json"
	applyPatchType     = "application/apply-patch+yaml"
)

func (s *scope) patch(w http.ResponseWriter, r *http.Request, ns, name string) {
	opts, ct, patch, err := s.readPatch(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if ct == applyPatchType {
		s.apply(w, r, ns, name, patch, opts)
		return
	}
	manager := managerOrUserAgent(opts.FieldManager, r.UserAgent())
	jp, err := decodePatch(ct, patch)
	if err != nil {
		writeError(w, r, err)
		return
	}
	uopts := &metav1.UpdateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager, FieldValidation: opts.FieldValidation}
	untracked := false
	var tracked runtime.Object // what the last attempt tried to store
	update := func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		if cur == nil {
			return nil, apierrors.NewNotFound(s.gr(), name)
		}
		patched, err := s.applyPatch(ct, jp, patch, cur)
		if err != nil {
			return nil, err
		}
		obj, err := s.decodeJSON(w, r, patched)
		if err != nil {
			if st, ok := err.(apierrors.APIStatus); ok && st.Status().Code == http.StatusBadRequest {
				return nil, apierrors.NewBadRequest(st.Status().Message)
			}
			return nil, err
		}
		if err := checkName(obj, name); err != nil {
			return nil, err
		}
		tracked = dropManagedFields(s.trackUpdate(cur, obj, manager), untracked)
		return tracked, nil
	}
	out, _, err := s.storage.(registry.Updater).Update(r.Context(), ns, name, update, uopts)
	if tooLargeWithManagedFields(err, tracked) {
		untracked = true
		out, _, err = s.storage.(registry.Updater).Update(r.Context(), ns, name, update, uopts)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeObject(w, r, http.StatusOK, out)
}

// readPatch reads a patch request: its options, its patch type (the Content-Type without
// parameters) and its body, refusing types this resource does not take.
func (s *scope) readPatch(r *http.Request) (*metav1.PatchOptions, string, []byte, error) {
	opts := &metav1.PatchOptions{}
	if err := decodeQuery(r, opts); err != nil {
		return nil, "", nil, err
	}
	if err := checkOptions(opts.DryRun, opts.FieldManager); err != nil {
		return nil, "", nil, err
	}
	ct := r.Header.Get("Content-Type")
	if i := indexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	switch ct {
	case jsonPatchType, mergePatchType:
	case strategicPatchType:
		if !s.typed {
			return nil, "", nil, unsupportedMediaType(ct + ": strategic merge patch is only supported for built-in kinds, use application/merge-patch+json or application/json-patch+json")
		}
	case applyPatchType:
	default:
		return nil, "", nil, unsupportedMediaType(ct)
	}
	if errs := metav1validation.ValidatePatchOptions(opts, types.PatchType(ct)); len(errs) > 0 {
		return nil, "", nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs)
	}
	patch, err := readBody(r)
	if err != nil {
		return nil, "", nil, err
	}
	return opts, ct, patch, nil
}

// decodePatch checks that patch is JSON of its type's shape: a JSON patch (returned
// decoded) or, for a merge patch, an object.
func decodePatch(ct string, patch []byte) (jsonpatch.Patch, error) {
	var probe any
	if err := json.Unmarshal(patch, &probe); err != nil {
		return nil, syntaxError(patch, err)
	}
	if ct == jsonPatchType {
		jp, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid JSON patch: %v", err))
		}
		return jp, nil
	}
	if _, ok := probe.(map[string]any); !ok {
		return nil, apierrors.NewBadRequest("a merge patch must be a JSON object")
	}
	return nil, nil
}

// applyPatch applies a patch of type ct (jp when a JSON patch) to cur, giving the patched
// object's JSON.
func (s *scope) applyPatch(ct string, jp jsonpatch.Patch, patch []byte, cur runtime.Object) ([]byte, error) {
	curJSON, err := json.Marshal(cur)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var patched []byte
	switch ct {
	case jsonPatchType:
		patched, err = jp.Apply(curJSON)
	case mergePatchType:
		patched, err = jsonpatch.MergePatch(curJSON, patch)
	case strategicPatchType:
		patched, err = strategicpatch.StrategicMergePatch(curJSON, patch, s.storage.New())
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the patch could not be applied: %v", err))
	}
	return patched, nil
}

// tooLargeWithManagedFields reports whether a write of obj was refused as too large for
// storage while obj carries managedFields, and then drops them: as upstream's create, update
// and (non-apply) patch handlers, the write is tried once more without them, which can be
// large, and the object is stored untracked.
func tooLargeWithManagedFields(err error, obj runtime.Object) bool {
	if obj == nil || !apierrors.IsRequestEntityTooLargeError(err) {
		return false
	}
	a, aerr := meta.Accessor(obj)
	if aerr != nil || len(a.GetManagedFields()) == 0 {
		return false
	}
	a.SetManagedFields(nil)
	return true
}

// dropManagedFields removes obj's managedFields when drop is set (a retry of a write that
// was too large with them).
func dropManagedFields(obj runtime.Object, drop bool) runtime.Object {
	if drop {
		if a, err := meta.Accessor(obj); err == nil {
			a.SetManagedFields(nil)
		}
	}
	return obj
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

func (s *scope) delete(w http.ResponseWriter, r *http.Request, ns, name string) {
	opts, err := decodeDeleteOptions(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := checkOptions(opts.DryRun, ""); err != nil {
		writeError(w, r, err)
		return
	}
	if unsafeDelete(opts) {
		s.deleteCorrupt(w, r, ns, name, opts)
		return
	}
	out, deleted, err := s.storage.(registry.GracefulDeleter).Delete(r.Context(), ns, name, opts)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if gr := s.names.GroupResource(); deleted && !registry.ReturnsDeletedObject(gr) {
		// As upstream: gone at once, and the kind does not return the object.
		a, _ := meta.Accessor(out)
		out = &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess,
			Details: &metav1.StatusDetails{Name: a.GetName(), Group: gr.Group, Kind: gr.Resource, UID: a.GetUID()}}
	}
	writeObject(w, r, http.StatusOK, out)
}

func (s *scope) deleteCollection(w http.ResponseWriter, r *http.Request, ns string) {
	listOpts := &metav1.ListOptions{}
	if err := decodeQuery(r, listOpts); err != nil {
		writeError(w, r, err)
		return
	}
	opts, err := decodeDeleteOptions(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := checkOptions(opts.DryRun, ""); err != nil {
		writeError(w, r, err)
		return
	}
	if unsafeDelete(opts) {
		writeError(w, r, unsafeCollectionError(opts))
		return
	}
	out, err := s.storage.(registry.CollectionDeleter).DeleteCollection(r.Context(), ns, opts, listOpts)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeObject(w, r, http.StatusOK, out)
}

func (s *scope) watch(w http.ResponseWriter, r *http.Request, ns string, opts *metav1.ListOptions) {
	watcher, ok := s.storage.(registry.Watcher)
	if !ok {
		writeError(w, r, apierrors.NewMethodNotSupported(s.gr(), "watch"))
		return
	}
	out, err := negotiate(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), watchTimeout(opts.TimeoutSeconds))
	defer cancel()
	wi, err := watcher.Watch(ctx, ns, opts)
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer wi.Stop()
	ws := s.startWatchStream(w, r, out)
	var stop <-chan struct{}
	if s.stop != nil {
		stop = s.stop()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case ev, ok := <-wi.ResultChan():
			if !ok || !ws.emitQueued(ev, wi.ResultChan()) {
				return
			}
		}
	}
}

// watchStream writes a watch's events to its client.
type watchStream struct {
	s       *scope
	w       http.ResponseWriter
	r       *http.Request
	out     output
	format  wireFormat
	flusher http.Flusher // nil when w cannot flush
	first   bool         // no event written yet (a Table's first carries the columns)
}

// startWatchStream answers 200 with the stream's content type, flushed at once.
func (s *scope) startWatchStream(w http.ResponseWriter, r *http.Request, out output) *watchStream {
	ws := &watchStream{s: s, w: w, r: r, out: out, format: wireJSON, first: true}
	ws.flusher, _ = w.(http.Flusher)
	if out.proto {
		ws.format = wireProto
		w.Header().Set("Content-Type", protobufType+";stream=watch")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	ws.flush()
	return ws
}

func (ws *watchStream) flush() {
	if ws.flusher != nil {
		ws.flusher.Flush()
	}
}

// emitQueued writes ev and what is queued behind it on events (100 at most), then flushes
// once: a watcher that falls behind catches up in fewer, larger writes. False when the
// watch ends.
func (ws *watchStream) emitQueued(ev watch.Event, events <-chan watch.Event) bool {
	for n := 0; ; n++ {
		if !ws.emit(ev) {
			ws.flush()
			return false
		}
		if n == 100 {
			break
		}
		more := false
		select {
		case ev, more = <-events:
		default:
		}
		if !more {
			break
		}
	}
	ws.flush()
	return true
}

// emit writes one event; false when the watch ends (an error event, or the client gone).
func (ws *watchStream) emit(ev watch.Event) bool {
	// Storage's own object: the cache hands the same one to every watcher (etcd's watch
	// and a converting store make one per watcher, which then only takes room).
	shared := ev.Type != watch.Error && ws.out.kind == outObject
	if ev.Type != watch.Error {
		ev = ws.transform(ev)
	}
	var frame []byte
	var err error
	if shared {
		var store any
		if ws.s.cachedEncodings {
			store = ws.s.storage
		}
		frame, err = objectEncodings.frame(store, ws.format, ev.Type, ev.Object)
	} else {
		frame, err = encodeEvent(ws.format, ev.Type, ev.Object)
	}
	if err != nil {
		return false
	}
	if _, err := ws.w.Write(frame); err != nil {
		return false
	}
	return ev.Type != watch.Error
}

// transform gives an event's object in the negotiated form: a Table row (the columns in
// the first only), partial metadata, or itself; an error event when the row fails.
func (ws *watchStream) transform(ev watch.Event) watch.Event {
	switch {
	case ws.out.kind == outTable && ev.Type == watch.Bookmark:
		ev.Object = bookmarkTable(ev.Object)
	case ws.out.kind == outTable:
		t, err := ws.out.transform(ws.r, ev.Object)
		if err != nil {
			return watch.Event{Type: watch.Error, Object: ErrorStatus(err)}
		}
		if !ws.first {
			t.(*metav1.Table).ColumnDefinitions = nil
		}
		ws.first = false
		ev.Object = t
	case ws.out.kind == outPartialMetadata:
		if p, err := partialMetadata(ev.Object); err == nil {
			ev.Object = p
		}
	}
	return ev
}

// minRequestTimeout is kube-apiserver's --min-request-timeout default. A watch without a
// timeout of its own ends after it times a random factor in [1, 2), which spreads the
// reconnections of many watchers.
const minRequestTimeout = 1800 * time.Second

// watchTimeout is how long a watch streams, as upstream's ListResource decides it:
// timeoutSeconds when set and not 0 (0 means unset), else minRequestTimeout times [1, 2).
func watchTimeout(timeoutSeconds *int64) time.Duration {
	if timeoutSeconds != nil && *timeoutSeconds != 0 {
		return time.Duration(*timeoutSeconds) * time.Second
	}
	return time.Duration(float64(minRequestTimeout) * (rand.Float64() + 1))
}

func bookmarkTable(obj runtime.Object) runtime.Object {
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}}
	if a, ok := obj.(metav1.Object); ok {
		t.ResourceVersion = a.GetResourceVersion()
	}
	return t
}
