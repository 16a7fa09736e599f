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

// Spec holds the rendered documents. It is immutable; build a new one with
// New when the set of resources changes (and swap it into a Service).
type Spec struct {
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

// New renders the documents for rs. Resources of the same group-version
// share one v3 document.
func New(rs []Resource) (*Spec, error) {
	all := map[string]*pathItem{}
	byGV := map[string]map[string]*pathItem{}
	for _, r := range rs {
		if err := r.validate(); err != nil {
			return nil, err
		}
		gvPath := groupVersionPath(r.GroupVersion())
		if byGV[gvPath] == nil {
			byGV[gvPath] = map[string]*pathItem{}
			resourcesPath(byGV[gvPath], r.GroupVersion())
			resourcesPath(all, r.GroupVersion())
		}
		if err := resourcePaths(byGV[gvPath], r); err != nil {
			return nil, err
		}
		if err := resourcePaths(all, r); err != nil {
			return nil, err
		}
	}

	s := &Spec{v3: map[string]document{}}
	var err error
	if s.v2, err = json.Marshal(renderV2(all)); err != nil {
		return nil, fmt.Errorf("openapi: encode v2: %w", err)
	}
	s.v2Hash = hash(s.v2)
	root := map[string]any{}
	for _, gvPath := range slices.Sorted(maps.Keys(byGV)) {
		data, err := json.Marshal(renderV3(byGV[gvPath]))
		if err != nil {
			return nil, fmt.Errorf("openapi: encode v3 %s: %w", gvPath, err)
		}
		d := document{data: data, hash: hash(data)}
		s.v3[gvPath] = d
		root[gvPath] = map[string]string{"serverRelativeURL": "/openapi/v3/" + gvPath + "?hash=" + d.hash}
	}
	if s.v3Root, err = json.Marshal(map[string]any{"paths": root}); err != nil {
		return nil, fmt.Errorf("openapi: encode v3 root: %w", err)
	}
	return s, nil
}

// hash is upstream's document hash: the upper-case hex SHA-512, used both as
// ETag and as the ?hash= of the v3 discovery document.
func hash(data []byte) string {
	return fmt.Sprintf("%X", sha512.Sum512(data))
}

// V2 returns the Swagger 2.0 document (JSON).
func (s *Spec) V2() []byte { return s.v2 }

// V2Proto returns the v2 document as the gnostic protobuf that kubectl and
// client-go's discovery client ask for. It is computed on first use.
func (s *Spec) V2Proto() ([]byte, error) {
	s.v2ProtoOnce.Do(func() { s.v2Proto, s.v2ProtoErr = toProto(s.v2) })
	return s.v2Proto, s.v2ProtoErr
}

// V3Root returns the /openapi/v3 discovery document: one entry per
// group-version with a serverRelativeURL that carries the document's hash.
func (s *Spec) V3Root() []byte { return s.v3Root }

// V3 returns the OpenAPI 3.0 document of one group-version, by its path
// ("api/v1", "apis/apps/v1").
func (s *Spec) V3(path string) ([]byte, bool) {
	d, ok := s.v3[path]
	return d.data, ok
}

// V3Paths lists the group-version paths that have a v3 document.
func (s *Spec) V3Paths() []string {
	return slices.Sorted(maps.Keys(s.v3))
}
