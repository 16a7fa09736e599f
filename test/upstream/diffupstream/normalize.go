package diffupstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
)

// serverTimes are fields the server sets to the time of the request, anywhere in an object.
var serverTimes = map[string]bool{"lastPhaseTransitionTime": true}

// NormalizeGolden drops what differs between any two creates (uid, timestamps,
// resourceVersion, managedFields) and what allocators choose (a Service's cluster IPs and
// node ports), and writes the object's uid as <uid> wherever it appears (a Job's selector
// and labels). It is the form of the golden files under test/upstream/testdata/golden/results.
func NormalizeGolden(obj map[string]any) map[string]any {
	obj = deepCopy(obj).(map[string]any)
	md, _ := obj["metadata"].(map[string]any)
	uid, _ := md["uid"].(string)
	for _, f := range []string{"uid", "creationTimestamp", "resourceVersion", "managedFields"} {
		delete(md, f)
	}
	maskAllocated(obj)
	obj = maskTimes(obj).(map[string]any)
	if uid == "" {
		return obj
	}
	return replaceString(obj, uid, "<uid>").(map[string]any)
}

// rfc3339 matches a timestamp as the API writes one.
var rfc3339 = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)

// normalizeObject is what the harness compares of an object: NormalizeGolden, but with
// managedFields kept (their times, like every timestamp, masked), a generated name masked,
// and every uid (also an owner's) written as <uid>.
func normalizeObject(obj map[string]any) map[string]any {
	obj = deepCopy(obj).(map[string]any)
	md, _ := obj["metadata"].(map[string]any)
	var uids []string
	if uid, _ := md["uid"].(string); uid != "" {
		uids = append(uids, uid)
	}
	delete(md, "uid")
	delete(md, "resourceVersion")
	sortManagedFields(md)
	maskAllocated(obj)
	out := maskAllTimes(obj)
	for _, uid := range uids {
		out = replaceString(out, uid, "<uid>")
	}
	if gn, _ := md["generateName"].(string); gn != "" {
		if name, _ := md["name"].(string); name != "" {
			out = replaceString(out, name, gn+"<generated>") // also in labels that copy it
		}
	}
	return out.(map[string]any)
}

// sortManagedFields orders the managedFields entries by manager, operation, subresource
// and version: the servers order them by time, to the second, so two writes in one second or
// in two would otherwise compare differently.
func sortManagedFields(md map[string]any) {
	entries, _ := md["managedFields"].([]any)
	key := func(e any) string {
		m, _ := e.(map[string]any)
		return fmt.Sprint(m["manager"], "\x00", m["operation"], "\x00", m["subresource"], "\x00", m["apiVersion"])
	}
	sort.SliceStable(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
}

// maskAllocated writes a Service's allocated cluster IPs and node ports as <allocated>.
func maskAllocated(obj map[string]any) {
	if obj["kind"] != "Service" {
		return
	}
	spec, _ := obj["spec"].(map[string]any)
	if ip, _ := spec["clusterIP"].(string); ip != "" && ip != "None" {
		spec["clusterIP"] = "<allocated>"
		spec["clusterIPs"] = []any{"<allocated>"}
	}
	ports, _ := spec["ports"].([]any)
	for _, p := range ports {
		if pm, _ := p.(map[string]any); pm["nodePort"] != nil {
			pm["nodePort"] = "<allocated>"
		}
	}
}

// maskTimes writes the serverTimes fields as <time>.
func maskTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if serverTimes[k] && e != nil {
				x[k] = "<time>"
			} else {
				x[k] = maskTimes(e)
			}
		}
	case []any:
		for i := range x {
			x[i] = maskTimes(x[i])
		}
	}
	return v
}

// maskAllTimes writes every RFC 3339 timestamp as <time>.
func maskAllTimes(v any) any {
	switch x := v.(type) {
	case string:
		if rfc3339.MatchString(x) {
			return "<time>"
		}
	case map[string]any:
		for k, e := range x {
			x[k] = maskAllTimes(e)
		}
	case []any:
		for i := range x {
			x[i] = maskAllTimes(x[i])
		}
	}
	return v
}

// CopyJSON is a deep copy of a decoded JSON value (numbers as json.Number).
func CopyJSON(v any) any { return deepCopy(v) }

func deepCopy(v any) any {
	b, _ := json.Marshal(v)
	var out any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	_ = d.Decode(&out)
	return out
}

func replaceString(v any, old, new string) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, old, new)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[strings.ReplaceAll(k, old, new)] = replaceString(e, old, new)
		}
		return out
	case []any:
		for i := range x {
			x[i] = replaceString(x[i], old, new)
		}
	}
	return v
}

// FieldDiff is one leaf where two answers differ: its path and both sides as JSON (a
// missing side is <none>).
type FieldDiff struct{ Path, Want, Got string }

// DiffPaths lists the leaves where want and got differ.
func DiffPaths(path string, want, got any) []FieldDiff {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		keys := map[string]bool{}
		for k := range wm {
			keys[k] = true
		}
		for k := range gm {
			keys[k] = true
		}
		var names []string
		for k := range keys {
			names = append(names, k)
		}
		sort.Strings(names)
		var out []FieldDiff
		for _, k := range names {
			out = append(out, DiffPaths(path+"."+k, wm[k], gm[k])...)
		}
		return out
	}
	wl, wok := want.([]any)
	gl, gok := got.([]any)
	if wok && gok && len(wl) == len(gl) {
		var out []FieldDiff
		for i := range wl {
			out = append(out, DiffPaths(fmt.Sprintf("%s[%d]", path, i), wl[i], gl[i])...)
		}
		return out
	}
	if reflect.DeepEqual(jsonText(want), jsonText(got)) {
		return nil
	}
	return []FieldDiff{{Path: path, Want: jsonText(want), Got: jsonText(got)}}
}

func jsonText(v any) string {
	if v == nil {
		return "<none>"
	}
	b, _ := json.Marshal(v)
	return string(b)
}
