package policy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/informer"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// paramSyncWait is how long a request waits for a param informer's first list, as upstream.
const paramSyncWait = time.Second

// collectParams is upstream's CollectParams: the params a binding's paramRef selects (by
// name or selector, in paramRef.namespace or the request's namespace for a namespaced
// paramKind), [nil] when the policy has no paramKind or the binding no paramRef, nothing
// when none is found (and an error when parameterNotFoundAction is Deny).
func (p *core) collectParams(ctx context.Context, kind *admissionregv1.ParamKind, ref *admissionregv1.ParamRef, namespace string) ([]runtime.Object, error) {
	if kind == nil || ref == nil {
		return []runtime.Object{nil}, nil
	}
	gvr, namespaced, err := p.paramResource(kind)
	if err != nil {
		return nil, err
	}
	inf := informer.For[runtime.Object](p.cfg.Informers, gvr.GroupResource())
	ns := ""
	if namespaced {
		ns = namespace
		if ref.Namespace != "" {
			ns = ref.Namespace
		} else if ns == "" {
			return nil, errors.New("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
		}
	}
	wctx, cancel := context.WithTimeout(ctx, paramSyncWait)
	defer cancel()
	if inf.WaitForSync(wctx) != nil {
		return nil, fmt.Errorf("paramKind kind `%v` not yet synced to use for admission", kind.String())
	}
	var params []runtime.Object
	switch {
	case ref.Namespace != "" && !namespaced:
		return nil, errors.New("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
	case ref.Name != "":
		if ref.Selector != nil {
			return nil, errors.New("paramRef.name and paramRef.selector are mutually exclusive")
		}
		obj, err := p.getParam(ctx, inf, gvr.GroupResource(), ns, ref.Name)
		switch {
		case err == nil:
			params = []runtime.Object{obj}
		case !apierrors.IsNotFound(err):
			return nil, err
		}
	case ref.Selector != nil:
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return nil, err
		}
		params = selectParams(inf.List(ns), sel)
	default:
		return nil, errors.New("one of name or selector must be provided")
	}
	if len(params) == 0 && ref.ParameterNotFoundAction != nil && *ref.ParameterNotFoundAction == admissionregv1.DenyAction {
		return nil, errors.New("no params found for policy binding with `Deny` parameterNotFoundAction")
	}
	return params, nil
}

// paramResource is the served resource of a paramKind; none is upstream's configuration
// error.
func (p *core) paramResource(kind *admissionregv1.ParamKind) (schema.GroupVersionResource, bool, error) {
	gv, err := schema.ParseGroupVersion(kind.APIVersion)
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("failed to parse paramKind APIVersion: %w", err)
	}
	gvk := gv.WithKind(kind.Kind)
	if p.cfg.ParamResource != nil {
		if gvr, namespaced, ok := p.cfg.ParamResource(gvk); ok {
			return gvr, namespaced, nil
		}
	}
	return schema.GroupVersionResource{}, false, fmt.Errorf("failed to find resource referenced by paramKind: '%v'", gvk)
}

// getParam reads ns/name from the informer, else (a param created just before the request)
// directly.
func (p *core) getParam(ctx context.Context, inf *informer.Informer[runtime.Object], gr schema.GroupResource, ns, name string) (runtime.Object, error) {
	if obj, ok := inf.Get(ns, name); ok {
		return obj, nil
	}
	if p.cfg.GetParam != nil {
		return p.cfg.GetParam(ctx, gr, ns, name)
	}
	return nil, apierrors.NewNotFound(gr, name)
}

// selectParams are the objects whose labels sel matches.
func selectParams(objs []runtime.Object, sel labels.Selector) []runtime.Object {
	var out []runtime.Object
	for _, o := range objs {
		if m, ok := o.(metav1.Object); ok && sel.Matches(labels.Set(m.GetLabels())) {
			out = append(out, o)
		}
	}
	return out
}

// withTypeMeta gives a param without apiVersion and kind (a built-in object as cached) the
// paramKind's, as upstream's wrappedParam does, so that CEL sees params.apiVersion/kind.
func withTypeMeta(param runtime.Object, kind *admissionregv1.ParamKind) runtime.Object {
	if param == nil || kind == nil || !param.GetObjectKind().GroupVersionKind().Empty() {
		return param
	}
	return &wrappedParam{TypeMeta: metav1.TypeMeta{APIVersion: kind.APIVersion, Kind: kind.Kind}, nested: param}
}

type wrappedParam struct {
	metav1.TypeMeta
	nested runtime.Object
}

// ToUnstructured is what CEL reads: the param with the TypeMeta.
func (w *wrappedParam) ToUnstructured() any {
	res, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w.nested)
	if err != nil {
		return nil
	}
	res["apiVersion"], res["kind"] = w.APIVersion, w.Kind
	return res
}

func (w *wrappedParam) DeepCopyObject() runtime.Object {
	return &wrappedParam{TypeMeta: w.TypeMeta, nested: w.nested.DeepCopyObject()}
}

func (w *wrappedParam) GetObjectKind() schema.ObjectKind { return w }
