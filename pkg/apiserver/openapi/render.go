package openapi

import (
	"sort"
	"strconv"
)

var info = object{"title": "Kubernetes", "version": "unversioned"}

// renderV2 writes paths as a Swagger 2.0 document.
func renderV2(paths map[string]*pathItem) object {
	g := newGenerator(false)
	out := object{}
	for path, pi := range paths {
		item := object{}
		if len(pi.params) > 0 {
			item["parameters"] = v2Params(pi.params)
		}
		for _, op := range pi.ops {
			o := object{
				"operationId": op.id,
				"description": op.desc,
				"consumes":    op.consumes,
				"produces":    op.produces,
				"schemes":     []string{"https"},
				"tags":        []string{op.tag},
			}
			params := v2Params(op.query)
			if op.body != nil {
				params = append([]any{object{"name": "body", "in": "body", "required": true, "schema": op.body(g)}}, params...)
			}
			if len(params) > 0 {
				o["parameters"] = params
			}
			resps := object{}
			for _, r := range op.resps {
				rs := object{"description": r.desc}
				if r.schema != nil {
					rs["schema"] = r.schema(g)
				}
				resps[strconv.Itoa(r.code)] = rs
			}
			o["responses"] = resps
			addOpExtensions(o, op)
			item[op.method] = o
		}
		out[path] = item
	}
	return object{
		"swagger":     "2.0",
		"info":        info,
		"paths":       out,
		"definitions": g.finish(),
		"securityDefinitions": object{
			"BearerToken": object{"type": "apiKey", "name": "authorization", "in": "header", "description": "Bearer Token authentication"},
		},
		"security": []any{object{"BearerToken": []any{}}},
	}
}

func v2Params(ps []param) []any {
	out := make([]any, 0, len(ps))
	for _, p := range sortedParams(ps) {
		o := object{"name": p.name, "in": p.in, "type": p.typ, "uniqueItems": true, "description": p.desc}
		if p.required {
			o["required"] = true
		}
		out = append(out, o)
	}
	return out
}

// renderV3 writes paths (all of one group-version) as an OpenAPI 3.0
// document whose components hold exactly the schemas the paths reach.
func renderV3(paths map[string]*pathItem) object {
	g := newGenerator(true)
	out := object{}
	for path, pi := range paths {
		item := object{}
		if len(pi.params) > 0 {
			item["parameters"] = v3Params(pi.params)
		}
		for _, op := range pi.ops {
			o := object{
				"operationId": op.id,
				"description": op.desc,
				"tags":        []string{op.tag},
			}
			if len(op.query) > 0 {
				o["parameters"] = v3Params(op.query)
			}
			if op.body != nil {
				s := op.body(g)
				content := object{}
				for _, ct := range op.consumes {
					content[ct] = object{"schema": s}
				}
				o["requestBody"] = object{"content": content, "required": true}
			}
			resps := object{}
			for _, r := range op.resps {
				rs := object{"description": r.desc}
				if r.schema != nil {
					s := r.schema(g)
					content := object{}
					for _, ct := range op.produces {
						content[ct] = object{"schema": s}
					}
					rs["content"] = content
				}
				resps[strconv.Itoa(r.code)] = rs
			}
			o["responses"] = resps
			addOpExtensions(o, op)
			item[op.method] = o
		}
		out[path] = item
	}
	return object{
		"openapi": "3.0.0",
		"info":    info,
		"paths":   out,
		"components": object{
			"schemas": g.finish(),
			"securitySchemes": object{
				"BearerToken": object{"type": "apiKey", "name": "authorization", "in": "header", "description": "Bearer Token authentication"},
			},
		},
		"security": []any{object{"BearerToken": []any{}}},
	}
}

func v3Params(ps []param) []any {
	out := make([]any, 0, len(ps))
	for _, p := range sortedParams(ps) {
		o := object{"name": p.name, "in": p.in, "description": p.desc, "schema": object{"type": p.typ, "uniqueItems": true}}
		if p.required {
			o["required"] = true
		}
		out = append(out, o)
	}
	return out
}

func addOpExtensions(o object, op operation) {
	if op.action != "" {
		o["x-kubernetes-action"] = op.action
	}
	if op.gvk != nil {
		o["x-kubernetes-group-version-kind"] = gvkObject(*op.gvk)
	}
}

// sortedParams orders parameters by name, as upstream does, without
// touching the shared slices.
func sortedParams(ps []param) []param {
	out := append([]param(nil), ps...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
