package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/hacp/hacp/internal/version"
	"github.com/hacp/hacp/pkg/apiserver/audit"
	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
	"github.com/hacp/hacp/pkg/apiserver/endpoints"
	"github.com/hacp/hacp/pkg/apiserver/flowcontrol"
	"github.com/hacp/hacp/pkg/apiserver/openapi"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiversion "k8s.io/apimachinery/pkg/version"
)

// Resources lists what the registry serves, for the installer, discovery and OpenAPI.
func Resources(reg *controlplane.Registry) []endpoints.Resource {
	var out []endpoints.Resource
	for _, r := range reg.Resources {
		out = append(out, endpoints.Resource{Names: r.Store.Names(), Storage: r.Store, Subresources: r.Subresources})
	}
	return append(out, viewResources(reg.Views)...)
}

// viewResources lists served resources with no storage of their own (the registry's views,
// authz's access reviews) for the installer, discovery and OpenAPI.
func viewResources(views []*registry.View) []endpoints.Resource {
	var out []endpoints.Resource
	for _, v := range views {
		out = append(out, endpoints.Resource{Names: &v.Names, Storage: v.Storage, Subresources: v.Subresources})
	}
	return out
}

// OpenAPIResources describes the served resources for the OpenAPI documents.
func OpenAPIResources(res []endpoints.Resource) []openapi.Resource {
	var out []openapi.Resource
	for _, r := range res {
		o := openapi.Resource{
			Group: r.Names.Group, Version: r.Names.Version, Kind: r.Names.Kind, ListKind: r.Names.ListKind,
			Plural: r.Names.Plural, Namespaced: r.Names.Namespaced, Verbs: endpoints.Verbs(r.Storage),
			Object: r.Storage.New(),
		}
		if l, ok := r.Storage.(registry.Lister); ok {
			o.List = l.NewList()
		}
		if d, ok := r.Storage.(interface{ Definition() *registry.Kind }); ok {
			o.Schema = d.Definition().OpenAPISchema // a custom resource's
		}
		for s, st := range r.Subresources {
			if _, proxy := st.(registry.Connecter); proxy {
				continue // upstream's OpenAPI describes these with connect operations; hacp does not serve them
			}
			o.Subresources = append(o.Subresources, s)
		}
		sort.Strings(o.Subresources)
		out = append(out, o)
	}
	return out
}

// VersionInfo is what /version reports.
func VersionInfo() apiversion.Info {
	return apiversion.Info{
		Major: version.KubernetesMajor, Minor: version.KubernetesMinor,
		EmulationMajor: version.KubernetesMajor, EmulationMinor: version.KubernetesMinor,
		MinCompatibilityMajor: version.KubernetesMajor, MinCompatibilityMinor: version.KubernetesMinCompatibilityMinor,
		GitVersion:   "v" + version.KubernetesMajor + "." + version.KubernetesMinor + ".0",
		GitCommit:    version.Version,
		GitTreeState: "clean",
		BuildDate:    "1970-01-01T00:00:00Z",
		GoVersion:    runtime.Version(),
		Compiler:     runtime.Compiler,
		Platform:     runtime.GOOS + "/" + runtime.GOARCH,
	}
}

func (s *Server) buildHandler() (http.Handler, error) {
	res := Resources(s.registry)
	res = append(res, s.authnResources()...)
	res = append(res, viewResources(s.authz.Reviews())...)
	spec, err := openapi.New(OpenAPIResources(res))
	if err != nil {
		return nil, fmt.Errorf("apiserver: openapi: %w", err)
	}
	api := &apiHandler{openapi: openapi.NewService(spec), log: s.log}
	agg, err := s.newAggregator(res)
	if err != nil {
		return nil, err
	}
	s.aggregator = agg
	// The routes, discovery and OpenAPI documents are built again whenever the custom
	// resources served change, and swapped in while serving.
	s.registry.OnCustomResourcesChange(func() { api.rebuild(s.registry, res, s.watchStop); agg.LocalChanged() })
	api.rebuild(s.registry, res, s.watchStop)

	mux := http.NewServeMux()
	mux.Handle("/openapi/", agg.Wrap(api.openapi))
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(VersionInfo())
	})
	health := s.healthHandlers()
	for _, p := range []string{"/livez", "/readyz", "/healthz"} {
		mux.Handle("GET "+p, health)
		mux.Handle("GET "+p+"/", health)
	}
	s.installAuthn(mux)
	mux.Handle("GET /metrics", s.metrics.Handler())
	if s.cfg.Profiling {
		installProfiling(mux, s.cfg.ContentionProfiling)
	}
	if s.flowControl != nil { // as upstream, with API Priority and Fairness on
		mux.Handle("GET "+flowcontrol.DebugPrefix, s.flowControl.DebugHandler())
	}
	mux.Handle("/", agg.Wrap(api))
	var h http.Handler = withWarnings(mux)
	h = withTimeout(h, s.cfg.RequestTimeout)
	h = s.authorize(h)
	// As upstream, APF or else the max-in-flight limit comes after impersonation and before
	// authorization.
	if s.flowControl != nil {
		h = s.flowControl.Handler(h)
	} else {
		h = limitInflight(h, s.cfg.MaxRequestsInflight, s.cfg.MaxMutatingRequestsInflight)
	}
	h = s.impersonate(h)
	h = s.auditor.WithAudit(h)
	h = s.authenticate(h, s.auditor.WithFailedAuthentication(http.HandlerFunc(unauthorized)))
	h = s.metrics.instrument(h)
	return withGrownStack(recoverPanics(audit.WithAuditID(withRequestInfo(h)))), nil
}

// apiHandler serves the API routes, discovery and OpenAPI documents of the resources served
// now: the built-in ones and those of the established CustomResourceDefinitions.
type apiHandler struct {
	mu      sync.Mutex // serialises rebuilds
	current atomic.Pointer[http.Handler]
	openapi *openapi.Service
	log     *slog.Logger
	// hadCustom: the OpenAPI documents describe custom resources.
	hadCustom bool
	// openapiPending are the resources of a change the OpenAPI documents do not show yet;
	// openapiBuilding: a goroutine builds them.
	openapiPending  []endpoints.Resource
	openapiBuilding bool
	// staticRoutes are the route sets of the static resources, by group-version path, built
	// once: a change of custom resources reinstalls the routes of their group-versions only
	// (compiling some 70 resources' routes again was most of a rebuild).
	staticRoutes map[string]*restful.WebService
}

// rebuild installs the routes, discovery and OpenAPI documents of static and of the custom
// resources served now.
func (a *apiHandler) rebuild(reg *controlplane.Registry, static []endpoints.Resource, stop func() <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	res := slices.Clip(static)
	custom := reg.CustomResources()
	for _, r := range custom {
		res = append(res, endpoints.Resource{Names: r.Store.Names(), Storage: r.Store, Subresources: r.Subresources})
	}
	installer := &endpoints.Installer{Stop: stop}
	if a.staticRoutes == nil {
		c := restful.NewContainer()
		installer.Install(c, static)
		a.staticRoutes = map[string]*restful.WebService{}
		for _, ws := range c.RegisteredWebServices() {
			a.staticRoutes[ws.RootPath()] = ws
		}
	}
	// The custom resources' group-versions are installed afresh, with the static resources
	// that share one (a definition may add a version to a built-in group); the others'
	// routes are reused.
	fresh := slices.Clone(res[len(static):])
	customGV := map[string]bool{}
	for _, r := range fresh {
		customGV[endpoints.GroupVersionPath(r.Names.GroupVersion())] = true
	}
	container := restful.NewContainer()
	container.ServiceErrorHandler(endpoints.NotFoundHandler)
	container.DoNotRecover(true)
	for _, path := range slices.Sorted(maps.Keys(a.staticRoutes)) {
		if !customGV[path] {
			container.Add(a.staticRoutes[path])
		}
	}
	for _, r := range static {
		if customGV[endpoints.GroupVersionPath(r.Names.GroupVersion())] {
			fresh = append(fresh, r)
		}
	}
	installer.Install(container, fresh)
	container.ServeMux.Handle("/", http.HandlerFunc(endpoints.NotFound))
	mux := http.NewServeMux()
	disc := endpoints.NewDiscovery(res)
	disc.Precompute()
	disc.Install(mux)
	mux.Handle("/", container)
	var h http.Handler = mux
	a.current.Store(&h)
	// The OpenAPI documents after the routes, in the background: building them is the slow
	// part; changes meanwhile are coalesced into one more build.
	if len(custom) > 0 || a.hadCustom {
		a.hadCustom = len(custom) > 0
		a.openapiPending = res
		if !a.openapiBuilding {
			a.openapiBuilding = true
			go a.buildOpenAPI()
		}
	}
}

// buildOpenAPI builds the OpenAPI documents for the latest resources until none are pending.
func (a *apiHandler) buildOpenAPI() {
	for {
		a.mu.Lock()
		res := a.openapiPending
		a.openapiPending = nil
		if res == nil {
			a.openapiBuilding = false
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
		spec, err := openapi.New(OpenAPIResources(res))
		if err != nil {
			a.log.Error("openapi documents not rebuilt for the custom resources", "err", err)
			continue
		}
		a.openapi.Update(spec)
	}
}

func (a *apiHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*a.current.Load()).ServeHTTP(w, r)
}

// publicPath reports the health and version paths, which the in-flight limit does not
// count. (Who may read them is RBAC's: system:public-info-viewer, bound to everyone.)
func publicPath(p string) bool {
	switch {
	case p == "/version", p == "/livez", p == "/readyz", p == "/healthz":
		return true
	case strings.HasPrefix(p, "/livez/"), strings.HasPrefix(p, "/readyz/"), strings.HasPrefix(p, "/healthz/"):
		return true
	}
	return false
}

func recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				fmt.Printf("apiserver: panic serving %s %s: %v\n%s", r.Method, r.URL.Path, v, debug.Stack())
				endpoints.WriteStatusError(w, r, apierrors.NewInternalError(fmt.Errorf("%v", v)))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

type check struct {
	name string
	fn   func(ctx context.Context) error
}

func (s *Server) healthHandlers() http.Handler {
	var mu sync.Mutex
	var lastAt time.Time
	var lastErr error
	etcdCheck := func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(lastAt) < 500*time.Millisecond {
			return lastErr
		}
		lastErr = embedetcd.Healthy(ctx, s.client)
		lastAt = time.Now()
		return lastErr
	}
	ping := check{"ping", func(context.Context) error { return nil }}
	etcd := check{"etcd", etcdCheck}
	shutdown := check{"shutdown", func(context.Context) error {
		if s.draining.Load() {
			return fmt.Errorf("server is shutting down")
		}
		return nil
	}}
	// As kube-apiserver's: every shared informer has its first list.
	informerSync := check{"informer-sync", func(context.Context) error { return s.registry.Informers().Synced() }}
	sets := map[string][]check{
		"/livez":   {ping},
		"/readyz":  {ping, etcd, informerSync, shutdown},
		"/healthz": {ping, etcd, shutdown},
	}
	if s.encryption.HasKMS() { // as kube-apiserver: a KMS plugin that fails its status check
		kms := check{"kms-providers", func(context.Context) error { return s.encryption.KMSHealthy() }}
		sets["/readyz"] = append(sets["/readyz"], kms)
		sets["/healthz"] = append(sets["/healthz"], kms)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		base, only, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		checks := sets["/"+base]
		if only != "" {
			var picked []check
			for _, c := range checks {
				if c.name == only {
					picked = append(picked, c)
				}
			}
			if len(picked) == 0 {
				http.Error(w, "404 page not found", http.StatusNotFound)
				return
			}
			checks = picked
		}
		exclude := map[string]bool{}
		for _, e := range r.URL.Query()["exclude"] {
			exclude[e] = true
		}
		var b strings.Builder
		failed := false
		for _, c := range checks {
			if exclude[c.name] {
				fmt.Fprintf(&b, "[+]%s excluded: ok\n", c.name)
				continue
			}
			if err := c.fn(r.Context()); err != nil {
				failed = true
				fmt.Fprintf(&b, "[-]%s failed: %v\n", c.name, err)
			} else {
				fmt.Fprintf(&b, "[+]%s ok\n", c.name)
			}
		}
		_, verbose := r.URL.Query()["verbose"]
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if failed {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "%s%s check failed\n", b.String(), base)
			return
		}
		if verbose {
			fmt.Fprintf(w, "%s%s check passed\n", b.String(), base)
			return
		}
		fmt.Fprint(w, "ok")
	})
}
