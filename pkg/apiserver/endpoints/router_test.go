package endpoints_test

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/hacp/hacp/pkg/apiserver/endpoints"
)

// routeShapes builds web services with the route shapes the Installer makes: cluster-scoped
// and namespaced collections and items, watch paths, subresources, and a cluster-scoped kind
// (namespaces) whose item path overlaps the namespaced collections. Each handler records what
// it was called for in *last.
func routeShapes(last *selection) []*restful.WebService {
	record := func(req *restful.Request, _ *restful.Response) {
		*last = selection{route: req.SelectedRoute().Method() + " " + req.SelectedRoute().Path(), params: req.PathParameters()}
	}
	add := func(ws *restful.WebService, method, path string) {
		ws.Route(ws.Method(method).Path(path).To(record))
	}
	core := new(restful.WebService).Path("/api/v1")
	apps := new(restful.WebService).Path("/apis/apps/v1")
	for _, r := range []struct {
		ws         *restful.WebService
		plural     string
		namespaced bool
		subs       []string
	}{
		{core, "namespaces", false, []string{"status", "finalize"}},
		{core, "nodes", false, []string{"status"}},
		{core, "configmaps", true, nil},
		{core, "pods", true, []string{"status", "binding", "proxy"}},
		{apps, "deployments", true, []string{"status", "scale"}},
	} {
		coll, watch := "/"+r.plural, "/watch/"+r.plural
		if r.namespaced {
			add(r.ws, "GET", "/"+r.plural)
			add(r.ws, "GET", "/watch/"+r.plural)
			coll, watch = "/namespaces/{namespace}/"+r.plural, "/watch/namespaces/{namespace}/"+r.plural
		}
		add(r.ws, "GET", coll)
		add(r.ws, "POST", coll)
		add(r.ws, "DELETE", coll)
		add(r.ws, "GET", watch)
		add(r.ws, "GET", watch+"/{name}")
		for _, m := range []string{"GET", "PUT", "PATCH", "DELETE"} {
			add(r.ws, m, coll+"/{name}")
		}
		for _, sub := range r.subs {
			if sub == "binding" {
				add(r.ws, "POST", coll+"/{name}/"+sub)
				continue
			}
			if sub == "proxy" { // a proxy-type subresource: a path after it
				for _, m := range []string{"GET", "POST"} {
					add(r.ws, m, coll+"/{name}/"+sub)
					add(r.ws, m, coll+"/{name}/"+sub+"/{path:*}")
				}
				continue
			}
			for _, m := range []string{"GET", "PUT", "PATCH"} {
				add(r.ws, m, coll+"/{name}/"+sub)
			}
		}
	}
	// Not a shape the Installer makes: a literal segment beside a parameter, to pin down
	// precedence (the literal) and falling back to the parameter for another method.
	x := new(restful.WebService).Path("/apis/x/v1")
	add(x, "GET", "/things/{name}")
	add(x, "GET", "/things/special")
	add(x, "GET", "/things/special/sub")
	add(x, "PUT", "/things/{name}/sub")
	return []*restful.WebService{core, apps, x}
}

// selection is what a container did with one request.
type selection struct {
	code   int
	route  string
	allow  []string
	params map[string]string
}

func serve(c *restful.Container, last *selection, method, path string) selection {
	*last = selection{}
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	got := *last
	got.code = rec.Code
	if a := rec.Header().Get("Allow"); a != "" {
		got.allow = strings.Split(a, ", ")
		slices.Sort(got.allow)
	}
	if len(got.params) == 0 {
		got.params = nil
	}
	return got
}

// The Router picks what go-restful's CurlyRouter picks, with the same path parameters, for
// every route and for paths and methods that match nothing.
func TestRouterAgreesWithCurlyRouter(t *testing.T) {
	var lastCurly, lastOurs selection
	curly := restful.NewContainer()
	curly.Router(restful.CurlyRouter{})
	for _, ws := range routeShapes(&lastCurly) {
		curly.Add(ws)
	}
	ours := restful.NewContainer()
	services := routeShapes(&lastOurs)
	for _, ws := range services {
		ours.Add(ws)
	}
	ours.Router(endpoints.NewRouter(ours.RegisteredWebServices()))

	var paths []string
	for _, ws := range services {
		for _, r := range ws.Routes() {
			p := strings.NewReplacer("{namespace}", "default", "{name}", "status").Replace(r.Path)
			paths = append(paths, p, p+"/", p+"/extra", strings.Replace(p, "default", "watch", 1))
		}
	}
	paths = append(paths, "/", "/api", "/api/v1", "/api/v1/widgets", "/apis/apps/v1/namespaces/default/configmaps",
		"/api/v1/namespaces/default/pods/p/proxy/a/b/c", "/api/v1/namespaces/default/pods/p/proxy/a/b/", "/api/v1/namespaces/default/pods/p/proxy/status",
		"/api/v1/namespaces/default/pods/p/status/x", "/api/v1/namespaces//configmaps", "/apis/nope/v1/things")
	routed := 0
	for _, p := range paths {
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"} {
			want := serve(curly, &lastCurly, m, p)
			got := serve(ours, &lastOurs, m, p)
			if got.code != want.code || got.route != want.route || !slices.Equal(got.allow, want.allow) || !mapsEqual(got.params, want.params) {
				t.Errorf("%s %s: Router %+v, CurlyRouter %+v", m, p, got, want)
			}
			if got.route != "" {
				routed++
			}
		}
	}
	if routed < 100 {
		t.Fatalf("only %d requests were routed: the table does not cover the routes", routed)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestRouterRefusesPatterns(t *testing.T) {
	ws := new(restful.WebService).Path("/x")
	ws.Route(ws.GET("/{path:*}/more").To(func(*restful.Request, *restful.Response) {})) // a rest parameter that is not last
	defer func() {
		if recover() == nil {
			t.Fatal("a wildcard route was accepted")
		}
	}()
	endpoints.NewRouter([]*restful.WebService{ws})
}
