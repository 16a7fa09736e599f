package diffupstream

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const aggregatedAccept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// resourceInfo is what the request corpus needs to know of a resource.
type resourceInfo struct {
	groupVersion string // "v1", "apps/v1"
	name         string // "deployments"
	kind         string
	namespaced   bool
	verbs        []string
	subresources []string // "status", "scale"
}

// prefix is the path of the resource's group version: /api/v1 or /apis/apps/v1.
func (r resourceInfo) prefix() string {
	if r.groupVersion == "v1" {
		return "/api/v1"
	}
	return "/apis/" + r.groupVersion
}

// path is the URL path of the collection (in namespace ns when namespaced) or of an object.
func (r resourceInfo) path(ns, name string) string {
	p := r.prefix()
	if r.namespaced && ns != "" {
		p += "/namespaces/" + ns
	}
	p += "/" + r.name
	if name != "" {
		p += "/" + name
	}
	return p
}

// resourceIndex is the resources by "groupVersion/Kind", from legacy discovery.
type resourceIndex map[string]resourceInfo

// compareDiscovery compares legacy discovery (/api, /apis, each group version) and aggregated
// discovery, and returns kube-apiserver's resources (with hacp's for what it alone serves).
func compareDiscovery(p *pair) (resourceIndex, error) {
	var kubeGVs, hacpGVs []string
	for _, side := range []struct {
		t   *target
		gvs *[]string
	}{{p.kube, &kubeGVs}, {p.hacp, &hacpGVs}} {
		gvs, err := groupVersions(p, side.t)
		if err != nil {
			return nil, err
		}
		*side.gvs = gvs
	}
	k, h := p.send(request{method: "GET", path: "/api"})
	p.compare("discovery", "discovery/legacy/api", pick(k.object(), "versions"), pick(h.object(), "versions"))
	k, h = p.send(request{method: "GET", path: "/apis"})
	kg, hg := groupsByName(k), groupsByName(h)
	for _, name := range unionKeys(kg, hg) {
		p.compare("discovery", "discovery/legacy/groups/"+orCore(name), kg[name], hg[name])
	}
	idx := resourceIndex{}
	hacpIdx := resourceIndex{}
	for _, gv := range union(kubeGVs, hacpGVs) {
		kr, err := legacyResources(p, p.kube, gv, idx)
		if err != nil {
			return nil, err
		}
		hr, err := legacyResources(p, p.hacp, gv, hacpIdx)
		if err != nil {
			return nil, err
		}
		for _, name := range unionKeys(kr, hr) {
			p.compare("discovery", "discovery/legacy/"+gv+"/"+name, kr[name], hr[name])
		}
	}
	for k, v := range hacpIdx {
		if _, ok := idx[k]; !ok {
			idx[k] = v
		}
	}
	compareAggregated(p)
	return idx, nil
}

// groupVersions lists the group versions t serves: v1 and every version of /apis.
func groupVersions(p *pair, t *target) ([]string, error) {
	a := t.do(p.ctx, request{method: "GET", path: "/apis"})
	if a.Code != 200 {
		return nil, fmt.Errorf("%s: GET /apis: %d %v %s", t.name, a.Code, a.Body, a.Err)
	}
	var gl metav1.APIGroupList
	if err := remarshal(a.Body, &gl); err != nil {
		return nil, err
	}
	gvs := []string{"v1"}
	for _, g := range gl.Groups {
		for _, v := range g.Versions {
			gvs = append(gvs, v.GroupVersion)
		}
	}
	return gvs, nil
}

// groupsByName projects an APIGroupList onto group -> its versions and preferred version.
func groupsByName(a answer) map[string]any {
	var gl metav1.APIGroupList
	_ = remarshal(a.Body, &gl)
	out := map[string]any{}
	for _, g := range gl.Groups {
		var vs []string
		for _, v := range g.Versions {
			vs = append(vs, v.Version)
		}
		out[g.Name] = map[string]any{"versions": toAny(vs), "preferred": g.PreferredVersion.Version}
	}
	return out
}

// legacyResources fetches one group version's APIResourceList from t, adds its resources to
// idx and returns them projected onto what is compared (by resource name, subresources
// included).
func legacyResources(p *pair, t *target, gv string, idx resourceIndex) (map[string]any, error) {
	path := "/apis/" + gv
	if gv == "v1" {
		path = "/api/v1"
	}
	a := t.do(p.ctx, request{method: "GET", path: path})
	out := map[string]any{}
	if a.Code == 404 {
		return out, nil
	}
	if a.Code != 200 {
		return nil, fmt.Errorf("%s: GET %s: %d %v %s", t.name, path, a.Code, a.Body, a.Err)
	}
	var rl metav1.APIResourceList
	if err := remarshal(a.Body, &rl); err != nil {
		return nil, err
	}
	subs := map[string][]string{}
	for _, r := range rl.APIResources {
		out[r.Name] = map[string]any{
			"kind": r.Kind, "namespaced": r.Namespaced, "singularName": r.SingularName,
			"verbs": sortedAny(r.Verbs), "shortNames": sortedAny(r.ShortNames), "categories": sortedAny(r.Categories),
			"storageVersionHash": r.StorageVersionHash, "group": r.Group, "version": r.Version,
		}
		if base, sub, ok := strings.Cut(r.Name, "/"); ok {
			subs[base] = append(subs[base], sub)
		}
	}
	for _, r := range rl.APIResources {
		if strings.Contains(r.Name, "/") {
			continue
		}
		idx[gv+"/"+r.Kind] = resourceInfo{groupVersion: gv, name: r.Name, kind: r.Kind, namespaced: r.Namespaced,
			verbs: r.Verbs, subresources: subs[r.Name]}
	}
	return out, nil
}

// compareAggregated compares aggregated discovery (v2) of /api and /apis: the order of the
// groups (it is the preference order), and per resource its scope, kinds, verbs, names,
// categories and subresources.
func compareAggregated(p *pair) {
	kr, hr := map[string]any{}, map[string]any{}
	var korder, horder []string
	for _, path := range []string{"/api", "/apis"} {
		k, h := p.send(request{method: "GET", path: path, accept: aggregatedAccept})
		korder = append(korder, aggregatedResources(k, kr)...)
		horder = append(horder, aggregatedResources(h, hr)...)
	}
	p.compare("discovery", "discovery/aggregated/order", toAny(korder), toAny(horder))
	for _, id := range unionKeys(kr, hr) {
		p.compare("discovery", "discovery/aggregated/"+id, kr[id], hr[id])
	}
}

// aggregatedResources adds the answer's resources to out by "groupVersion/resource" and
// returns its group versions in order.
func aggregatedResources(a answer, out map[string]any) []string {
	var l apidiscoveryv2.APIGroupDiscoveryList
	if err := remarshal(a.Body, &l); err != nil || a.Code != 200 {
		return []string{fmt.Sprintf("error %d %v", a.Code, a.Err)}
	}
	var order []string
	for _, g := range l.Items {
		for _, v := range g.Versions {
			gv := v.Version
			if g.Name != "" {
				gv = g.Name + "/" + v.Version
			}
			order = append(order, gv)
			for _, r := range v.Resources {
				subs := map[string]any{}
				for _, s := range r.Subresources {
					subs[s.Subresource] = map[string]any{"verbs": sortedAny(s.Verbs), "responseKind": gvkText(s.ResponseKind), "acceptedTypes": len(s.AcceptedTypes)}
				}
				out[gv+"/"+r.Resource] = map[string]any{
					"scope": string(r.Scope), "singularResource": r.SingularResource, "responseKind": gvkText(r.ResponseKind),
					"verbs": sortedAny(r.Verbs), "shortNames": sortedAny(r.ShortNames), "categories": sortedAny(r.Categories),
					"subresources": subs,
				}
			}
		}
	}
	return order
}

func gvkText(k *metav1.GroupVersionKind) string {
	if k == nil {
		return ""
	}
	return k.Group + "/" + k.Version + "/" + k.Kind
}

func remarshal(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func pick(m map[string]any, key string) any {
	if m == nil {
		return nil
	}
	return m[key]
}

func sortedAny(ss []string) []any {
	ss = slices.Clone(ss)
	sort.Strings(ss)
	return toAny(ss)
}

func orCore(group string) string {
	if group == "" {
		return "core"
	}
	return group
}

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(slices.Clone(a), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func unionKeys(a, b map[string]any) []string {
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedStrings(ss []string) []string {
	ss = slices.Clone(ss)
	sort.Strings(ss)
	return ss
}
