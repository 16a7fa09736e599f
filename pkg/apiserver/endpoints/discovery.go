package endpoints

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"sort"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func statusFor(code int32, reason metav1.StatusReason, msg string) metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}
}

// Discovery serves /api, /apis and the per-group and per-version documents,
// legacy and aggregated (apidiscovery.k8s.io v2 and v2beta1).
type Discovery struct {
	groups    []schema.GroupVersion // sorted: core first, then as installed
	lists     map[schema.GroupVersion]*metav1.APIResourceList
	aggCore   *apidiscoveryv2.APIGroupDiscoveryList
	aggGroups *apidiscoveryv2.APIGroupDiscoveryList
	docs      map[string][]byte // precomputed bodies by key
	etags     map[string]string
}

// NewDiscovery precomputes the discovery documents for resources.
func NewDiscovery(resources []Resource) *Discovery {
	d := &Discovery{lists: map[schema.GroupVersion]*metav1.APIResourceList{}, docs: map[string][]byte{}, etags: map[string]string{}}
	aggByGV := map[schema.GroupVersion][]apidiscoveryv2.APIResourceDiscovery{}
	for _, r := range resources {
		gv := r.Names.GroupVersion()
		l, ok := d.lists[gv]
		if !ok {
			l = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
			d.lists[gv] = l
			d.groups = append(d.groups, gv)
		}
		verbs := Verbs(r.Storage)
		l.APIResources = append(l.APIResources, metav1.APIResource{
			Name: r.Names.Plural, SingularName: r.Names.Singular, Namespaced: r.Names.Namespaced,
			Kind: r.Names.Kind, Verbs: verbs, ShortNames: r.Names.ShortNames, Categories: r.Names.Categories,
		})
		scope := apidiscoveryv2.ScopeCluster
		if r.Names.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		kind := r.Storage.Kind()
		ad := apidiscoveryv2.APIResourceDiscovery{
			Resource: r.Names.Plural, SingularResource: r.Names.Singular, Scope: scope,
			// As upstream: the group and version only when they are not the resource's own.
			ResponseKind: &metav1.GroupVersionKind{Group: groupIfDifferent(kind.Group, gv.Group), Version: versionIfDifferent(kind, gv), Kind: kind.Kind},
			Verbs:        verbs, ShortNames: r.Names.ShortNames, Categories: r.Names.Categories,
		}
		subs := make([]string, 0, len(r.Subresources))
		for s := range r.Subresources {
			subs = append(subs, s)
		}
		sort.Strings(subs)
		for _, s := range subs {
			st := r.Subresources[s]
			sk := st.Kind()
			sverbs := Verbs(st)
			l.APIResources = append(l.APIResources, metav1.APIResource{
				Name: r.Names.Plural + "/" + s, Namespaced: r.Names.Namespaced, Kind: sk.Kind, Verbs: sverbs,
				Group: groupIfDifferent(sk.Group, gv.Group), Version: versionIfDifferent(sk, gv),
			})
			ad.Subresources = append(ad.Subresources, apidiscoveryv2.APISubresourceDiscovery{
				Subresource: s, Verbs: sverbs,
				ResponseKind: &metav1.GroupVersionKind{Group: groupIfDifferent(sk.Group, gv.Group), Version: versionIfDifferent(sk, gv), Kind: sk.Kind},
			})
		}
		aggByGV[gv] = append(aggByGV[gv], ad)
	}
	sort.SliceStable(d.groups, func(i, j int) bool { return d.groups[i].Group == "" && d.groups[j].Group != "" })

	d.aggCore = &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}}
	d.aggGroups = &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}}
	groupIdx := map[string]int{}
	for _, gv := range d.groups {
		vd := apidiscoveryv2.APIVersionDiscovery{Version: gv.Version, Resources: aggByGV[gv], Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
		target := d.aggGroups
		if gv.Group == "" {
			target = d.aggCore
		}
		i, ok := groupIdx[gv.Group]
		if !ok {
			target.Items = append(target.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: gv.Group}})
			i = len(target.Items) - 1
			groupIdx[gv.Group] = i
		}
		target.Items[i].Versions = append(target.Items[i].Versions, vd)
	}
	return d
}

func groupIfDifferent(g, base string) string {
	if g == base {
		return ""
	}
	return g
}

func versionIfDifferent(k schema.GroupVersionKind, gv schema.GroupVersion) string {
	if k.Group == gv.Group && k.Version == gv.Version {
		return ""
	}
	return k.Version
}

func (d *Discovery) groupVersions(group string) []schema.GroupVersion {
	var out []schema.GroupVersion
	for _, gv := range d.groups {
		if gv.Group == group {
			out = append(out, gv)
		}
	}
	return out
}

func (d *Discovery) apiGroup(group string) metav1.APIGroup {
	g := metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: group}
	for _, gv := range d.groupVersions(group) {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version})
	}
	if len(g.Versions) > 0 {
		g.PreferredVersion = g.Versions[0]
	}
	return g
}

// aggregatedVersion returns "v2", "v2beta1" or "" for the Accept header.
func aggregatedVersion(r *http.Request) string {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if mt == "application/json" && params["g"] == "apidiscovery.k8s.io" && params["as"] == "APIGroupDiscoveryList" {
			if params["v"] == "v2" || params["v"] == "v2beta1" {
				return params["v"]
			}
		}
		if mt == "application/json" && params["g"] == "" || mt == "*/*" {
			return ""
		}
	}
	return ""
}

func toV2beta1(l *apidiscoveryv2.APIGroupDiscoveryList) any {
	// The v2beta1 types have the same shape; convert through JSON.
	data, _ := json.Marshal(l)
	var out apidiscoveryv2beta1.APIGroupDiscoveryList
	_ = json.Unmarshal(data, &out)
	out.APIVersion = "apidiscovery.k8s.io/v2beta1"
	return &out
}

// writeCached writes a precomputed JSON body with an ETag.
func (d *Discovery) writeCached(w http.ResponseWriter, r *http.Request, key, contentType string, build func() any) {
	body, ok := d.docs[key]
	if !ok {
		data, err := json.Marshal(build())
		if err != nil {
			writeError(w, r, err)
			return
		}
		body = data
	}
	etag := fmt.Sprintf("%q", fmt.Sprintf("%X", sha256.Sum256(body)))
	w.Header().Set("ETag", etag)
	w.Header().Set("Vary", "Accept")
	w.Header().Set("Content-Type", contentType)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// Precompute builds every body once; call after NewDiscovery.
func (d *Discovery) Precompute() {
	put := func(key string, v any) {
		data, err := json.Marshal(v)
		if err == nil {
			d.docs[key] = data
		}
	}
	put("agg/v2/api", d.aggCore)
	put("agg/v2/apis", d.aggGroups)
	put("agg/v2beta1/api", toV2beta1(d.aggCore))
	put("agg/v2beta1/apis", toV2beta1(d.aggGroups))
}

// Install registers the discovery documents on mux at their exact paths.
func (d *Discovery) Install(mux *http.ServeMux) {
	mux.HandleFunc("GET /api", func(w http.ResponseWriter, r *http.Request) {
		if v := aggregatedVersion(r); v != "" {
			d.writeCached(w, r, "agg/"+v+"/api", "application/json;g=apidiscovery.k8s.io;v="+v+";as=APIGroupDiscoveryList", nil)
			return
		}
		versions := &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}}
		writeEncoded(w, false, http.StatusOK, versions)
	})
	mux.HandleFunc("GET /apis", func(w http.ResponseWriter, r *http.Request) {
		if v := aggregatedVersion(r); v != "" {
			d.writeCached(w, r, "agg/"+v+"/apis", "application/json;g=apidiscovery.k8s.io;v="+v+";as=APIGroupDiscoveryList", nil)
			return
		}
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		seen := map[string]bool{}
		for _, gv := range d.groups {
			if gv.Group == "" || seen[gv.Group] {
				continue
			}
			seen[gv.Group] = true
			list.Groups = append(list.Groups, d.apiGroup(gv.Group))
		}
		writeEncoded(w, false, http.StatusOK, list)
	})
	groups := map[string]bool{}
	for _, gv := range d.groups {
		l := d.lists[gv]
		mux.HandleFunc("GET "+GroupVersionPath(gv), func(w http.ResponseWriter, r *http.Request) {
			writeEncoded(w, false, http.StatusOK, l)
		})
		if gv.Group != "" && !groups[gv.Group] {
			groups[gv.Group] = true
			g := d.apiGroup(gv.Group)
			mux.HandleFunc("GET /apis/"+gv.Group, func(w http.ResponseWriter, r *http.Request) {
				writeEncoded(w, false, http.StatusOK, &g)
			})
		}
	}
}
