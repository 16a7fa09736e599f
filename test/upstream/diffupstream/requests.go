package diffupstream

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

// runRequests sends the request corpus to both servers: per object of the corpus its
// invalid mutations (dry-run), then a dry-run create, create, Table get, update, every patch
// type, apply, status and scale subresources and a dry-run delete; then lists with
// selectors, Table lists of every resource and gets of missing objects. It returns
// kube-apiserver's answers to the creates by golden key.
func runRequests(p *pair, idx resourceIndex, c *corpus) (map[string]map[string]any, error) {
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": corpusNamespace}}
	k, h := p.send(request{method: "POST", path: "/api/v1/namespaces", body: ns})
	if k.Code != 201 || h.Code != 201 {
		return nil, fmt.Errorf("create namespace %s: kube-apiserver %d, hacp %d", corpusNamespace, k.Code, h.Code)
	}
	golden := map[string]map[string]any{}
	for _, obj := range c.objects {
		key := GoldenKey(obj)
		ri, ok := idx[obj.GetAPIVersion()+"/"+obj.GetKind()]
		if !ok {
			p.compare("requests", "resolve/"+key, "not served", "not served")
			continue
		}
		for i := range c.mutations {
			invalidCheck(p, ri, obj, &c.mutations[i])
		}
		if created := objectChecks(p, ri, obj); created != nil {
			golden[key] = created
		}
		if obj.GetKind() == "CustomResourceDefinition" {
			if err := awaitDefinition(p, idx, obj); err != nil {
				return nil, err
			}
		}
	}
	listChecks(p, idx, c.objects)
	collectionChecks(p, idx)
	return golden, nil
}

// invalidCheck sends the object mutated as a dry-run create.
func invalidCheck(p *pair, ri resourceInfo, obj *unstructured.Unstructured, m *mutation) {
	body, ok := m.apply(obj)
	if !ok {
		return
	}
	q := "?dryRun=All"
	if m.Query != "" {
		q += "&" + m.Query
	}
	k, h := p.send(request{method: "POST", path: ri.path(corpusNamespace, "") + q, body: body})
	p.compareAnswers("invalid", "invalid/"+m.Name+"/"+GoldenKey(obj), k, h)
}

// objectChecks runs the object's requests and returns kube-apiserver's answer to the create
// (nil if it failed).
func objectChecks(p *pair, ri resourceInfo, obj *unstructured.Unstructured) map[string]any {
	key := GoldenKey(obj)
	coll := ri.path(corpusNamespace, "")
	one := ri.path(corpusNamespace, obj.GetName())
	k, h := p.send(request{method: "POST", path: coll + "?dryRun=All", body: obj.Object})
	p.compareAnswers("create", "create-dryrun/"+key, k, h)
	k, h = p.send(request{method: "POST", path: coll, body: obj.Object})
	p.compareAnswers("create", "create/"+key, k, h)
	var created map[string]any
	if k.Code == 201 {
		created = k.object()
	}
	if obj.GetKind() == "CustomResourceDefinition" {
		// What follows reads and writes its status: first let each server's controllers
		// establish it, so that the answers do not depend on how far they got.
		for _, t := range []*target{p.kube, p.hacp} {
			if err := t.awaitEstablished(p.ctx, one); err != nil {
				p.compare("create", "established/"+key, err.Error(), nil)
			}
		}
	}
	k, h = p.send(request{method: "GET", path: one, accept: tableAccept})
	p.compare("table", "table/get/"+key, tableView(k), tableView(h))
	k, h = p.kube.readModifyWrite(p.ctx, one, "diff", "yes"), p.hacp.readModifyWrite(p.ctx, one, "diff", "yes")
	p.compareAnswers("update", "update/"+key, k, h)
	patches := []struct{ name, ct, body string }{
		{"merge", "application/merge-patch+json", `{"metadata":{"annotations":{"diff/merge":"1"}}}`},
		{"strategic", "application/strategic-merge-patch+json", `{"metadata":{"labels":{"diff-smp":"1"}}}`},
		{"json", "application/json-patch+json", `[{"op":"add","path":"/metadata/labels/diff-json","value":"1"}]`},
	}
	for _, pt := range patches {
		k, h = p.send(request{method: "PATCH", path: one, contentType: pt.ct, body: []byte(pt.body)})
		p.compareAnswers("patch", "patch-"+pt.name+"/"+key, k, h)
	}
	apply := map[string]any{"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind(),
		"metadata": map[string]any{"name": obj.GetName(), "labels": map[string]any{"diff-apply": "1"}}}
	k, h = p.send(request{method: "PATCH", path: one + "?fieldManager=diff&force=true", contentType: "application/apply-patch+yaml", body: apply})
	p.compareAnswers("apply", "apply/"+key, k, h)
	subresourceChecks(p, ri, one, key)
	k, h = p.send(request{method: "DELETE", path: one + "?dryRun=All"})
	p.compareAnswers("delete", "delete-dryrun/"+key, k, h)
	return created
}

// subresourceChecks reads and writes the status and scale subresources the resource has.
func subresourceChecks(p *pair, ri resourceInfo, one, key string) {
	if slices.Contains(ri.subresources, "status") {
		k, h := p.send(request{method: "GET", path: one + "/status"})
		p.compareAnswers("status", "status-get/"+key, k, h)
		kb, hb := withLabel(k.object(), "diff-status", "1"), withLabel(h.object(), "diff-status", "1")
		k = p.kube.do(p.ctx, request{method: "PUT", path: one + "/status", body: kb})
		h = p.hacp.do(p.ctx, request{method: "PUT", path: one + "/status", body: hb})
		p.compareAnswers("status", "status-update/"+key, k, h)
	}
	if slices.Contains(ri.subresources, "scale") {
		k, h := p.send(request{method: "GET", path: one + "/scale"})
		p.compareAnswers("scale", "scale-get/"+key, k, h)
		k, h = p.send(request{method: "PATCH", path: one + "/scale", contentType: "application/merge-patch+json", body: []byte(`{"spec":{"replicas":2}}`)})
		p.compareAnswers("scale", "scale-patch/"+key, k, h)
	}
}

// listChecks lists each resource of the corpus with a label selector, a field selector and a
// field selector on a field the resource does not select by.
func listChecks(p *pair, idx resourceIndex, objs []*unstructured.Unstructured) {
	done := map[string]bool{}
	for _, obj := range objs {
		ri, ok := idx[obj.GetAPIVersion()+"/"+obj.GetKind()]
		id := ri.groupVersion + "/" + ri.name
		if !ok || done[id] || !slices.Contains(ri.verbs, "list") {
			continue
		}
		done[id] = true
		for _, q := range []struct{ name, query string }{
			{"label", "labelSelector=diff%3Dyes"},
			{"label-set", "labelSelector=diff+in+(yes,no),diff-apply"},
			{"field", "fieldSelector=metadata.name%3D" + obj.GetName()},
			{"field-namespace", "fieldSelector=metadata.namespace%3D" + corpusNamespace},
			{"field-unknown", "fieldSelector=spec.nothing%3D1"},
			{"label-invalid", "labelSelector=a%3D%3D%3Db"},
		} {
			k, h := p.send(request{method: "GET", path: ri.path("", "") + "?" + q.query})
			kv, hv := listView(k), listView(h)
			if ri.name == "events" {
				kv, hv = corpusItems(kv, objs), corpusItems(hv, objs)
			}
			p.compare("list", "list-"+q.name+"/"+id, kv, hv)
			p.noteMessages(k, h)
		}
	}
}

// collectionChecks reads every served resource as a Table, and a missing object of it.
func collectionChecks(p *pair, idx resourceIndex) {
	var keys []string
	for k := range idx {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		ri := idx[key]
		id := ri.groupVersion + "/" + ri.name
		if slices.Contains(ri.verbs, "list") {
			k, h := p.send(request{method: "GET", path: ri.path("", ""), accept: tableAccept})
			p.compare("table", "table/list/"+id, tableView(k), tableView(h))
		}
		if slices.Contains(ri.verbs, "get") {
			k, h := p.send(request{method: "GET", path: ri.path(corpusNamespace, "diff-missing")})
			p.compareAnswers("get", "get-missing/"+id, k, h)
		}
	}
}

// awaitDefinition waits until both servers serve the definition's versions, then compares
// and indexes their discovery.
func awaitDefinition(p *pair, idx resourceIndex, crd *unstructured.Unstructured) error {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		name, _, _ := unstructured.NestedString(v.(map[string]any), "name")
		gv := group + "/" + name
		var kr, hr map[string]any
		for deadline := time.Now().Add(time.Minute); ; {
			var err error
			kr, err = legacyResources(p, p.kube, gv, idx)
			if err != nil {
				return err
			}
			hacpIdx := resourceIndex{}
			if hr, err = legacyResources(p, p.hacp, gv, hacpIdx); err != nil {
				return err
			}
			if len(kr) > 0 && len(hr) > 0 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s not served within 1m: kube-apiserver %d resources, hacp %d", gv, len(kr), len(hr))
			}
			time.Sleep(100 * time.Millisecond) // poll
		}
		for _, name := range unionKeys(kr, hr) {
			p.compare("discovery", "discovery/legacy/"+gv+"/"+name, kr[name], hr[name])
		}
	}
	return nil
}

// compareAnswers compares two answers to the same request: a success by its code and its
// normalized object, a failure by its status view (the messages beside, not compared).
func (p *pair) compareAnswers(area, id string, k, h answer) {
	p.compare(area, id, answerView(k), answerView(h))
	p.noteMessages(k, h)
}

// noteMessages puts the Status messages of the answers on the last check.
func (p *pair) noteMessages(k, h answer) {
	c := &p.report.Checks[len(p.report.Checks)-1]
	c.KubeMessage, c.HacpMessage = statusMessage(k), statusMessage(h)
}

func answerView(a answer) map[string]any {
	obj := a.object()
	if a.Code >= 200 && a.Code < 300 && obj != nil && obj["kind"] != "Status" {
		return map[string]any{"code": a.Code, "object": normalizeObject(obj)}
	}
	return statusView(a)
}

// tableView is what is compared of a Table: its column definitions.
func tableView(a answer) map[string]any {
	obj := a.object()
	if a.Code != 200 || obj["kind"] != "Table" {
		return statusView(a)
	}
	cols, _ := obj["columnDefinitions"].([]any)
	var out []any
	for _, c := range cols {
		cm, _ := c.(map[string]any)
		out = append(out, map[string]any{"name": cm["name"], "type": cm["type"], "format": cm["format"], "priority": cm["priority"]})
	}
	return map[string]any{"code": a.Code, "columns": out}
}

// listView is what is compared of a list: the code and the items' names (namespace/name).
func listView(a answer) map[string]any {
	obj := a.object()
	if a.Code != 200 || obj == nil {
		return statusView(a)
	}
	items, _ := obj["items"].([]any)
	var names []string
	for _, it := range items {
		md, _ := it.(map[string]any)["metadata"].(map[string]any)
		names = append(names, fmt.Sprintf("%v/%v", md["namespace"], md["name"]))
	}
	return map[string]any{"code": a.Code, "kind": obj["kind"], "items": toAny(sortedStrings(names))}
}

// corpusItems drops, from a list view of Events, those a server recorded itself (named as
// an event recorder names them, the object's name and the time in hex): kube-apiserver's
// Service IP repair records one about a Service whose creation it races, now and then.
func corpusItems(view map[string]any, objs []*unstructured.Unstructured) map[string]any {
	items, ok := view["items"].([]any)
	if !ok {
		return view
	}
	made := map[string]bool{}
	for _, o := range objs {
		made[o.GetName()] = true
	}
	kept := []string{}
	for _, it := range items {
		s, _ := it.(string)
		_, name, _ := strings.Cut(s, "/")
		if made[name] || !recordedName.MatchString(name) {
			kept = append(kept, s)
		}
	}
	out := maps.Clone(view)
	out["items"] = toAny(kept)
	return out
}

// recordedName is the name an event recorder gives an Event: the object's name and the
// time in nanoseconds, in hex.
var recordedName = regexp.MustCompile(`^.+\.[0-9a-f]{16}$`)

// awaitEstablished polls the definition at path until its Established condition is True.
func (t *target) awaitEstablished(ctx context.Context, path string) error {
	for deadline := time.Now().Add(time.Minute); ; {
		a := t.do(ctx, request{method: "GET", path: path})
		conds, _, _ := unstructured.NestedSlice(a.object(), "status", "conditions")
		for _, c := range conds {
			if c, _ := c.(map[string]any); c["type"] == "Established" && c["status"] == "True" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not established within 1m: %d %v", t.name, path, a.Code, a.Body)
		}
		time.Sleep(50 * time.Millisecond) // poll
	}
}

// readModifyWrite updates the object at path with a label added, from the server's own
// current object (its resourceVersion), again while a conflict says the server's own
// controllers wrote it meanwhile (a definition being established), as clients do.
func (t *target) readModifyWrite(ctx context.Context, path, key, value string) answer {
	var a answer
	for range 10 {
		cur := t.do(ctx, request{method: "GET", path: path})
		if a = t.do(ctx, request{method: "PUT", path: path, body: withLabel(cur.object(), key, value)}); a.Code != 409 {
			break
		}
	}
	return a
}

// withLabel returns obj with a label set (nil stays nil).
func withLabel(obj map[string]any, key, value string) map[string]any {
	if obj == nil {
		return nil
	}
	obj = deepCopy(obj).(map[string]any)
	md, _ := obj["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}
	labels[key] = value
	md["labels"] = labels
	return obj
}
