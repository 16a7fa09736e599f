// Package openapi builds the OpenAPI v2 and v3 documents an apiserver
// publishes at /openapi/v2 and /openapi/v3, by reflection over the
// k8s.io/api Go types: definition names, descriptions (SwaggerDoc), strategic
// merge patch metadata and x-kubernetes-* extensions as upstream writes them,
// so that kubectl's validation, apply, edit and explain work against it.
package openapi

import (
	"crypto/sha512"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource describes one served resource.
type Resource struct {
	// Group ("" for the core group), Version, Kind and ListKind of the resource.
	Group, Version, Kind, ListKind string
	// Plural is the resource name in URLs ("pods").
	Plural string
	// Namespaced resources live under /namespaces/{namespace}/.
	Namespaced bool
	// Verbs served: get list create update patch delete deletecollection watch.
	Verbs []string
	// Subresources served: "status", "scale" (autoscaling/v1 Scale) and
	// "binding" (core/v1 Binding, create only) and "token" (authentication/v1
	// TokenRequest, create only).
	Subresources []string
	// Object and List are zero values of the Go types, e.g. &corev1.Pod{}
	// and &corev1.PodList{}. *unstructured.Unstructured and
	// *unstructured.UnstructuredList describe a custom kind whose content is
	// not known: typed metadata, everything else
	// x-kubernetes-preserve-unknown-fields.
	Object, List runtime.Object
	// Schema is the structural schema of a custom kind (a CRD version's
	// openAPIV3Schema, decoded from JSON), published in the v3 document so
	// that kubectl explain shows its fields. Only used with unstructured
	// Object; nil means "any content".
	Schema map[string]any
}

// GroupVersion returns the resource's group-version.
func (r Resource) GroupVersion() schema.GroupVersion {
	return schema.GroupVersion{Group: r.Group, Version: r.Version}
}

func (r Resource) validate() error {
	var errs []error
	if r.Version == "" || r.Kind == "" || r.Plural == "" {
		errs = append(errs, errors.New("version, kind and plural are required"))
	}
	if r.Object == nil {
		errs = append(errs, errors.New("object is required"))
	}
	if r.List == nil && (slices.Contains(r.Verbs, "list") || slices.Contains(r.Verbs, "watch")) {
		errs = append(errs, errors.New("list is required for the list and watch verbs"))
	}
	if r.List != nil && r.ListKind == "" {
		errs = append(errs, errors.New("listKind is required with list"))
	}
	if _, custom := r.Object.(*unstructured.Unstructured); r.Schema != nil && !custom {
		errs = append(errs, errors.New("schema is only for unstructured custom kinds"))
	}
	for _, v := range r.Verbs {
		switch v {
		case "get", "list", "create", "update", "patch", "delete", "deletecollection", "watch":
		default:
			errs = append(errs, fmt.Errorf("unknown verb %q", v))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("openapi: resource %q in %q: %w", r.Plural, r.GroupVersion(), err)
	}
	return nil
}

// Spec holds the documents of a set of resources. It is immutable; build a new one with
// New when the set of resources changes (and swap it into a Service). The documents are
// rendered once, on first use; the v3 documents of built-in group-versions are shared by every Spec that
// serves the same resources there, so a change of custom resources renders theirs only.
type Spec struct {
	all  map[string]*pathItem            // v2: every path
	byGV map[string]map[string]*pathItem // v3: the paths of each group-version
	keys map[string]string               // cache key of each built-in group-version's v3 document

	once   sync.Once
	err    error
	v2     []byte
	v2Hash string
	v3     map[string]document // by group-version path, "api/v1"
	v3Root []byte

	v2ProtoOnce sync.Once
	v2Proto     []byte
	v2ProtoErr  error
}

type document struct {
	data []byte
	hash string
}

// v3Cache holds the rendered v3 documents of built-in group-versions by their key.
var v3Cache sync.Map

// New describes the documents for rs. Resources of the same group-version share one v3
// document.
func New(rs []Resource) (*Spec, error) {
	s := &Spec{all: map[string]*pathItem{}, byGV: map[string]map[string]*pathItem{}, keys: map[string]string{}}
	parts := map[string][]string{}
	custom := map[string]bool{}
	for _, r := range rs {
		if err := r.validate(); err != nil {
			return nil, err
		}
		gvPath := groupVersionPath(r.GroupVersion())
		if s.byGV[gvPath] == nil {
			s.byGV[gvPath] = map[string]*pathItem{}
			resourcesPath(s.byGV[gvPath], r.GroupVersion())
			resourcesPath(s.all, r.GroupVersion())
		}
		if err := resourcePaths(s.byGV[gvPath], r); err != nil {
			return nil, err
		}
		if err := resourcePaths(s.all, r); err != nil {
			return nil, err
		}
		if _, ok := r.Object.(*unstructured.Unstructured); ok {
			custom[gvPath] = true
		}
		parts[gvPath] = append(parts[gvPath], fmt.Sprintf("%s|%s|%s|%s|%v|%v|%v|%T|%T", r.Kind, r.ListKind, r.Plural, r.Group, r.Namespaced, r.Verbs, r.Subresources, r.Object, r.List))
	}
	for gvPath, p := range parts {
		if !custom[gvPath] {
			slices.Sort(p)
			s.keys[gvPath] = gvPath + "\n" + strings.Join(p, "\n")
		}
	}
	return s, nil
}

// Render renders the documents if that is not done yet.
func (s *Spec) Render() error {
	s.once.Do(func() { s.err = s.render() })
	return s.err
}

func (s *Spec) render() error {
	v2, err := json.Marshal(renderV2(s.all))
	if err != nil {
		return fmt.Errorf("openapi: encode v2: %w", err)
	}
	v3 := map[string]document{}
	root := map[string]any{}
	for _, gvPath := range slices.Sorted(maps.Keys(s.byGV)) {
		key := s.keys[gvPath]
		if d, ok := v3Cache.Load(key); ok && key != "" {
			v3[gvPath] = d.(document)
		} else {
			data, err := json.Marshal(renderV3(s.byGV[gvPath]))
			if err != nil {
				return fmt.Errorf("openapi: encode v3 %s: %w", gvPath, err)
			}
			v3[gvPath] = document{data: data, hash: hash(data)}
			if key != "" {
				v3Cache.Store(key, v3[gvPath])
			}
		}
		root[gvPath] = map[string]string{"serverRelativeURL": "/openapi/v3/" + gvPath + "?hash=" + v3[gvPath].hash}
	}
	v3Root, err := json.Marshal(map[string]any{"paths": root})
	if err != nil {
		return fmt.Errorf("openapi: encode v3 root: %w", err)
	}
	s.v2, s.v2Hash, s.v3, s.v3Root = v2, hash(v2), v3, v3Root
	return nil
}

// hash is upstream's document hash: the upper-case hex SHA-512, used both as
// ETag and as the ?hash= of the v3 discovery document.
func hash(data []byte) string {
	return fmt.Sprintf("%X", sha512.Sum512(data))
}

// V2 returns the Swagger 2.0 document (JSON); nil if it could not be rendered (Render
// says why).
func (s *Spec) V2() []byte {
	_ = s.Render()
	return s.v2
}

// V2Proto returns the v2 document as the gnostic protobuf that kubectl and
// client-go's discovery client ask for. It is computed on first use.
func (s *Spec) V2Proto() ([]byte, error) {
	if err := s.Render(); err != nil {
		return nil, err
	}
	s.v2ProtoOnce.Do(func() { s.v2Proto, s.v2ProtoErr = toProto(s.v2) })
	return s.v2Proto, s.v2ProtoErr
}

// V3Root returns the /openapi/v3 discovery document: one entry per
// group-version with a serverRelativeURL that carries the document's hash.
func (s *Spec) V3Root() []byte {
	_ = s.Render()
	return s.v3Root
}

// V3 returns the OpenAPI 3.0 document of one group-version, by its path
// ("api/v1", "apis/apps/v1").
func (s *Spec) V3(path string) ([]byte, bool) {
	if s.Render() != nil {
		return nil, false
	}
	d, ok := s.v3[path]
	return d.data, ok
}

// V3Paths lists the group-version paths that have a v3 document.
func (s *Spec) V3Paths() []string {
	return slices.Sorted(maps.Keys(s.byGV))
}
