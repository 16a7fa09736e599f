package endpoints

import (
	"net/http"
	"slices"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
)

// Router is the go-restful route selector for the installed API: a tree of path segments built
// once from the container's routes. go-restful's CurlyRouter instead tokenizes every route of
// the matching web service on each request, then scores and sorts the candidates: under load
// that was a tenth of all the memory the process allocated. Every route the Installer adds is
// literal segments and {param} segments, which is all this router knows; it answers like
// CurlyRouter does (literal segments before parameters, 404 for an unknown path, 405 with Allow
// for a known path and another method).
type Router struct {
	root   *segment
	params map[*restful.Route][]pathParam // where each route's parameters are
}

type segment struct {
	literal  map[string]*segment
	wildcard *segment          // a {param} segment
	rest     *segment          // a last {param:*} segment: one or more segments
	routes   map[string]target // by method, at a route's last segment
	methods  []string          // of routes, for 405
}

type target struct {
	ws    *restful.WebService
	route *restful.Route
}

type pathParam struct {
	index int
	name  string
	rest  bool // {name:*}: the segments from index on, joined by "/"
}

// NewRouter builds a router for the routes of services. A parameter {name:*} as a route's last
// segment matches the rest of the path (one or more segments); other routes with regular
// expressions or wildcards in their parameters are not supported: it panics on one, at start-up.
func NewRouter(services []*restful.WebService) *Router {
	r := &Router{root: &segment{}, params: map[*restful.Route][]pathParam{}}
	for _, ws := range services {
		routes := ws.Routes()
		for i := range routes {
			r.add(ws, &routes[i])
		}
	}
	return r
}

func (r *Router) add(ws *restful.WebService, route *restful.Route) {
	s := r.root
	var ps []pathParam
	toks := splitPath(route.Path)
	for i, tok := range toks {
		if strings.HasPrefix(tok, "{") {
			name := strings.TrimSuffix(strings.TrimPrefix(tok, "{"), "}")
			if rest, ok := strings.CutSuffix(name, ":*"); ok && i == len(toks)-1 && !strings.ContainsAny(rest, ":*") {
				ps = append(ps, pathParam{index: i, name: rest, rest: true})
				if s.rest == nil {
					s.rest = &segment{}
				}
				s = s.rest
				continue
			}
			if strings.ContainsAny(name, ":*") {
				panic("endpoints: router does not support the route " + route.Path)
			}
			ps = append(ps, pathParam{index: i, name: name})
			if s.wildcard == nil {
				s.wildcard = &segment{}
			}
			s = s.wildcard
			continue
		}
		if s.literal == nil {
			s.literal = map[string]*segment{}
		}
		next := s.literal[tok]
		if next == nil {
			next = &segment{}
			s.literal[tok] = next
		}
		s = next
	}
	if s.routes == nil {
		s.routes = map[string]target{}
	}
	if _, dup := s.routes[route.Method]; !dup {
		s.routes[route.Method] = target{ws, route}
		s.methods = append(s.methods, route.Method)
	}
	r.params[route] = ps
}

// splitPath splits a path into segments as go-restful does (outer slashes trimmed).
func splitPath(p string) []string {
	if p == "/" {
		return nil
	}
	return strings.Split(strings.Trim(p, "/"), "/")
}

// SelectRoute implements restful.RouteSelector.
func (r *Router) SelectRoute(services []*restful.WebService, req *http.Request) (*restful.WebService, *restful.Route, error) {
	var allow []string
	t, ok := r.root.match(splitPath(req.URL.Path), req.Method, &allow)
	switch {
	case ok:
		return t.ws, t.route, nil
	case len(allow) > 0:
		return nil, nil, restful.NewErrorWithHeader(http.StatusMethodNotAllowed, "405: Method Not Allowed", http.Header{"Allow": {strings.Join(allow, ", ")}})
	}
	return nil, nil, restful.NewError(http.StatusNotFound, "404: Page Not Found")
}

// match finds the route for method at the end of toks, literal segments first. Paths that
// exist only for other methods add those to allow.
func (s *segment) match(toks []string, method string, allow *[]string) (target, bool) {
	if len(toks) == 0 {
		if t, ok := s.routes[method]; ok {
			return t, true
		}
		for _, m := range s.methods {
			if !slices.Contains(*allow, m) {
				*allow = append(*allow, m)
			}
		}
		return target{}, false
	}
	if next := s.literal[toks[0]]; next != nil {
		if t, ok := next.match(toks[1:], method, allow); ok {
			return t, true
		}
	}
	if s.wildcard != nil {
		if t, ok := s.wildcard.match(toks[1:], method, allow); ok {
			return t, true
		}
	}
	if s.rest != nil {
		return s.rest.match(nil, method, allow)
	}
	return target{}, false
}

// ExtractParameters implements restful.PathProcessor for the routes SelectRoute returns.
func (r *Router) ExtractParameters(route *restful.Route, _ *restful.WebService, urlPath string) map[string]string {
	ps := r.params[route]
	if len(ps) == 0 {
		return nil
	}
	toks := splitPath(urlPath)
	out := make(map[string]string, len(ps))
	for _, p := range ps {
		switch {
		case p.rest && p.index < len(toks):
			out[p.name] = strings.Join(toks[p.index:], "/")
		case p.index < len(toks):
			out[p.name] = toks[p.index]
		}
	}
	return out
}
