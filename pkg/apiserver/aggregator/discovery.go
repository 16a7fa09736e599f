package aggregator

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

// extGroup is one API group served by extension servers, with its available versions in
// discovery order.
type extGroup struct {
	name     string
	priority int32
	versions []*backend
}

// extGroups returns the groups of the available service-backed APIServices, ordered as
// upstream orders them: higher groupPriorityMinimum first, then by name; versions by
// versionPriority, then the Kubernetes version order.
func (a *Aggregator) extGroups() []*extGroup {
	byName := map[string]*extGroup{}
	for _, b := range a.view.Load().byGV {
		if !b.available.Load() {
			continue
		}
		g := byName[b.gv.Group]
		if g == nil {
			g = &extGroup{name: b.gv.Group}
			byName[b.gv.Group] = g
		}
		g.priority = max(g.priority, b.spec.GroupPriorityMinimum)
		g.versions = append(g.versions, b)
	}
	out := make([]*extGroup, 0, len(byName))
	for _, g := range byName {
		sort.Slice(g.versions, func(i, j int) bool {
			vi, vj := g.versions[i], g.versions[j]
			if vi.spec.VersionPriority != vj.spec.VersionPriority {
				return vi.spec.VersionPriority > vj.spec.VersionPriority
			}
			return version.CompareKubeAwareVersionStrings(vi.gv.Version, vj.gv.Version) > 0
		})
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].priority != out[j].priority {
			return out[i].priority > out[j].priority
		}
		return out[i].name < out[j].name
	})
	return out
}

// serveDiscovery answers /apis and /apis/{group} with the extension groups merged in, and
// reports whether it did; everything else is left to next.
func (a *Aggregator) serveDiscovery(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
	if r.Method != http.MethodGet || len(a.view.Load().byGV) == 0 {
		return false
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/openapi/v3":
		return a.serveOpenAPIV3Index(w, r, next)
	case path == "/openapi/v2":
		return a.serveOpenAPIV2(w, r, next)
	case path == "/apis":
		groups := a.extGroups()
		rec := record(next, unconditional(r))
		ct := rec.header.Get("Content-Type")
		if rec.code != http.StatusOK || !strings.HasPrefix(ct, "application/json") {
			rec.replay(w)
			return true
		}
		var body []byte
		var err error
		if strings.Contains(ct, "as=APIGroupDiscoveryList") {
			body, err = mergeAggregated(rec.body.Bytes(), groups)
		} else {
			body, err = mergeLegacy(rec.body.Bytes(), groups)
		}
		if err != nil {
			rec.replay(w)
			return true
		}
		etag := fmt.Sprintf("%q", fmt.Sprintf("%X", sha256.Sum256(body)))
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Vary", "Accept")
		if strings.Contains(ct, "as=APIGroupDiscoveryList") {
			w.Header().Set("ETag", etag)
			if r.Header.Get("If-None-Match") == etag {
				w.WriteHeader(http.StatusNotModified)
				return true
			}
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		return true
	case strings.HasPrefix(path, "/apis/") && !strings.Contains(path[len("/apis/"):], "/"):
		name := path[len("/apis/"):]
		var group *extGroup
		for _, g := range a.extGroups() {
			if g.name == name {
				group = g
			}
		}
		if group == nil {
			return false
		}
		rec := record(next, r)
		g := metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: name}
		if rec.code == http.StatusOK {
			if err := json.Unmarshal(rec.body.Bytes(), &g); err != nil {
				rec.replay(w)
				return true
			}
		}
		addVersions(&g, group)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(w).Encode(&g)
		return true
	}
	return false
}

// addVersions adds an extension group's versions to a legacy group document.
func addVersions(g *metav1.APIGroup, eg *extGroup) {
	for _, b := range eg.versions {
		gv := metav1.GroupVersionForDiscovery{GroupVersion: b.gv.String(), Version: b.gv.Version}
		found := false
		for _, v := range g.Versions {
			found = found || v.GroupVersion == gv.GroupVersion
		}
		if !found {
			g.Versions = append(g.Versions, gv)
		}
	}
	if g.PreferredVersion.Version == "" && len(g.Versions) > 0 {
		g.PreferredVersion = g.Versions[0]
	}
}

func mergeLegacy(body []byte, groups []*extGroup) ([]byte, error) {
	var list metav1.APIGroupList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, err
	}
	for _, eg := range groups {
		g := findOrAppend(&list.Groups, func(g metav1.APIGroup) bool { return g.Name == eg.name }, metav1.APIGroup{Name: eg.name})
		addVersions(g, eg)
	}
	return json.Marshal(&list)
}

func mergeAggregated(body []byte, groups []*extGroup) ([]byte, error) {
	// v2 and v2beta1 documents have the same shape; the apiVersion is kept as served.
	var list apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, err
	}
	for _, eg := range groups {
		item := findOrAppend(&list.Items, func(g apidiscoveryv2.APIGroupDiscovery) bool { return g.Name == eg.name },
			apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: eg.name}})
		for _, b := range eg.versions {
			b.mu.Lock()
			entry := apidiscoveryv2.APIVersionDiscovery{Version: b.gv.Version}
			if b.discovery != nil {
				entry = *b.discovery
			}
			entry.Freshness = apidiscoveryv2.DiscoveryFreshnessCurrent
			if b.stale || b.discovery == nil {
				entry.Freshness = apidiscoveryv2.DiscoveryFreshnessStale
			}
			b.mu.Unlock()
			found := false
			for _, v := range item.Versions {
				found = found || v.Version == entry.Version
			}
			if !found {
				item.Versions = append(item.Versions, entry)
			}
		}
	}
	return json.Marshal(&list)
}

// findOrAppend returns the element of *list that match picks, appending fresh when none does.
func findOrAppend[T any](list *[]T, match func(T) bool, fresh T) *T {
	for i := range *list {
		if match((*list)[i]) {
			return &(*list)[i]
		}
	}
	*list = append(*list, fresh)
	return &(*list)[len(*list)-1]
}

// unconditional returns r without its cache validators: the merged document is not the
// local one a client may have cached, and has its own ETag.
func unconditional(r *http.Request) *http.Request {
	inner := r.Clone(r.Context())
	inner.Header.Del("If-None-Match")
	inner.Header.Del("If-Modified-Since")
	return inner
}

// recorder keeps a response in memory (the local discovery documents are small).
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func record(h http.Handler, r *http.Request) *recorder {
	rec := &recorder{header: http.Header{}, code: http.StatusOK}
	h.ServeHTTP(rec, r)
	return rec
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.code = code }

func (r *recorder) replay(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	w.WriteHeader(r.code)
	_, _ = w.Write(r.body.Bytes())
}

// serveOpenAPIV3Index adds the available extension servers' group versions to the
// /openapi/v3 index; their documents are proxied from there.
func (a *Aggregator) serveOpenAPIV3Index(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
	extra := map[string]openAPIV3Path{}
	for _, b := range a.view.Load().byGV {
		b.mu.Lock()
		u := b.openapiV3
		b.mu.Unlock()
		if b.available.Load() && u != "" {
			extra["apis/"+b.gv.Group+"/"+b.gv.Version] = openAPIV3Path{ServerRelativeURL: u}
		}
	}
	if len(extra) == 0 {
		return false
	}
	rec := record(next, unconditional(r))
	var index openAPIV3Index
	if rec.code != http.StatusOK || json.Unmarshal(rec.body.Bytes(), &index) != nil || index.Paths == nil {
		rec.replay(w)
		return true
	}
	for k, v := range extra {
		if _, local := index.Paths[k]; !local {
			index.Paths[k] = v
		}
	}
	body, err := json.Marshal(&index)
	if err != nil {
		rec.replay(w)
		return true
	}
	etag := fmt.Sprintf("%q", fmt.Sprintf("%X", sha256.Sum256(body)))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return true
}
