package diffupstream

import (
	"fmt"
	"strings"
)

// compareOpenAPI compares /openapi/v3: which group versions it lists, per group version its
// paths and their operations, and per definition (components.schemas, over all group
// versions) its type, property names and required properties. Descriptions, extensions and
// formats are not compared: kubectl validates against the shape.
func compareOpenAPI(p *pair) error {
	k, h := p.send(request{method: "GET", path: "/openapi/v3"})
	if k.Code != 200 || h.Code != 200 {
		return fmt.Errorf("GET /openapi/v3: kube-apiserver %d, hacp %d %v", k.Code, h.Code, h.Body)
	}
	kp, _ := pick(k.object(), "paths").(map[string]any)
	hp, _ := pick(h.object(), "paths").(map[string]any)
	p.compare("openapi", "openapi/index", keySet(kp), keySet(hp))
	kdefs, hdefs := map[string]any{}, map[string]any{}
	for _, gv := range unionKeys(kp, hp) {
		kdoc := fetchSpec(p, p.kube, kp[gv])
		hdoc := fetchSpec(p, p.hacp, hp[gv])
		p.compare("openapi", "openapi/"+gv+"/paths", specPaths(kdoc), specPaths(hdoc))
		addSchemas(kdoc, kdefs)
		addSchemas(hdoc, hdefs)
	}
	for _, name := range unionKeys(kdefs, hdefs) {
		p.compare("openapi", "openapi/schemas/"+name, kdefs[name], hdefs[name])
	}
	return nil
}

// fetchSpec GETs the document an /openapi/v3 entry points at (nil if there is none).
func fetchSpec(p *pair, t *target, entry any) map[string]any {
	e, _ := entry.(map[string]any)
	url, _ := e["serverRelativeURL"].(string)
	if url == "" {
		return nil
	}
	a := t.do(p.ctx, request{method: "GET", path: url})
	if a.Code != 200 {
		return map[string]any{"error": a.Code}
	}
	return a.object()
}

// specPaths projects a document onto path -> its operations (methods).
func specPaths(doc map[string]any) map[string]any {
	if doc == nil {
		return nil
	}
	if e, ok := doc["error"]; ok {
		return map[string]any{"error": e}
	}
	paths, _ := doc["paths"].(map[string]any)
	out := map[string]any{}
	for path, item := range paths {
		im, _ := item.(map[string]any)
		var ops []string
		for m := range im {
			switch m {
			case "get", "put", "post", "delete", "patch", "head", "options":
				ops = append(ops, m)
			}
		}
		out[path] = strings.Join(sortedStrings(ops), ",")
	}
	return out
}

// addSchemas adds the document's definitions, projected, to defs (the first one of a name
// wins; the shared ones are the same in every document).
func addSchemas(doc map[string]any, defs map[string]any) {
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	for name, s := range schemas {
		if _, ok := defs[name]; ok {
			continue
		}
		sm, _ := s.(map[string]any)
		props, _ := sm["properties"].(map[string]any)
		var req []string
		if r, ok := sm["required"].([]any); ok {
			for _, x := range r {
				req = append(req, fmt.Sprint(x))
			}
		}
		defs[name] = map[string]any{"type": sm["type"], "properties": keySet(props), "required": toAny(sortedStrings(req))}
	}
}

// keySet is the keys of m as a set (each true), so that a difference names the key.
func keySet(m map[string]any) map[string]any {
	out := map[string]any{}
	for k := range m {
		out[k] = true
	}
	return out
}
