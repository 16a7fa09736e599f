package endpoints

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/tableconvert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource is one resource to serve: its main storage and its subresources.
type Resource struct {
	Names        *registry.Names
	Storage      registry.Storage
	Subresources map[string]registry.Storage
}

// Verbs lists the verbs a storage implements, in upstream's order.
func Verbs(s registry.Storage) []string {
	var v []string
	if _, ok := s.(registry.Creater); ok {
		v = append(v, "create")
	}
	if _, ok := s.(registry.GracefulDeleter); ok {
		v = append(v, "delete")
	}
	if _, ok := s.(registry.CollectionDeleter); ok {
		v = append(v, "deletecollection")
	}
	if _, ok := s.(registry.Getter); ok {
		v = append(v, "get")
	}
	if _, ok := s.(registry.Lister); ok {
		v = append(v, "list")
	}
	if _, ok := s.(registry.Updater); ok {
		v = append(v, "patch", "update")
	}
	if _, ok := s.(registry.Watcher); ok {
		v = append(v, "watch")
	}
	if c, ok := s.(registry.Connecter); ok {
		return connectVerbs(c.ConnectMethods())
	}
	return v
}

// connectVerbs are the verbs of a proxy-type subresource's methods, in upstream's order.
func connectVerbs(methods []string) []string {
	byMethod := map[string]string{http.MethodPost: "create", http.MethodDelete: "delete", http.MethodGet: "get", http.MethodPatch: "patch", http.MethodPut: "update"}
	var v []string
	for _, verb := range []string{"create", "delete", "get", "patch", "update"} {
		for _, m := range methods {
			if byMethod[m] == verb {
				v = append(v, verb)
			}
		}
	}
	return v
}

// GroupVersionPath is /api/v1 for the core group and /apis/{g}/{v} otherwise.
func GroupVersionPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

// Installer registers routes for resources on a go-restful container.
type Installer struct {
	// Stop returns a channel whose closing ends every watch open at the
	// time of the call (graceful shutdown); nil means watches end only
	// with their request.
	Stop func() <-chan struct{}
}

// Install adds one WebService per group-version serving resources, and routes the container
// with a Router for them.
func (in *Installer) Install(c *restful.Container, resources []Resource) {
	byGV := map[schema.GroupVersion][]Resource{}
	for _, r := range resources {
		byGV[r.Names.GroupVersion()] = append(byGV[r.Names.GroupVersion()], r)
	}
	gvs := make([]schema.GroupVersion, 0, len(byGV))
	for gv := range byGV {
		gvs = append(gvs, gv)
	}
	sort.Slice(gvs, func(i, j int) bool { return gvs[i].String() < gvs[j].String() })
	for _, gv := range gvs {
		ws := new(restful.WebService).Path(GroupVersionPath(gv)).Produces(restful.MIME_JSON, "*/*")
		for _, r := range byGV[gv] {
			in.installResource(ws, r)
		}
		c.Add(ws)
	}
	c.Router(NewRouter(c.RegisteredWebServices()))
}

func param(req *restful.Request, name string) string { return req.PathParameter(name) }

func (in *Installer) installResource(ws *restful.WebService, r Resource) {
	_, unstructuredKind := r.Storage.New().(*unstructured.Unstructured)
	main := &scope{names: r.Names, storage: r.Storage, kind: r.Storage.Kind(), namespaced: r.Names.Namespaced, typed: !unstructuredKind, stop: in.Stop,
		cachedEncodings: cachedEncodings(r.Storage)}
	rt := &resourceRouter{ws: ws, printer: customPrinter(r.Storage)}
	p := pathsOf(r.Names)
	installVerbs(rt, main, r, p)
	subs := make([]string, 0, len(r.Subresources))
	for name := range r.Subresources {
		subs = append(subs, name)
	}
	sort.Strings(subs)
	for _, name := range subs {
		st := r.Subresources[name]
		sub := &scope{names: r.Names, storage: st, kind: st.Kind(), subresource: name, namespaced: r.Names.Namespaced, typed: main.typed, stop: in.Stop, parent: r.Storage}
		installSubresource(rt, sub, p.item+"/"+name)
	}
}

// resourceRouter adds one resource's routes to its group-version's WebService.
type resourceRouter struct {
	ws      *restful.WebService
	printer *tableconvert.Printer // a custom resource's own columns (customPrinter); nil for the default
}

func (rt *resourceRouter) route(method, path string, h func(w http.ResponseWriter, req *restful.Request)) {
	rt.ws.Route(rt.ws.Method(method).Path(path).Produces("*/*").To(func(req *restful.Request, resp *restful.Response) {
		if rt.printer != nil {
			req.Request = req.Request.WithContext(context.WithValue(req.Request.Context(), printerKey{}, rt.printer))
		}
		h(resp.ResponseWriter, req)
	}).Operation(method + " " + path))
}

// resourcePaths are a resource's route paths under its group-version.
type resourcePaths struct {
	coll, item, watchColl, watchItem string
}

func pathsOf(n *registry.Names) resourcePaths {
	if n.Namespaced {
		coll := "/namespaces/{namespace}/" + n.Plural
		watchColl := "/watch/namespaces/{namespace}/" + n.Plural
		return resourcePaths{coll: coll, item: coll + "/{name}", watchColl: watchColl, watchItem: watchColl + "/{name}"}
	}
	coll := "/" + n.Plural
	watchColl := "/watch/" + n.Plural
	return resourcePaths{coll: coll, item: coll + "/{name}", watchColl: watchColl, watchItem: watchColl + "/{name}"}
}

func namespaceParam(req *restful.Request) string { return param(req, "namespace") }

// installVerbs routes the verbs r's storage implements (Verbs) to main.
func installVerbs(rt *resourceRouter, main *scope, r Resource, p resourcePaths) {
	verbs := Verbs(r.Storage)
	has := func(v string) bool { return slices.Contains(verbs, v) }
	plural := r.Names.Plural
	ns := namespaceParam
	if has("list") {
		rt.route("GET", p.coll, func(w http.ResponseWriter, req *restful.Request) { main.list(w, req.Request, ns(req), false) })
		if r.Names.Namespaced {
			rt.route("GET", "/"+plural, func(w http.ResponseWriter, req *restful.Request) { main.list(w, req.Request, "", false) })
		}
	}
	if has("watch") {
		rt.route("GET", p.watchColl, func(w http.ResponseWriter, req *restful.Request) { main.list(w, req.Request, ns(req), true) })
		rt.route("GET", p.watchItem, func(w http.ResponseWriter, req *restful.Request) {
			q := req.Request.URL.Query()
			q.Set("fieldSelector", "metadata.name="+param(req, "name"))
			req.Request.URL.RawQuery = q.Encode()
			main.list(w, req.Request, ns(req), true)
		})
		if r.Names.Namespaced {
			rt.route("GET", "/watch/"+plural, func(w http.ResponseWriter, req *restful.Request) { main.list(w, req.Request, "", true) })
		}
	}
	if has("create") {
		rt.route("POST", p.coll, func(w http.ResponseWriter, req *restful.Request) { main.create(w, req.Request, ns(req), "") })
	}
	if has("deletecollection") {
		rt.route("DELETE", p.coll, func(w http.ResponseWriter, req *restful.Request) { main.deleteCollection(w, req.Request, ns(req)) })
	}
	if has("get") {
		rt.route("GET", p.item, func(w http.ResponseWriter, req *restful.Request) {
			main.get(w, req.Request, ns(req), param(req, "name"))
		})
	}
	if has("update") {
		rt.route("PUT", p.item, func(w http.ResponseWriter, req *restful.Request) {
			main.update(w, req.Request, ns(req), param(req, "name"))
		})
		rt.route("PATCH", p.item, func(w http.ResponseWriter, req *restful.Request) {
			main.patch(w, req.Request, ns(req), param(req, "name"))
		})
	}
	if has("delete") {
		rt.route("DELETE", p.item, func(w http.ResponseWriter, req *restful.Request) {
			main.delete(w, req.Request, ns(req), param(req, "name"))
		})
	}
}

// installSubresource routes a subresource at path: a proxy-type one (Connecter) under its
// methods, otherwise get, update, patch and create as its storage implements them.
func installSubresource(rt *resourceRouter, sub *scope, path string) {
	ns := namespaceParam
	st := sub.storage
	if c, ok := st.(registry.Connecter); ok {
		for _, m := range c.ConnectMethods() {
			for _, p := range []string{path, path + "/{path:*}"} {
				rt.route(m, p, func(w http.ResponseWriter, req *restful.Request) {
					connect(w, req, c)
				})
			}
		}
		return
	}
	if _, ok := st.(registry.Getter); ok {
		rt.route("GET", path, func(w http.ResponseWriter, req *restful.Request) {
			sub.get(w, req.Request, ns(req), param(req, "name"))
		})
	}
	if _, ok := st.(registry.Updater); ok {
		rt.route("PUT", path, func(w http.ResponseWriter, req *restful.Request) {
			sub.update(w, req.Request, ns(req), param(req, "name"))
		})
		rt.route("PATCH", path, func(w http.ResponseWriter, req *restful.Request) {
			sub.patch(w, req.Request, ns(req), param(req, "name"))
		})
	}
	if _, ok := st.(registry.Creater); ok {
		rt.route("POST", path, func(w http.ResponseWriter, req *restful.Request) {
			sub.create(w, req.Request, ns(req), param(req, "name"))
		})
	}
}

// connect serves a request to a proxy-type subresource with the handler its storage builds.
func connect(w http.ResponseWriter, req *restful.Request, c registry.Connecter) {
	path := param(req, "path")
	if path != "" && strings.HasSuffix(req.Request.URL.Path, "/") {
		path += "/" // the router drops it; a proxied path keeps it
	}
	r := req.Request
	h, err := c.Connect(r.Context(), param(req, "namespace"), param(req, "name"), path, r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	h.ServeHTTP(w, r)
}

// printerKey is the request context key of a custom resource's Table printer.
type printerKey struct{}

// customPrinter is the Table printer of a custom resource's additionalPrinterColumns (Age
// when it has none, as upstream), or nil for other storages.
func customPrinter(st registry.Storage) *tableconvert.Printer {
	d, ok := st.(interface{ Definition() *registry.Kind })
	if !ok {
		return nil
	}
	if _, custom := st.New().(*unstructured.Unstructured); !custom {
		return nil
	}
	cols := []tableconvert.Column{{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"}}
	if pc := d.Definition().PrinterColumns; len(pc) > 0 {
		cols = cols[:0]
		for _, c := range pc {
			cols = append(cols, tableconvert.Column{Name: c.Name, Type: c.Type, Format: c.Format, Description: c.Description, Priority: c.Priority, JSONPath: c.JSONPath})
		}
	}
	p, err := tableconvert.NewPrinter(cols)
	if err != nil {
		return nil // the definition's validation refused it; NAME and AGE then
	}
	return p
}

// NotFoundHandler answers unknown paths and methods with upstream's Status.
func NotFoundHandler(err restful.ServiceError, req *restful.Request, resp *restful.Response) {
	switch err.Code {
	case http.StatusMethodNotAllowed:
		writeError(resp.ResponseWriter, req.Request, &apierrors.StatusError{ErrStatus: statusFor(http.StatusMethodNotAllowed, "MethodNotAllowed", "the server does not allow this method on the requested resource")})
	case http.StatusNotAcceptable:
		writeError(resp.ResponseWriter, req.Request, &apierrors.StatusError{ErrStatus: statusFor(http.StatusNotAcceptable, "NotAcceptable", "the requested media type is not supported")})
	case http.StatusUnsupportedMediaType:
		writeError(resp.ResponseWriter, req.Request, unsupportedMediaType(req.HeaderParameter("Content-Type")))
	default:
		NotFound(resp.ResponseWriter, req.Request)
	}
}

// NotFound answers a path nothing serves with upstream's 404 Status.
func NotFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, &apierrors.StatusError{ErrStatus: statusFor(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")})
}
