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
	opts := &metav1.PatchOptions{}
	if err := decodeQuery(r, opts); err != nil {
		writeError(w, r, err)
		return
	}
	if err := checkOptions(opts.DryRun, opts.FieldManager); err != nil {
		writeError(w, r, err)
		return
	}
	ct := r.Header.Get("Content-Type")
	if i := indexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	switch ct {
	case jsonPatchType, mergePatchType:
	case strategicPatchType:
		if !s.typed {
			writeError(w, r, unsupportedMediaType(ct+": strategic merge patch is only supported for built-in kinds, use application/merge-patch+json or application/json-patch+json"))
			return
		}
	case applyPatchType:
	default:
		writeError(w, r, unsupportedMediaType(ct))
		return
	}
	if errs := metav1validation.ValidatePatchOptions(opts, types.PatchType(ct)); len(errs) > 0 {
		writeError(w, r, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs))
		return
	}
	patch, err := readBody(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if ct == applyPatchType {
		s.apply(w, r, ns, name, patch, opts)
		return
	}
	manager := managerOrUserAgent(opts.FieldManager, r.UserAgent())
	var probe any
	if err := json.Unmarshal(patch, &probe); err != nil {
		writeError(w, r, syntaxError(patch, err))
		return
	}
	var jp jsonpatch.Patch
	if ct == jsonPatchType {
		if jp, err = jsonpatch.DecodePatch(patch); err != nil {
			writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid JSON patch: %v", err)))
			return
		}
	} else if _, ok := probe.(map[string]any); !ok {
		writeError(w, r, apierrors.NewBadRequest("a merge patch must be a JSON object"))
		return
	}
	uopts := &metav1.UpdateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager, FieldValidation: opts.FieldValidation}
	untracked := false
	var tracked runtime.Object // what the last attempt tried to store
	update := func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		if cur == nil {
			return nil, apierrors.NewNotFound(s.gr(), name)
		}
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
	out, _, err := s.storage.(registry.GracefulDeleter).Delete(r.Context(), ns, name, opts)
	if err != nil {
		writeError(w, r, err)
		return
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
	flusher, _ := w.(http.Flusher)
	format := wireJSON
	if out.proto {
		format = wireProto
		w.Header().Set("Content-Type", protobufType+";stream=watch")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	first := true
	// emit writes one event; false when the watch ends (an error event, or the client gone).
	emit := func(ev watch.Event) bool {
		obj := ev.Object
		// Storage's own object: the cache hands the same one to every watcher (etcd's watch
		// and a converting store make one per watcher, which then only takes room).
		shared := ev.Type != watch.Error && out.kind == outObject
		if ev.Type != watch.Error {
			switch {
			case out.kind == outTable && ev.Type == watch.Bookmark:
				obj = bookmarkTable(obj)
			case out.kind == outTable:
				t, err := out.transform(r, obj)
				if err != nil {
					obj = ErrorStatus(err)
					ev.Type = watch.Error
					break
				}
				if !first {
					t.(*metav1.Table).ColumnDefinitions = nil
				}
				first = false
				obj = t
			case out.kind == outPartialMetadata:
				if p, err := partialMetadata(obj); err == nil {
					obj = p
				}
			}
		}
		var frame []byte
		var err error
		if shared {
			var store any
			if s.cachedEncodings {
				store = s.storage
			}
			frame, err = objectEncodings.frame(store, format, ev.Type, obj)
		} else {
			frame, err = encodeEvent(format, ev.Type, obj)
		}
		if err != nil {
			return false
		}
		if _, err := w.Write(frame); err != nil {
			return false
		}
		return ev.Type != watch.Error
	}
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
			if !ok {
				return
			}
			// Write what is queued behind this event too, then flush once (a watcher
			// that falls behind catches up in fewer, larger writes).
			for n := 0; ; n++ {
				if !emit(ev) {
					if flusher != nil {
						flusher.Flush()
					}
					return
				}
				if n == 100 {
					break
				}
				more := false
				select {
				case ev, more = <-wi.ResultChan():
				default:
				}
				if !more {
					break
				}
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
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
