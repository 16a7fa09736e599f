package openapi

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The model below is neutral between v2 and v3; render.go writes it out.

// param is one operation or path parameter.
type param struct {
	name, in, typ, desc string
	required            bool
}

// schemaFunc returns a schema in the generator's dialect, defining whatever
// it references.
type schemaFunc func(*generator) object

type response struct {
	code   int
	desc   string
	schema schemaFunc // nil: no body
}

type operation struct {
	method   string // get put post patch delete
	id, desc string
	action   string // x-kubernetes-action
	gvk      *schema.GroupVersionKind
	query    []param
	body     schemaFunc // nil: no request body
	consumes []string
	produces []string
	resps    []response
	tag      string
}

type pathItem struct {
	params []param
	ops    []operation
}

var (
	jsonYAML      = []string{"application/json", "application/yaml"}
	jsonYAMLWatch = []string{"application/json", "application/yaml", "application/json;stream=watch"}
	anyType       = []string{"*/*"}
)

// Query parameters, with upstream's descriptions.
var (
	pPretty               = param{name: "pretty", in: "query", typ: "string", desc: "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget)."}
	pDryRun               = param{name: "dryRun", in: "query", typ: "string", desc: "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed"}
	pFieldManager         = param{name: "fieldManager", in: "query", typ: "string", desc: "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint."}
	pFieldManagerPatch    = param{name: "fieldManager", in: "query", typ: "string", desc: "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. This field is required for apply requests (application/apply-patch) but optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch)."}
	pFieldValidation      = param{name: "fieldValidation", in: "query", typ: "string", desc: "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered."}
	pForce                = param{name: "force", in: "query", typ: "boolean", desc: "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests."}
	pAllowWatchBookmarks  = param{name: "allowWatchBookmarks", in: "query", typ: "boolean", desc: "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored."}
	pContinue             = param{name: "continue", in: "query", typ: "string", desc: "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token. If the client needs a consistent list, it must restart their list without the continue field. Otherwise, the client may send another list request with the token received with the 410 error, the server will respond with a list starting from the next key, but from the latest snapshot, which is inconsistent from the previous list results - objects that are created, modified, or deleted after the first list request will be included in the response, as long as their keys are after the \"next key\".\n\nThis field is not supported when watch is true. Clients may start a watch from the last resourceVersion value returned by the server and not miss any modifications."}
	pFieldSelector        = param{name: "fieldSelector", in: "query", typ: "string", desc: "A selector to restrict the list of returned objects by their fields. Defaults to everything."}
	pLabelSelector        = param{name: "labelSelector", in: "query", typ: "string", desc: "A selector to restrict the list of returned objects by their labels. Defaults to everything."}
	pLimit                = param{name: "limit", in: "query", typ: "integer", desc: "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to zero items) in the event all requested objects are filtered out and clients should only use the presence of the continue field to determine whether more results are available. Servers may choose not to support the limit argument and will return all of the available results. If limit is specified and the continue field is empty, clients may assume that no more results are available. This field is not supported if watch is true.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a single list call without a limit - that is, no objects created, modified, or deleted after the first request is issued will be included in any subsequent continued requests. This is sometimes referred to as a consistent snapshot, and ensures that a client that is using limit to receive smaller chunks of a very large result can ensure they see all possible objects. If objects are updated during a chunked list the version of the object that was present at the time the first list result was calculated is returned."}
	pResourceVersion      = param{name: "resourceVersion", in: "query", typ: "string", desc: "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"}
	pResourceVersionMatch = param{name: "resourceVersionMatch", in: "query", typ: "string", desc: "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"}
	pSendInitialEvents    = param{name: "sendInitialEvents", in: "query", typ: "boolean", desc: "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event  will be sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with `\"k8s.io/initial-events-end\": \"true\"` annotation. Afterwards, the watch stream will proceed as usual, sending watch events corresponding to changes (subsequent to the RV) to objects watched."}
	pTimeoutSeconds       = param{name: "timeoutSeconds", in: "query", typ: "integer", desc: "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity."}
	pWatch                = param{name: "watch", in: "query", typ: "boolean", desc: "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion."}
	pGracePeriodSeconds   = param{name: "gracePeriodSeconds", in: "query", typ: "integer", desc: "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately."}
	pOrphanDependents     = param{name: "orphanDependents", in: "query", typ: "boolean", desc: "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both."}
	pPropagationPolicy    = param{name: "propagationPolicy", in: "query", typ: "string", desc: "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground."}
	pNamespace            = param{name: "namespace", in: "path", typ: "string", required: true, desc: "object name and auth scope, such as for teams and projects"}

	listParams             = []param{pAllowWatchBookmarks, pContinue, pFieldSelector, pLabelSelector, pLimit, pResourceVersion, pResourceVersionMatch, pSendInitialEvents, pTimeoutSeconds, pWatch}
	writeParams            = []param{pDryRun, pFieldManager, pFieldValidation}
	patchParams            = []param{pDryRun, pFieldManagerPatch, pFieldValidation, pForce}
	deleteParams           = []param{pDryRun, pGracePeriodSeconds, pOrphanDependents, pPropagationPolicy}
	deleteCollectionParams = []param{pContinue, pDryRun, pFieldSelector, pGracePeriodSeconds, pLabelSelector, pLimit, pOrphanDependents, pPropagationPolicy, pResourceVersion, pResourceVersionMatch, pSendInitialEvents, pTimeoutSeconds}
)

// patchTypes are the PATCH content types; strategic merge only applies to
// kinds with Go types.
var (
	patchTypes       = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"}
	customPatchTypes = []string{"application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"}
)

func typeSchema[T any]() schemaFunc {
	return func(g *generator) object { return g.schemaFor(reflect.TypeFor[T]()) }
}

// objectSchema returns the schema of obj (a typed object or an unstructured
// custom kind) and marks it with gvk.
func objectSchema(obj runtime.Object, gvk schema.GroupVersionKind, listKind string, isList bool, custom map[string]any) schemaFunc {
	return func(g *generator) object {
		switch obj.(type) {
		case *unstructured.Unstructured, *unstructured.UnstructuredList:
			item, list := g.unstructuredSchemas(gvk, listKind, custom)
			if isList {
				return g.ref(list)
			}
			return g.ref(item)
		}
		t := reflect.TypeOf(obj)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		s := g.schemaFor(t)
		name := definitionName(t)
		if isList {
			g.addGVK(name, gvk.GroupVersion().WithKind(listKind))
		} else {
			g.addGVK(name, gvk)
		}
		return s
	}
}

// groupVersionPath is the URL prefix of gv ("api/v1", "apis/apps/v1"),
// which is also its /openapi/v3/ document path.
func groupVersionPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// opGroupVersion is upstream's group-version part of operation ids and tags:
// "" -> Core, "coordination.k8s.io" -> Coordination, "stable.example.com"
// -> StableExampleCom; version v1beta1 -> V1beta1.
func opGroupVersion(gv schema.GroupVersion) (id, tag string) {
	group := strings.TrimSuffix(gv.Group, ".k8s.io")
	if group == "" {
		group = "core"
	}
	var b strings.Builder
	for _, part := range strings.FieldsFunc(group, func(r rune) bool { return r == '.' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	tagGroup := strings.NewReplacer(".", "_", "-", "_").Replace(group)
	return b.String() + strings.ToUpper(gv.Version[:1]) + gv.Version[1:], tagGroup + "_" + gv.Version
}

// subresourceSchema is the body of a subresource and the kind it carries.
func subresourceSchema(r Resource, sub string) (schemaFunc, schema.GroupVersionKind, error) {
	gvk := schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
	switch sub {
	case "status":
		return objectSchema(r.Object, gvk, r.ListKind, false, r.Schema), gvk, nil
	case "scale":
		sgvk := autoscalingv1.SchemeGroupVersion.WithKind("Scale")
		return objectSchema(&autoscalingv1.Scale{}, sgvk, "", false, nil), sgvk, nil
	case "binding":
		bgvk := corev1.SchemeGroupVersion.WithKind("Binding")
		return objectSchema(&corev1.Binding{}, bgvk, "", false, nil), bgvk, nil
	case "eviction":
		egvk := policyv1.SchemeGroupVersion.WithKind("Eviction")
		return objectSchema(&policyv1.Eviction{}, egvk, "", false, nil), egvk, nil
	case "approval", "finalize", "ephemeralcontainers", "resize":
		// Writes of part of the object, in the object's own shape.
		return objectSchema(r.Object, gvk, r.ListKind, false, r.Schema), gvk, nil
	case "token":
		tgvk := authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")
		return objectSchema(&authenticationv1.TokenRequest{}, tgvk, "", false, nil), tgvk, nil
	}
	return nil, gvk, fmt.Errorf("openapi: %s: unsupported subresource %q (want status, scale, binding, eviction, approval, finalize, ephemeralcontainers, resize or token)", r.Plural, sub)
}

// resourcePaths adds the paths of r to paths, keyed by URL path.
func resourcePaths(paths map[string]*pathItem, r Resource) error {
	gv := schema.GroupVersion{Group: r.Group, Version: r.Version}
	gvk := gv.WithKind(r.Kind)
	ro := &resourceOps{paths: paths, r: r, gv: gv, gvk: gvk, prefix: "/" + groupVersionPath(gv), nsParams: []param{},
		kindSchema: objectSchema(r.Object, gvk, r.ListKind, false, r.Schema), pt: patchTypes}
	ro.gvID, ro.tag = opGroupVersion(gv)
	if r.Namespaced {
		ro.ns, ro.nsPrefix, ro.nsParams = "Namespaced", "/namespaces/{namespace}", []param{pNamespace}
	}
	ro.collection = ro.prefix + ro.nsPrefix + "/" + r.Plural
	ro.item = ro.collection + "/{name}"
	ro.itemParams = append([]param{{name: "name", in: "path", typ: "string", required: true, desc: "name of the " + r.Kind}}, ro.nsParams...)
	if _, custom := r.Object.(*unstructured.Unstructured); custom {
		ro.pt = customPatchTypes
	}
	ro.collectionOps()
	ro.itemOps()
	ro.watchOps()
	for _, sub := range r.Subresources {
		if err := ro.subresourceOps(sub); err != nil {
			return err
		}
	}
	return nil
}

// resourceOps adds the operations of one resource to paths.
type resourceOps struct {
	paths map[string]*pathItem
	r     Resource
	gv    schema.GroupVersion
	gvk   schema.GroupVersionKind
	gvID  string // the group-version part of operation ids
	tag   string
	// prefix is the group-version's path; ns is "Namespaced" in the ids of a namespaced
	// resource's operations, nsPrefix its path part, nsParams its parameter.
	prefix, ns, nsPrefix string
	nsParams             []param
	collection, item     string
	itemParams           []param
	kindSchema           schemaFunc
	pt                   []string // the patch types accepted
}

func (ro *resourceOps) has(verb string) bool { return slices.Contains(ro.r.Verbs, verb) }

func (ro *resourceOps) add(path string, params []param, op operation) {
	pi := ro.paths[path]
	if pi == nil {
		pi = &pathItem{params: append(slices.Clone(params), pPretty)}
		ro.paths[path] = pi
	}
	op.tag = ro.tag
	pi.ops = append(pi.ops, op)
}

func okResponses(s schemaFunc) []response {
	return []response{{200, "OK", s}, {401, "Unauthorized", nil}}
}

// collectionOps adds list, create and deletecollection.
func (ro *resourceOps) collectionOps() {
	r, gvID, ns, gvk := ro.r, ro.gvID, ro.ns, ro.gvk
	if ro.has("list") {
		listSchema := objectSchema(r.List, gvk, r.ListKind, true, r.Schema)
		ro.add(ro.collection, ro.nsParams, operation{method: "get", id: "list" + gvID + ns + r.Kind, desc: "list or watch objects of kind " + r.Kind,
			action: "list", gvk: &gvk, query: listParams, consumes: anyType, produces: jsonYAMLWatch, resps: okResponses(listSchema)})
		if r.Namespaced {
			ro.add(ro.prefix+"/"+r.Plural, nil, operation{method: "get", id: "list" + gvID + r.Kind + "ForAllNamespaces", desc: "list or watch objects of kind " + r.Kind,
				action: "list", gvk: &gvk, query: listParams, consumes: anyType, produces: jsonYAMLWatch, resps: okResponses(listSchema)})
		}
	}
	if ro.has("create") {
		ro.add(ro.collection, ro.nsParams, operation{method: "post", id: "create" + gvID + ns + r.Kind, desc: "create a " + r.Kind,
			action: "post", gvk: &gvk, query: writeParams, body: ro.kindSchema, consumes: anyType, produces: jsonYAML,
			resps: []response{{200, "OK", ro.kindSchema}, {201, "Created", ro.kindSchema}, {202, "Accepted", ro.kindSchema}, {401, "Unauthorized", nil}}})
	}
	if ro.has("deletecollection") {
		ro.add(ro.collection, ro.nsParams, operation{method: "delete", id: "delete" + gvID + "Collection" + ns + r.Kind, desc: "delete collection of " + r.Kind,
			action: "deletecollection", gvk: &gvk, query: deleteCollectionParams, body: typeSchema[metav1.DeleteOptions](), consumes: anyType, produces: jsonYAML,
			resps: okResponses(typeSchema[metav1.Status]())})
	}
}

// itemOps adds get, update (put), patch and delete of one object.
func (ro *resourceOps) itemOps() {
	r, gvID, ns, gvk, kindSchema := ro.r, ro.gvID, ro.ns, ro.gvk, ro.kindSchema
	if ro.has("get") {
		ro.add(ro.item, ro.itemParams, operation{method: "get", id: "read" + gvID + ns + r.Kind, desc: "read the specified " + r.Kind,
			action: "get", gvk: &gvk, consumes: anyType, produces: jsonYAML, resps: okResponses(kindSchema)})
	}
	if ro.has("update") {
		ro.add(ro.item, ro.itemParams, operation{method: "put", id: "replace" + gvID + ns + r.Kind, desc: "replace the specified " + r.Kind,
			action: "put", gvk: &gvk, query: writeParams, body: kindSchema, consumes: anyType, produces: jsonYAML,
			resps: []response{{200, "OK", kindSchema}, {201, "Created", kindSchema}, {401, "Unauthorized", nil}}})
	}
	if ro.has("patch") {
		ro.add(ro.item, ro.itemParams, operation{method: "patch", id: "patch" + gvID + ns + r.Kind, desc: "partially update the specified " + r.Kind,
			action: "patch", gvk: &gvk, query: patchParams, body: typeSchema[metav1.Patch](), consumes: ro.pt, produces: jsonYAML,
			resps: []response{{200, "OK", kindSchema}, {201, "Created", kindSchema}, {401, "Unauthorized", nil}}})
	}
	if ro.has("delete") {
		ro.add(ro.item, ro.itemParams, operation{method: "delete", id: "delete" + gvID + ns + r.Kind, desc: "delete a " + r.Kind,
			action: "delete", gvk: &gvk, query: deleteParams, body: typeSchema[metav1.DeleteOptions](), consumes: anyType, produces: jsonYAML,
			resps: []response{{200, "OK", kindSchema}, {202, "Accepted", kindSchema}, {401, "Unauthorized", nil}}})
	}
}

// watchOps adds the deprecated /watch paths of one object and of lists.
func (ro *resourceOps) watchOps() {
	if !ro.has("watch") {
		return
	}
	r, gvID, ns, gvk, nsPrefix := ro.r, ro.gvID, ro.ns, ro.gvk, ro.nsPrefix
	watchEvent := typeSchema[metav1.WatchEvent]()
	watchPrefix := "/" + groupVersionPath(ro.gv) + "/watch"
	ro.add(watchPrefix+nsPrefix+"/"+r.Plural+"/{name}", ro.itemParams, operation{method: "get", id: "watch" + gvID + ns + r.Kind,
		desc:   "watch changes to an object of kind " + r.Kind + ". deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter.",
		action: "watch", gvk: &gvk, query: listParams, consumes: anyType, produces: jsonYAMLWatch, resps: okResponses(watchEvent)})
	ro.add(watchPrefix+nsPrefix+"/"+r.Plural, ro.nsParams, operation{method: "get", id: "watch" + gvID + ns + r.Kind + "List",
		desc:   "watch individual changes to a list of " + r.Kind + ". deprecated: use the 'watch' parameter with a list operation instead.",
		action: "watchlist", gvk: &gvk, query: listParams, consumes: anyType, produces: jsonYAMLWatch, resps: okResponses(watchEvent)})
	if r.Namespaced {
		ro.add(watchPrefix+"/"+r.Plural, nil, operation{method: "get", id: "watch" + gvID + r.Kind + "ListForAllNamespaces",
			desc:   "watch individual changes to a list of " + r.Kind + ". deprecated: use the 'watch' parameter with a list operation instead.",
			action: "watchlist", gvk: &gvk, query: listParams, consumes: anyType, produces: jsonYAMLWatch, resps: okResponses(watchEvent)})
	}
}

// subresourceOps adds the operations of one subresource: create for those whose body is an
// object of their own (binding, eviction, token), otherwise get, update and patch as the
// resource has them.
func (ro *resourceOps) subresourceOps(sub string) error {
	r, gvID, ns, itemParams := ro.r, ro.gvID, ro.ns, ro.itemParams
	body, sgvk, err := subresourceSchema(r, sub)
	if err != nil {
		return err
	}
	path := ro.item + "/" + sub
	title := strings.ToUpper(sub[:1]) + sub[1:]
	if sub == "binding" || sub == "eviction" || sub == "token" {
		ro.add(path, itemParams, operation{method: "post", id: "create" + gvID + ns + r.Kind + title, desc: "create " + sub + " of a " + r.Kind,
			action: "post", gvk: &sgvk, query: writeParams, body: body, consumes: anyType, produces: jsonYAML,
			resps: []response{{200, "OK", body}, {201, "Created", body}, {202, "Accepted", body}, {401, "Unauthorized", nil}}})
		return nil
	}
	if ro.has("get") {
		ro.add(path, itemParams, operation{method: "get", id: "read" + gvID + ns + r.Kind + title, desc: "read " + sub + " of the specified " + r.Kind,
			action: "get", gvk: &sgvk, consumes: anyType, produces: jsonYAML, resps: okResponses(body)})
	}
	if ro.has("update") {
		ro.add(path, itemParams, operation{method: "put", id: "replace" + gvID + ns + r.Kind + title, desc: "replace " + sub + " of the specified " + r.Kind,
			action: "put", gvk: &sgvk, query: writeParams, body: body, consumes: anyType, produces: jsonYAML,
			resps: []response{{200, "OK", body}, {201, "Created", body}, {401, "Unauthorized", nil}}})
	}
	if ro.has("patch") {
		ro.add(path, itemParams, operation{method: "patch", id: "patch" + gvID + ns + r.Kind + title, desc: "partially update " + sub + " of the specified " + r.Kind,
			action: "patch", gvk: &sgvk, query: patchParams, body: typeSchema[metav1.Patch](), consumes: ro.pt, produces: jsonYAML,
			resps: []response{{200, "OK", body}, {201, "Created", body}, {401, "Unauthorized", nil}}})
	}
	return nil
}

// resourcesPath is the discovery path of a group-version ("/api/v1/").
func resourcesPath(paths map[string]*pathItem, gv schema.GroupVersion) {
	gvID, tag := opGroupVersion(gv)
	paths["/"+groupVersionPath(gv)+"/"] = &pathItem{ops: []operation{{
		method: "get", id: "get" + gvID + "APIResources", desc: "get available resources", tag: tag,
		consumes: jsonYAML, produces: jsonYAML, resps: []response{{200, "OK", typeSchema[metav1.APIResourceList]()}, {401, "Unauthorized", nil}},
	}}}
}
